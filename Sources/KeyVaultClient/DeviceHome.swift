import Foundation
import KeyVaultCrypto
import KeyVaultModel

/// What a device remembers between commands (docs/formats/device-home.md): where its
/// account lives, the newest chain head it has seen, its keys and the key
/// generations it has opened. Public fields in the clear; secrets optionally
/// sealed under a local passphrase.
public struct DeviceRecord: Sendable {
    public var server: String
    public var account: AccountID
    public var name: String
    /// The newest chain head this device has verified, and its sequence.
    public var head: String
    public var sequence: UInt64
    /// False while a link request or enrolment is under way.
    public var enrolled: Bool
    public var keys: DeviceKeys
    /// Cached master key generations.
    public var masterKeys: [UInt32: SymmetricKey]
    /// Cached member key generations.
    public var memberKeys: [MemberID: [UInt32: SymmetricKey]]
    /// The code of the link request this not-yet-enrolled device is waiting on, so a
    /// second `device link` can finish a request approved while nobody watched.
    public var linkCode: String?

    public var device: DeviceID { keys.id }

    public init(server: String, account: AccountID, name: String, head: String, sequence: UInt64, enrolled: Bool,
                linkCode: String? = nil, keys: DeviceKeys, masterKeys: [UInt32: SymmetricKey] = [:], memberKeys: [MemberID: [UInt32: SymmetricKey]] = [:]) {
        self.server = server
        self.account = account
        self.name = name
        self.head = head
        self.sequence = sequence
        self.enrolled = enrolled
        self.linkCode = linkCode
        self.keys = keys
        self.masterKeys = masterKeys
        self.memberKeys = memberKeys
    }
}

/// The device home directory: created 0700, its file 0600, written atomically
/// (temporary file, fsync, rename), one writer at a time (an exclusive lock).
public final class DeviceHome: @unchecked Sendable {
    public let directory: String
    var file: String { directory + "/device.json" }
    private var lockDescriptor: Int32 = -1
    /// The passphrase the secrets are sealed under, when the home is sealed.
    public var passphrase: SecureBytes?
    /// Asked for the passphrase of a sealed home.
    public var passphraseProvider: (@Sendable () throws -> SecureBytes)?

    /// `--home`, else `KEYCTL_HOME`, else `~/.keyctl`.
    public static func defaultDirectory(_ option: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let option, !option.isEmpty { return option }
        if let env = environment["KEYCTL_HOME"], !env.isEmpty { return env }
        return (environment["HOME"] ?? NSHomeDirectory()) + "/.keyctl"
    }

    public init(directory: String) {
        self.directory = directory
    }

    deinit { if lockDescriptor >= 0 { close(lockDescriptor) } }

    public var exists: Bool { FileManager.default.fileExists(atPath: file) }

    /// Takes the home's lock so that two commands on one home never interleave.
    public func lock() throws {
        guard lockDescriptor < 0 else { return }
        try ensureDirectory()
        let fd = open(directory + "/lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw homeError("cannot open the lock file in \(directory): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw ClientError(.home, "another keyctl command is using \(directory)", hint: "wait for it to finish, then try again")
        }
        lockDescriptor = fd
    }

    /// Releases the lock (it is also released when the home is freed or the process ends).
    public func unlock() {
        if lockDescriptor >= 0 { close(lockDescriptor) }
        lockDescriptor = -1
    }

