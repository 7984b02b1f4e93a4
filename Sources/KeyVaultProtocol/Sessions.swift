import KeyVaultCrypto
import KeyVaultModel

// docs/formats/request-signature.md, "Sessions": what a session id is and how its key
// is derived from the secret the replicas share. Here, not in the service, so that
// the fuzz targets check it without building the server.

/// The keys derived from the service's shared secret (`--secret-file`).
package enum ServerSecretKeys {
    /// The key for one use: HKDF-SHA256(secret, info "keyvault/v1/server/" ‖ purpose).
    package static func key(from secret: SymmetricKey, for purpose: String) throws -> SymmetricKey {
        try HKDF.deriveKey(from: secret, info: Array("keyvault/v1/server/\(purpose)".utf8))
    }

    /// Eight public bytes naming the secret (so that a replica given another secret
    /// says it does not know a session, rather than that its MAC is wrong).
    package static func tag(of secret: SymmetricKey) throws -> [UInt8] {
        try HKDF.deriveBytes(from: secret, info: Array("keyvault/v1/server/tag".utf8), outputByteCount: 8)
    }
}

/// Sessions that store nothing: the id carries the secret's tag, the expiry and the
/// device, and the key is derived from the server secret and the id. Any replica given
/// the same secret (`--secret-file`) checks a session any other opened; no database
/// row or memory holds a session key (docs/formats/request-signature.md, "Sessions").
package struct Sessions: Sendable {
    package struct Session {
        package let device: DeviceID
        package let key: SymmetricKey
    }

    package static let lifetime: Int64 = 3600
    /// tag (8) ‖ expires (8, big-endian) ‖ device (16) ‖ random (16).
    static let idByteCount = 48
    private let root: SymmetricKey
    private let tag: [UInt8]
    /// Whether a session outlives this process (the secret came from a file, and other
    /// replicas or a restart know it): then the nonces of session requests are stored.
    package let outliveProcess: Bool

    /// - Parameters:
    ///   - sharedSecret: the secret the replicas share (`--secret-file`).
    ///   - outliveProcess: whether it came from a file (it outlives this process).
    package init(sharedSecret: SymmetricKey, outliveProcess: Bool) throws {
        root = try ServerSecretKeys.key(from: sharedSecret, for: "session")
        tag = try ServerSecretKeys.tag(of: sharedSecret)
        self.outliveProcess = outliveProcess
    }

    /// - Parameter random: the id's random part (16 bytes; given only by the vector test).
    package func open(for device: DeviceID, now: Int64,
              random: [UInt8] = SystemRandom.bytes(count: 16)) throws -> (id: String, key: SymmetricKey, expires: Int64) {
        let expires = now + Self.lifetime
        let id = tag + withUnsafeBytes(of: UInt64(expires).bigEndian, Array.init) + (try Hex.decode(device.rawValue)) + random
        return (Hex.encode(id), try key(id), expires)
    }

    /// The session `id` names, if it is well formed, made with this secret and unexpired.
    package func get(_ id: String, now: Int64) throws -> Session? {
        guard id.utf8.count == 2 * Self.idByteCount, id == id.lowercased(), let bytes = try? Hex.decode(id),
              Array(bytes[0..<8]) == tag
        else { return nil }
        let expires = Int64(bitPattern: bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) })
        guard expires >= now, expires <= now + Self.lifetime else { return nil }
        return Session(device: DeviceID(unchecked: Hex.encode(Array(bytes[16..<32]))), key: try key(bytes))
    }

    /// HMAC-SHA256(session root, "keyvault/v1/session-key" ‖ 0x00 ‖ id bytes).
    private func key(_ id: [UInt8]) throws -> SymmetricKey {
        var code = try HMACSHA256.authenticationCode(for: Array("keyvault/v1/session-key".utf8) + [0] + id, using: root)
        return try SymmetricKey(SecureBytes(wiping: &code))
    }
}

