import Foundation
import KeyVaultCrypto
import KeyVaultModel

/// Sessions that store nothing: the id carries the secret's tag, the expiry and the
/// device, and the key is derived from the server secret and the id. Any replica given
/// the same secret (`--secret-file`) checks a session any other opened; no database
/// row or memory holds a session key (docs/formats/request-signature.md, "Sessions").
package struct Sessions: Sendable {
    package struct Session {
        package let device: DeviceID
        package let key: SymmetricKey
    }

    static let lifetime: Int64 = 3600
    /// tag (8) ‖ expires (8, big-endian) ‖ device (16) ‖ random (16).
    static let idByteCount = 48
    private let root: SymmetricKey
    private let tag: [UInt8]
    /// Whether a session outlives this process (the secret came from a file, and other
    /// replicas or a restart know it): then the nonces of session requests are stored.
    let outliveProcess: Bool

    package init(secret: ServerSecret) throws {
        root = try secret.key(for: "session")
        tag = try secret.tag()
        outliveProcess = secret.isPersistent
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

/// Nonces of session (MAC) requests seen within the signature window, per device,
/// for sessions of a secret of this process alone, which die with it, so these need
/// not outlive it either (otherwise, and for Ed25519-signed requests, the nonces are
/// in the database). A nonce is accepted once;
/// entries older than twice the window are dropped, since their timestamps would
/// be refused anyway. A lock, not an actor: the check never suspends, so it costs
/// no thread hop on the request path.
final class NonceLedger: Sendable {
    private struct Seen {
        var nonces: [DeviceID: [String: Int64]] = [:]
        var lastSweep: Int64 = 0
    }
    private let seen = Locked(Seen())
    private let window: Int64

    init(window: Int64) { self.window = window }

    /// Records the nonce; false when it was already used.
    func use(_ nonce: String, device: DeviceID, at now: Int64) -> Bool {
        seen.withLock { seen in
            if now - seen.lastSweep > window {
                for (id, nonces) in seen.nonces {
                    let kept = nonces.filter { now - $0.value <= 2 * window }
                    seen.nonces[id] = kept.isEmpty ? nil : kept
                }
                seen.lastSweep = now
            }
            if seen.nonces[device]?[nonce] != nil { return false }
            seen.nonces[device, default: [:]][nonce] = now
            return true
        }
    }
}
