import Foundation
import Synchronization
import KeyVaultCrypto
import KeyVaultModel

/// Session keys in memory only (never in the database): a restart ends every
/// session and devices simply open new ones.
final class SessionTable: Sendable {
    struct Session {
        let device: DeviceID
        let key: SymmetricKey
        let expires: Int64
    }

    static let lifetime: Int64 = 3600
    static let perDevice = 8
    private struct Table {
        var sessions: [String: Session] = [:]
        var byDevice: [DeviceID: [String]] = [:]
    }
    private let table = Mutex(Table())

    func open(for device: DeviceID, now: Int64) -> (id: String, key: SymmetricKey, expires: Int64) {
        let id = Hex.encode(SystemRandom.bytes(count: 16))
        let session = Session(device: device, key: SymmetricKey(), expires: now + Self.lifetime)
        table.withLock { table in
            var ids = table.byDevice[device, default: []].filter { table.sessions[$0].map { $0.expires >= now } ?? false }
            if ids.count >= Self.perDevice { table.sessions[ids.removeFirst()] = nil }  // oldest goes
            ids.append(id)
            table.byDevice[device] = ids
            table.sessions[id] = session
        }
        return (id, session.key, session.expires)
    }

    func get(_ id: String, now: Int64) -> Session? {
        table.withLock { table in
            guard let session = table.sessions[id], session.expires >= now else { return nil }
            return session
        }
    }
}

/// Nonces of session (MAC) requests seen within the signature window, per device:
/// sessions die with the process, so these need not outlive it (Ed25519-signed
/// requests record theirs in the database). A nonce is accepted once;
/// entries older than twice the window are dropped, since their timestamps would
/// be refused anyway. A lock, not an actor: the check never suspends, so it costs
/// no thread hop on the request path.
final class NonceLedger: Sendable {
    private struct Seen {
        var nonces: [DeviceID: [String: Int64]] = [:]
        var lastSweep: Int64 = 0
    }
    private let seen = Mutex(Seen())
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
