import Foundation
import KeyVaultStore
import KeyVaultCrypto
import KeyVaultProtocol

/// The secret the replicas of one service share (`--secret-file`): session keys and
/// recovery challenges and tokens are derived from it, so that any replica checks what
/// another issued while the database holds none of them.
///
/// Without a file each process draws its own, as a single process needs: its sessions
/// then end with it, and another replica does not know them (`unknown_session`, and the
/// device opens a new one).
///
/// Whoever holds it can make session requests as any device of any account (read
/// ciphertext, upload); never a key event, which only a device's own key signs. Keep
/// it as the database's credentials are kept.
package struct ServerSecret: Sendable {
    /// 32 bytes.
    let key: SymmetricKey
    /// Whether it outlives this process (it came from a file): then sessions do too, so
    /// the nonces of session requests are stored, not only remembered.
    let isPersistent: Bool

    private init(key: SymmetricKey, isPersistent: Bool) {
        self.key = key
        self.isPersistent = isPersistent
    }

    /// A secret of this process alone.
    package static func ephemeral() -> ServerSecret { ServerSecret(key: SymmetricKey(), isPersistent: false) }

    /// A secret of the caller's choosing, kept by nothing (the fuzz targets need the
    /// same session tag in every run).
    package static func given(_ key: SymmetricKey) -> ServerSecret { ServerSecret(key: key, isPersistent: false) }

    /// The key for one use (``ServerSecretKeys/key(from:for:)``).
    func key(for purpose: String) throws -> SymmetricKey { try ServerSecretKeys.key(from: key, for: purpose) }

    /// Eight public bytes naming this secret (``ServerSecretKeys/tag(of:)``).
    func tag() throws -> [UInt8] { try ServerSecretKeys.tag(of: key) }

    /// Reads the secret from `path`, or makes it there when there is no such file:
    /// 32 random bytes as 64 lowercase hex digits and a newline, mode 0600. Replicas
    /// that start at once on a shared file agree: the file appears whole or not at all
    /// (written aside under a random name, then linked into place, which fails if
    /// another got there first).
    ///
    /// - Throws: `ConfigurationError` naming the file: unreadable, a symbolic link or
    ///   not a regular file, another user's, readable by group or others, or not 64 hex digits.
    package static func load(orCreateAt path: String) throws -> ServerSecret {
        var fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        if fd < 0, errno == ENOENT {
            try create(path)
            fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        }
        guard fd >= 0 else {
            let reason = errno == ELOOP ? "it is a symbolic link" : String(cString: strerror(errno))
            throw ConfigurationError("the secret file \(path) cannot be read: \(reason)")
        }
        defer { close(fd) }
        // Everything is judged on the file that was opened, not on the path again.
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & 0o170000 == 0o100000 else {
            throw ConfigurationError("the secret file \(path) is not a regular file")
        }
        guard info.st_uid == geteuid() else {
            throw ConfigurationError("the secret file \(path) belongs to another user (uid \(info.st_uid)); it must be this service's alone")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw ConfigurationError("the secret file \(path) is readable by group or others (mode \(String(info.st_mode & 0o777, radix: 8))); `chmod 600 \(path)`")
        }
        var contents = [UInt8](repeating: 0, count: 66)
        defer { secureWipe(&contents) }
        let count = contents.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count >= 0 else { throw ConfigurationError("the secret file \(path) cannot be read: \(String(cString: strerror(errno)))") }
        let digits = count == 65 && contents[64] == UInt8(ascii: "\n") ? 64 : count
        guard digits == 64, contents[0..<64].allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            throw ConfigurationError("the secret file \(path) does not hold 64 lowercase hex digits (32 bytes); remove it to have a new one made, and give every replica the same file")
        }
        let bytes = try SecureBytes(count: 32) { out in
            for i in 0..<32 { out[i] = hexValue(contents[2 * i]) << 4 | hexValue(contents[2 * i + 1]) }
        }
        return ServerSecret(key: try SymmetricKey(bytes), isPersistent: true)
    }

    private static func hexValue(_ digit: UInt8) -> UInt8 { digit <= 57 ? digit - 48 : digit - 87 }

    private static func create(_ path: String) throws {
        var template = Array((path + ".XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }  // mode 0600, a name of its own
        guard fd >= 0 else { throw ConfigurationError("cannot create the secret file \(path): \(String(cString: strerror(errno)))") }
        let aside = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { unlink(aside) }
        var raw = SystemRandom.bytes(count: 32)
        let digits = Array("0123456789abcdef".utf8)
        var text = raw.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] } + [UInt8(ascii: "\n")]
        secureWipe(&raw)
        defer { secureWipe(&text) }
        let written = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == text.count, synced else { throw ConfigurationError("cannot write the secret file \(path)") }
        // link(2) refuses to replace: a replica that made its own at the same moment loses, and reads the winner's.
        guard link(aside, path) == 0 || errno == EEXIST else {
            throw ConfigurationError("cannot create the secret file \(path): \(String(cString: strerror(errno)))")
        }
        // The new name survives a power cut only once its directory is synced.
        let directory = open(URL(fileURLWithPath: path).deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }
}
