import Foundation
import Hummingbird
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore

/// Nonces seen within the signature window, per device. A nonce is accepted once;
/// entries older than the window are dropped, since their timestamps would be refused.
actor NonceLedger {
    private var seen: [DeviceID: [String: Int64]] = [:]
    private var lastSweep: Int64 = 0
    private let window: Int64

    init(window: Int64) { self.window = window }

    /// Records the nonce; false when it was already used.
    func use(_ nonce: String, device: DeviceID, at now: Int64) -> Bool {
        if now - lastSweep > window {
            for (id, nonces) in seen {
                let kept = nonces.filter { now - $0.value <= 2 * window }
                seen[id] = kept.isEmpty ? nil : kept
            }
            lastSweep = now
        }
        if seen[device]?[nonce] != nil { return false }
        seen[device, default: [:]][nonce] = now
        return true
    }
}

/// Replayed chain states, so that checking an append does not replay the chain
/// from disk each time. Updated only after a write commits.
actor ChainCache {
    private var states: [AccountID: ChainState] = [:]

    func state(_ account: AccountID, load: () async throws -> ChainState?) async throws -> ChainState? {
        if let cached = states[account] { return cached }
        guard let state = try await load() else { return nil }
        states[account] = state
        return state
    }

    func store(_ state: ChainState) { states[state.account] = state }
    func forget(_ account: AccountID) { states[account] = nil }
}

/// Checks a signed request: known device, not revoked, of this account, fresh
/// timestamp, unused nonce, valid signature. Refusals of a known account's
/// devices go to its audit log.
struct Authenticator: Sendable {
    let database: KeyVaultDatabase
    let nonces: NonceLedger
    let window: Int64

    func authenticate(_ request: Request, body: [UInt8], account: AccountID) async throws -> StoredDevice {
        let claim = try RequestSignature.Claim(
            device: request.headers[values: .init(RequestSignature.deviceHeader)!].first,
            timestamp: request.headers[values: .init(RequestSignature.timestampHeader)!].first,
            nonce: request.headers[values: .init(RequestSignature.nonceHeader)!].first,
            signature: request.headers[values: .init(RequestSignature.signatureHeader)!].first)
        guard let device = try await database.device(claim.device) else {
            throw ProtocolError("unknown_device", "this device is not enrolled in any account")
        }
        guard device.account == account else {
            throw ProtocolError("wrong_account", "this device belongs to another account")
        }
        guard let key = try? Ed25519.PublicKey(rawRepresentation: device.signingKey),
              claim.isValid(method: request.method.rawValue, path: request.uri.path, query: request.uri.query ?? "",
                            bodyHash: SHA256.hash(body), key: key)
        else {
            try? await database.recordAudit(account, event: "refused.bad_signature", device: device.id.rawValue, detail: nil)
            throw ProtocolError("bad_signature", "the request signature does not verify")
        }
        // Revocation is checked after the signature, so that only the device itself
        // (not anyone who knows its id) learns that it was revoked.
        guard device.revoked == nil else {
            try? await database.recordAudit(account, event: "refused.device_revoked", device: device.id.rawValue, detail: nil)
            throw ProtocolError("device_revoked", "this device was revoked; enrol it again with the recovery code or a link")
        }
        let now = Int64(Date().timeIntervalSince1970)
        guard abs(now - claim.timestamp) <= window else {
            throw ProtocolError("stale_timestamp", "the request timestamp is more than \(window) seconds from the server's clock")
        }
        guard await nonces.use(claim.nonce, device: device.id, at: now) else {
            try? await database.recordAudit(account, event: "refused.replayed_nonce", device: device.id.rawValue, detail: nil)
            throw ProtocolError("replayed_nonce", "this request was already received (nonce reused)")
        }
        if device.lastSeen.map({ now - $0 >= 60 }) ?? true {
            try? await database.touch(device.id, at: now)
        }
        return device
    }
}
