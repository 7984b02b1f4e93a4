import Foundation
import KeyVaultCrypto
import KeyVaultModel

/// What a device remembers between commands (docs/formats/device-home.md): where its
/// account lives, the newest chain head it has seen, its keys and the key
/// generations it has opened. Public fields in the clear; secrets optionally
/// sealed under a local passphrase.
package struct DeviceRecord: Sendable {
    package var server: String
    package var account: AccountID
    package var name: String
    /// The newest chain head this device has verified, and its sequence.
    package var head: String
    package var sequence: UInt64
    /// False while a link request or enrollment is under way.
    package var enrolled: Bool
    package var keys: DeviceKeys
    /// Cached master key generations.
    package var masterKeys: [UInt32: SymmetricKey]
    /// Cached member key generations.
    package var memberKeys: [MemberID: [UInt32: SymmetricKey]]
    /// The code of the link request this not-yet-enrolled device is waiting on, so a
    /// second `device link` can finish a request approved while nobody watched.
    package var linkCode: String?
    /// The device that answered that request, once this one revealed its value: the
    /// digits it showed name it, and only a chain where it added this device is joined.
    package var linkApprover: DeviceID?
    /// The confirmation code (version 4) this device computed with that approver: the
    /// approver shows its own once it approved, and this device joins only when the
    /// person types one equal to this.
    package var linkConfirmation: String?
    /// The newest head this device verified of each contact's chain (a sharer's, a
    /// grantee's), so that a server cannot show it an older one unseen.
    package var seenChains: [AccountID: SeenHead] = [:]
    /// The account's chain as this device last verified it (public: the server holds
    /// it too), so that the device opens offline (``Vault/open(storage:transport:offline:progress:)``).
    package var chain: [ChainLink] = []
    /// The chain sequence up to which this device has told its person what other
    /// devices changed (``Vault/untoldEvents()``); nil until it first looked.
    package var noticed: UInt64?
    /// The hashes of the links this device built to append since `noticed` (at most
    /// the newest 256; one the server took whose answer was lost among them): a link
    /// signed with its key that is not one of these was made elsewhere, with a copy of it.
    package var written: [String] = []
    /// The server this device moved away from (``Vault/move(to:transport:)``): the only
    /// one whose copy of the account ``Vault/deleteAccount(on:server:)`` deletes.
    package var movedFrom: String?
    /// The instance (`GET /v1/server`) of the server this device uses, as it first saw it:
    /// a delete is signed for it, never for one a server names later (which could be another
    /// service's holding the account too, where the delete would be replayed).
    package var instance: String?

    package struct SeenHead: Sendable, Codable, Equatable {
        package var head: String
        package var sequence: UInt64
    }

    package var device: DeviceID { keys.id }

    package init(server: String, account: AccountID, name: String, head: String, sequence: UInt64, enrolled: Bool,
                linkCode: String? = nil, linkApprover: DeviceID? = nil, keys: DeviceKeys, masterKeys: [UInt32: SymmetricKey] = [:], memberKeys: [MemberID: [UInt32: SymmetricKey]] = [:]) {
        self.server = server
        self.account = account
        self.name = name
        self.head = head
        self.sequence = sequence
        self.enrolled = enrolled
        self.linkCode = linkCode
        self.linkApprover = linkApprover
        self.keys = keys
        self.masterKeys = masterKeys
        self.memberKeys = memberKeys
    }
}