    func ensureDirectory() throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw homeError("\(directory) exists and is not a directory") }
            return
        }
        guard mkdir(directory, 0o700) == 0 else {
            throw homeError("cannot create the device home \(directory): \(String(cString: strerror(errno)))")
        }
    }

    func homeError(_ message: String) -> ClientError {
        ClientError(.home, message, hint: "choose another directory with --home or KEYCTL_HOME")
    }

    // MARK: Load

    public func load() throws -> DeviceRecord {
        guard let data = FileManager.default.contents(atPath: file) else { throw notFound }
        var bytes = [UInt8](data)
        defer { secureWipe(&bytes) }
        let stored: StoredHome
        do {
            stored = try JSONDecoder().decode(StoredHome.self, from: Data(bytes))
        } catch {
            throw corrupt("it is not a KeyVault device file (\(error))")
        }
        guard stored.format == 1 else { throw corrupt("format \(stored.format) is not one this keyctl reads (1)") }
        var secretBytes: [UInt8]
        if let sealed = stored.sealed {
            let passphrase = try self.passphrase ?? passphraseProvider?() ?? {
                throw ClientError(.home, "the keys in \(directory) are sealed under a passphrase",
                                  hint: "run keyctl on a terminal to be asked for it, or set KEYCTL_PASSPHRASE_FILE")
            }()
            secretBytes = try sealed.open(passphrase: passphrase)
            self.passphrase = passphrase
        } else if let secrets = stored.secrets {
            secretBytes = Array(try JSONEncoder().encode(secrets))
        } else {
            throw corrupt("it has neither keys nor sealed keys")
        }
        defer { secureWipe(&secretBytes) }
        guard let secrets = try? JSONDecoder().decode(StoredSecrets.self, from: Data(secretBytes)),
              let account = AccountID(rawValue: stored.account) else {
            throw corrupt("its keys or account id do not parse")
        }
        do {
            return DeviceRecord(server: stored.server, account: account, name: stored.name, head: stored.head,
                                sequence: stored.sequence, enrolled: stored.enrolled, linkCode: stored.linkCode,
                                keys: DeviceKeys(signing: try Ed25519.PrivateKey(seed: secrets.signingSeed.secure()),
                                                 agreement: try X25519.PrivateKey(rawRepresentation: secrets.boxKey.secure())),
                                masterKeys: try secrets.master.reduce(into: [:]) { out, entry in
                                    guard let g = UInt32(entry.key) else { throw ClientError(.home, "bad generation") }
                                    out[g] = try SymmetricKey(entry.value.secure())
                                },
                                memberKeys: try secrets.members.reduce(into: [:]) { out, entry in
                                    guard let id = MemberID(rawValue: entry.key) else { throw ClientError(.home, "bad member id") }
                                    out[id] = try entry.value.reduce(into: [:]) { keys, generation in
                                        guard let h = UInt32(generation.key) else { throw ClientError(.home, "bad generation") }
                                        keys[h] = try SymmetricKey(generation.value.secure())
                                    }
                                })
        } catch {
            throw corrupt("its keys are damaged (\(error))")
        }
    }

    /// The error for a home without a device: how to start one.
    public var notFound: ClientError {
        ClientError(.notInitialized, "there is no KeyVault device in \(directory)",
                    hint: "run `keyctl init --server URL --name NAME` for a new account, or `keyctl device enroll` / `keyctl device link` to join one; --home picks another directory")
    }

    func corrupt(_ why: String) -> ClientError {
        ClientError(.home, "the device file \(file) is damaged: \(why)",
                    hint: "restore it from a backup, or move it away and enroll this computer again (`keyctl device enroll` with the recovery code)")
    }

    // MARK: Save

    /// Writes the record atomically: a crash leaves the old file or the new one.
    public func save(_ record: DeviceRecord) throws {
        try ensureDirectory()
        let secrets = StoredSecrets(
            signingSeed: HexSecret(record.keys.signing.seed), boxKey: HexSecret(record.keys.agreement.rawRepresentation),
            master: Dictionary(uniqueKeysWithValues: record.masterKeys.map { (String($0.key), HexSecret($0.value.bytes)) }),
            members: Dictionary(uniqueKeysWithValues: record.memberKeys.map { member, keys in
                (member.rawValue, Dictionary(uniqueKeysWithValues: keys.map { (String($0.key), HexSecret($0.value.bytes)) }))
            }))
        var stored = StoredHome(format: 1, server: record.server, account: record.account.rawValue, device: record.device.rawValue,
                                name: record.name, head: record.head, sequence: record.sequence, enrolled: record.enrolled,
                                linkCode: record.linkCode)
        if let passphrase {
            var plain = Array(try JSONEncoder().encode(secrets))
            defer { secureWipe(&plain) }
            stored.sealed = try SealedSecrets.seal(plain, passphrase: passphrase)
        } else {
            stored.secrets = secrets
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        var bytes = Array(try encoder.encode(stored))
        defer { secureWipe(&bytes) }
        try writeAtomically(bytes)
    }

    func writeAtomically(_ bytes: [UInt8]) throws {
        let temporary = file + ".tmp"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw homeError("cannot write \(temporary): \(String(cString: strerror(errno)))") }
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let error = homeError("cannot write \(temporary): \(String(cString: strerror(errno)))")
                close(fd)
                unlink(temporary)
                throw error
            }
            offset += n
        }
        let synced = fsync(fd) == 0
        let closed = close(fd) == 0
        guard synced, closed else {
            unlink(temporary)
            throw homeError("cannot flush \(temporary) to disk")
        }
        guard rename(temporary, file) == 0 else {
            let error = homeError("cannot replace \(file): \(String(cString: strerror(errno)))")
            unlink(temporary)
            throw error
        }
        let dir = open(directory, O_RDONLY | O_CLOEXEC)
        if dir >= 0 { fsync(dir); close(dir) }
    }

    /// Removes the device file (after the account is deleted).
    public func remove() throws {
        unlink(file)
        unlink(file + ".tmp")
    }
}

