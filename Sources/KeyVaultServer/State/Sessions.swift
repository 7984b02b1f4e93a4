import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol

extension Sessions {
    /// The sessions of the service's shared secret.
    init(secret: ServerSecret) throws {
        try self.init(sharedSecret: secret.key, outliveProcess: secret.isPersistent)
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