/// The device record on top of a ``DeviceStorage``: encoded as the device document
/// (docs/formats/device-home.md), its secrets optionally sealed under a passphrase
/// (`passphrase:` of `Vault.create`, `enroll` and `link`; `keyctl --passphrase`).
package final class DeviceHome: Sendable {
    package let storage: any DeviceStorage
    private let sealing = Locked<Sealing>(Sealing())

    private struct Sealing {
        var passphrase: SecureBytes?
        var provider: (@Sendable () throws -> SecureBytes)?
        /// The key for `passphrase` at today's cost (Argon2id): the one the last open
        /// opened with (or a new one, when the file's cost was another), or a
        /// ``NewSealing``'s. The saves after it seal under it, with fresh nonces, instead
        /// of deriving again.
        var key: SealingKey?
    }

    /// The passphrase the secrets are sealed under, when the home is sealed.
    package var passphrase: SecureBytes? {
        get { sealing.withLock { $0.passphrase } }
        set { sealing.withLock { $0 = Sealing(passphrase: newValue, provider: $0.provider) } }
    }

    /// A passphrase with a new key for it (a new salt at today's cost).
    package struct NewSealing: Sendable {
        let passphrase: SecureBytes
        let key: SealingKey

        /// The key derived on a thread of its own (Argon2id, a fraction of a second),
        /// not on the caller's executor.
        package static func derive(_ passphrase: SecureBytes) async throws -> NewSealing {
            NewSealing(passphrase: passphrase, key: try await onThreadOfItsOwn { try SealingKey(passphrase: passphrase) })
        }
    }

    /// Seals the saves after this under `new` (nil: unsealed), with its key.
    package func seal(under new: NewSealing?) {
        sealing.withLock { $0 = Sealing(passphrase: new?.passphrase, provider: $0.provider, key: new?.key) }
    }

    /// The salt of the key the next save seals under, if one is kept (the tests).
    package var keptSalt: [UInt8]? { sealing.withLock { $0.key?.salt } }

    /// Asked for the passphrase of a sealed home.
    package var passphraseProvider: (@Sendable () throws -> SecureBytes)? {
        get { sealing.withLock { $0.provider } }
        set { sealing.withLock { $0.provider = newValue } }
    }

    package init(storage: any DeviceStorage) {
        self.storage = storage
    }

    /// A home in a directory (``FileDeviceStorage``).
    package convenience init(directory: String) {
        self.init(storage: FileDeviceStorage(directory: directory))
    }

    /// Where the device lives, for messages.
    package var directory: String { storage.location }

    /// Whether a device is stored. A storage that cannot be read throws: that is not "no device".
    package var exists: Bool {
        get throws {
            guard var document = try storage.read() else { return false }
            secureWipe(&document)
            return true
        }
    }

    /// The account the stored document names (in the clear, sealed or not), read without
    /// opening its secrets: nil when none is stored or it does not parse.
    package var storedAccount: AccountID? {
        guard var bytes = try? storage.read() else { return nil }
        defer { secureWipe(&bytes) }
        return (try? JSONDecoder().decode(StoredHome.self, from: Data(bytes))).flatMap { AccountID(rawValue: $0.account) }
    }

    /// Takes the storage's lock so that two processes never work on one device at once.
    package func lock() throws { try storage.lock() }

    /// Releases the lock (it is also released when the storage is freed or the process ends).
    package func unlock() { storage.unlock() }

    // MARK: Load

    /// ``load()`` on a thread of its own: reading the file, asking for a passphrase and
    /// deriving its key (Argon2id, a fraction of a second) hold no thread of the caller's.
    package func loadOnThreadOfItsOwn() async throws -> DeviceRecord {
        try await onThreadOfItsOwn { try self.load() }
    }

    package func load() throws -> DeviceRecord {
        guard var bytes = try storage.read() else { throw notFound }
        defer { secureWipe(&bytes) }
        let stored: StoredHome
        do {
            stored = try JSONDecoder().decode(StoredHome.self, from: Data(bytes))
        } catch {
            throw corrupt("it is not a KeyVault device file (\(error))")
        }
        guard stored.format == 1 else { throw corrupt("format \(stored.format) is not one this version reads (1)") }
        var secretBytes: [UInt8]
        if let sealed = stored.sealed {
            let passphrase = try self.passphrase ?? passphraseProvider?() ?? {
                throw KeyVaultError(.passphraseRequired, "the keys in \(directory) are sealed under a passphrase")
            }()
            let opened: SealingKey
            (secretBytes, opened) = try sealed.open(passphrase: passphrase)
            // A file at another cost than today's is sealed afresh at today's by its next
            // save: under a new key, derived here (off the caller's executor, as the open).
            let key = opened.parameters == SealingKey.parameters ? opened : try SealingKey(passphrase: passphrase)
            seal(under: NewSealing(passphrase: passphrase, key: key))
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
        var seen = [AccountID: DeviceRecord.SeenHead]()
        for (id, head) in stored.seenChains ?? [:] {
            guard let contact = AccountID(rawValue: id) else { throw corrupt("a seen chain's account id does not parse") }
            seen[contact] = head
        }
        do {
            var record = DeviceRecord(server: stored.server, account: account, name: stored.name, head: stored.head,
                                sequence: stored.sequence, enrolled: stored.enrolled, linkCode: stored.linkCode,
                                linkApprover: try stored.linkApprover.map {
                                    guard let id = DeviceID(rawValue: $0) else { throw corrupt("the link approver's id does not parse") }
                                    return id
                                },
                                keys: DeviceKeys(signing: try Ed25519.PrivateKey(seed: secrets.signingSeed.secure()),
                                                 boxKey: try X25519.PrivateKey(rawRepresentation: secrets.boxKey.secure())),
                                masterKeys: try secrets.master.reduce(into: [:]) { out, entry in
                                    guard let g = UInt32(entry.key) else { throw KeyVaultError(.home, "bad generation") }
                                    out[g] = try SymmetricKey(entry.value.secure())
                                },
                                memberKeys: try secrets.members.reduce(into: [:]) { out, entry in
                                    guard let id = MemberID(rawValue: entry.key) else { throw KeyVaultError(.home, "bad member id") }
                                    out[id] = try entry.value.reduce(into: [:]) { keys, generation in
                                        guard let h = UInt32(generation.key) else { throw KeyVaultError(.home, "bad generation") }
                                        keys[h] = try SymmetricKey(generation.value.secure())
                                    }
                                })
            record.seenChains = seen
            record.chain = stored.chain?.links ?? []
            record.noticed = stored.noticed
            record.written = stored.written ?? []
            record.movedFrom = stored.movedFrom
            record.instance = stored.instance
            record.linkConfirmation = stored.linkConfirmation
            return record
        } catch {
            throw corrupt("its keys are damaged (\(error))")
        }
    }

    /// The error for a storage without a device.
    package var notFound: KeyVaultError {
        KeyVaultError(.notInitialized, "there is no KeyVault device in \(directory)")
    }

    func corrupt(_ why: String) -> KeyVaultError {
        KeyVaultError(.homeDamaged, "the device record in \(directory) is damaged: \(why)")
    }

    // MARK: Save

    /// Writes the record (atomically where the storage is a file: a crash leaves the old one or the new one).
    package func save(_ record: DeviceRecord) throws {
        // The passphrase and its key are read together: a key is only ever kept beside the passphrase it came from.
        let (passphrase, cached) = sealing.withLock { ($0.passphrase, $0.key) }
        guard let passphrase else { return try write(record, sealedUnder: nil) }
        if let cached { return try write(record, sealedUnder: cached) }
        // A passphrase set without its key (the `passphrase` setter: the tests) is derived
        // here, once, outside the lock; kept only if the passphrase is still this one.
        let key = try SealingKey(passphrase: passphrase)
        sealing.withLock { if $0.passphrase == passphrase { $0.key = key } }
        try write(record, sealedUnder: key)
    }

    /// Writes the record sealed under `new` (nil: unsealed), and seals the saves after it
    /// so once it is written; a failed write leaves the passphrase and key as they were.
    package func save(_ record: DeviceRecord, sealedUnder new: NewSealing?) throws {
        try write(record, sealedUnder: new?.key)
        seal(under: new)
    }

    private func write(_ record: DeviceRecord, sealedUnder key: SealingKey?) throws {
        let secrets = StoredSecrets(
            signingSeed: HexSecret(record.keys.signing.seed), boxKey: HexSecret(record.keys.boxKey.rawRepresentation),
            master: Dictionary(uniqueKeysWithValues: record.masterKeys.map { (String($0.key), HexSecret($0.value.bytes)) }),
            members: Dictionary(uniqueKeysWithValues: record.memberKeys.map { member, keys in
                (member.rawValue, Dictionary(uniqueKeysWithValues: keys.map { (String($0.key), HexSecret($0.value.bytes)) }))
            }))
        var stored = StoredHome(format: 1, server: record.server, account: record.account.rawValue, device: record.device.rawValue,
                                name: record.name, head: record.head, sequence: record.sequence, enrolled: record.enrolled,
                                linkCode: record.linkCode, linkApprover: record.linkApprover?.rawValue,
                                linkConfirmation: record.linkConfirmation,
                                seenChains: record.seenChains.isEmpty ? nil
                                    : Dictionary(uniqueKeysWithValues: record.seenChains.map { ($0.key.rawValue, $0.value) }),
                                chain: record.chain.isEmpty ? nil : KeptChain(links: record.chain), noticed: record.noticed,
                                written: record.written.isEmpty ? nil : record.written, movedFrom: record.movedFrom,
                                instance: record.instance)
        if let key {
            var plain = Array(try JSONEncoder().encode(secrets))
            defer { secureWipe(&plain) }
            stored.sealed = try SealedSecrets.seal(plain, under: key)
        } else {
            stored.secrets = secrets
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        var bytes = Array(try encoder.encode(stored))
        defer { secureWipe(&bytes) }
        try storage.write(bytes)
    }

    /// Removes the device record (after the account is deleted).
    package func remove() throws {
        try storage.erase()
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

/// The key a home's secrets are sealed under: Argon2id(passphrase, salt) at the
/// parameters the file names.
package struct SealingKey: Sendable {
    let salt: [UInt8]
    let parameters: Argon2id.Parameters
    let key: SymmetricKey

    /// Today's cost: a save seals a file at other parameters under a new key at these.
    static let parameters = Argon2id.Parameters.interactive

    /// A new salt, at today's cost.
    init(passphrase: SecureBytes) throws {
        try self.init(passphrase: passphrase, salt: SystemRandom.bytes(count: Argon2id.saltByteCount), parameters: Self.parameters)
    }

    package init(passphrase: SecureBytes, salt: [UInt8], parameters: Argon2id.Parameters) throws {
        self.salt = salt
        self.parameters = parameters
        key = try SymmetricKey(Argon2id.deriveKey(from: passphrase, salt: salt, parameters: parameters, outputByteCount: 32))
    }
}

/// The secrets sealed under Argon2id(passphrase).
package struct SealedSecrets: Codable {
    package var salt: String
    var iterations: UInt32
    var memoryKiB: UInt32
    var envelope: String

    static let context = try! EnvelopeContext(purpose: "device-home")

    /// Sealed with a fresh nonce under `key`, whose salt and parameters the file names.
    package static func seal(_ plain: [UInt8], under key: SealingKey) throws -> SealedSecrets {
        SealedSecrets(salt: Hex.encode(key.salt), iterations: key.parameters.iterations, memoryKiB: key.parameters.memoryKiB,
                      envelope: try Envelope.seal(plain, under: key.key, generation: 1, context: context,
                                                  algorithm: .xchacha20Poly1305).base64)  // random 24-byte nonces: one key seals every save
    }

    /// Opens the secrets with `passphrase`, and returns them with the key it gave. The
    /// file's parameters, salt and envelope are checked before any key is derived.
    package func open(passphrase: SecureBytes) throws -> (plain: [UInt8], key: SealingKey) {
        let parameters: Argon2id.Parameters
        do {
            parameters = try Argon2id.Parameters(iterations: iterations, memoryKiB: memoryKiB)
        } catch let error as CryptoError {
            // Above the ceiling the file would cost unbounded time and memory to open; below the floor, it is too cheap to guess.
            throw KeyVaultError(error.code == .parametersAboveCeiling ? .kdfAboveCeiling : .weakKDF,
                              "the device file's passphrase parameters are refused: \(error.message)")
        }
        guard let salt = try? Hex.decode(self.salt), salt.count == Argon2id.saltByteCount,
              let envelope = try? Envelope(base64: self.envelope) else {
            throw KeyVaultError(.homeDamaged, "the sealed keys of the device file do not parse")
        }
        let key = try SealingKey(passphrase: passphrase, salt: salt, parameters: parameters)
        guard let plain = try? envelope.open(using: key.key, context: Self.context) else {
            throw KeyVaultError(.wrongPassphrase, "that passphrase does not open this device's keys",
                              kind: .rejected)
        }
        return (plain.unprotectedCopy(), key)
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
    var linkApprover: String?
    var linkConfirmation: String?
    var seenChains: [String: DeviceRecord.SeenHead]?
    var chain: KeptChain?
    var noticed: UInt64?
    var written: [String]?
    var movedFrom: String?
    var instance: String?
    var secrets: StoredSecrets?
    var sealed: SealedSecrets?
}

/// The chain a device keeps for opening offline: a cache. One that does not decode (a
/// link type of a newer version, a hand edit) is no copy at all, never a damaged home.
struct KeptChain: Codable {
    var links: [ChainLink]

    init(links: [ChainLink]) { self.links = links }

    init(from decoder: any Decoder) throws {
        links = (try? decoder.singleValueContainer().decode([ChainLink].self)) ?? []
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(links)
    }
}