/// A secret in the device file, as lowercase hex.
struct HexSecret: Codable {
    var hex: String
    init(_ hex: String) { self.hex = hex }
    init(_ bytes: SecureBytes) { hex = Hex.encode(bytes.unprotectedCopy()) }
    init(from decoder: any Decoder) throws { hex = try decoder.singleValueContainer().decode(String.self) }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(hex)
    }
    func secure() throws -> SecureBytes {
        var bytes = try Hex.decode(hex)
        return SecureBytes(wiping: &bytes)
    }
}

struct StoredSecrets: Codable {
    var signingSeed: HexSecret
    var boxKey: HexSecret
    var master: [String: HexSecret]
    var members: [String: [String: HexSecret]]
}

/// The secrets sealed under Argon2id(passphrase).
struct SealedSecrets: Codable {
    var salt: String
    var iterations: UInt32
    var memoryKiB: UInt32
    var envelope: String

    static let context = try! EnvelopeContext(purpose: "device-home")

    static func seal(_ plain: [UInt8], passphrase: SecureBytes) throws -> SealedSecrets {
        let salt = SystemRandom.bytes(count: Argon2id.saltByteCount)
        let parameters = Argon2id.Parameters.interactive
        let key = try SymmetricKey(Argon2id.deriveKey(from: passphrase, salt: salt, parameters: parameters, outputByteCount: 32))
        return SealedSecrets(salt: Hex.encode(salt), iterations: parameters.iterations, memoryKiB: parameters.memoryKiB,
                             envelope: try Envelope.seal(plain, under: key, generation: 1, context: context).base64)
    }

    func open(passphrase: SecureBytes) throws -> [UInt8] {
        let parameters: Argon2id.Parameters
        do {
            parameters = try Argon2id.Parameters(iterations: iterations, memoryKiB: memoryKiB)
        } catch let error as CryptoError {
            // Above the ceiling the file would cost unbounded time and memory to open; below the floor, it is too cheap to guess.
            throw ClientError(error.code == .parametersAboveCeiling ? .kdfAboveCeiling : .weakKDF,
                              "the device file's passphrase parameters are refused: \(error.message)",
                              hint: "this keyctl never writes such parameters: the file was changed by something else")
        }
        guard let salt = try? Hex.decode(self.salt), let envelope = try? Envelope(base64: self.envelope) else {
            throw ClientError(.home, "the sealed keys of the device file do not parse")
        }
        let key = try SymmetricKey(Argon2id.deriveKey(from: passphrase, salt: salt, parameters: parameters, outputByteCount: 32))
        guard let plain = try? envelope.open(using: key, context: Self.context) else {
            throw ClientError(.home, "that passphrase does not open this device's keys", hint: "type it again; it is case-sensitive",
                              kind: .rejected)
        }
        return plain.unprotectedCopy()
    }
}

struct StoredHome: Codable {
    var format: Int
    var server: String
    var account: String
    var device: String
    var name: String
    var head: String
    var sequence: UInt64
    var enrolled: Bool
    var linkCode: String?
    var secrets: StoredSecrets?
    var sealed: SealedSecrets?
}
