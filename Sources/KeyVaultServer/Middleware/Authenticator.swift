import Foundation
import HTTPTypes
import Hummingbird
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore

/// Header names, parsed once.
enum Headers {
    static let device = HTTPField.Name(RequestSignature.deviceHeader)!
    static let timestamp = HTTPField.Name(RequestSignature.timestampHeader)!
    static let nonce = HTTPField.Name(RequestSignature.nonceHeader)!
    static let signature = HTTPField.Name(RequestSignature.signatureHeader)!
    static let session = HTTPField.Name(RequestMAC.sessionHeader)!
    static let mac = HTTPField.Name(RequestMAC.macHeader)!
    static let invite = HTTPField.Name("KeyVault-Invite")!
}

/// Checks a signed request: known device, not revoked, of this account, fresh
/// timestamp, unused nonce, valid signature. Refusals of a known account's
/// devices go to its audit log, at most one row a minute per device and event (``RefusalLog``).
struct Authenticator: Sendable {
    let database: any KeyVaultRepository
    let nonces: NonceLedger
    let devices = DeviceCache()
    let sessions: Sessions
    let refusals = RefusalLog()
    let window: Int64
    /// Test hook: runs before the last-seen update, to widen the window in which a
    /// request is suspended there (the revocation race tests need it).
    var beforeTouch: (@Sendable () async -> Void)?

    /// The device, from the cache, or from the store when another process may have
    /// revoked it (a store shared by replicas).
    func device(_ id: DeviceID) async throws -> StoredDevice? {
        if !database.isSharedWithOtherProcesses, let cached = devices.get(id) { return cached }
        guard let stored = try await database.device(id) else { return nil }
        devices.put(stored)
        return devices.get(id) ?? stored  // a revocation this process committed stays
    }

    /// A signed request's claimed device (or session) with its proof, before the body is read.
    struct Claimant: Sendable {
        fileprivate enum Proof: Sendable {
            case signature(RequestSignature.Claim)
            case session(RequestMAC.Claim, SymmetricKey)
        }
        fileprivate let proof: Proof
        fileprivate let device: StoredDevice
        fileprivate let account: AccountID
    }

    /// Who a signed request says it comes from, judged before a byte of its body is read:
    /// an enrolled device of this account (or an open session of one) with well-formed
    /// headers. Anyone else is refused with nothing buffered (the body of a whole
    /// attachment may be tens of MiB); the signature or MAC over the body comes after (and a
    /// session's expiry is judged again then).
    func claimant(_ request: Request, account: AccountID) async throws -> Claimant {
        if let id = request.headers[Headers.session] {
            let now = Int64(Date().timeIntervalSince1970)
            guard let session = try sessions.get(id, now: now) else { throw Self.unknownSession }
            let claim = try RequestMAC.Claim(session: id, timestamp: request.headers[Headers.timestamp],
                                             nonce: request.headers[Headers.nonce], mac: request.headers[Headers.mac])
            return Claimant(proof: .session(claim, session.key), device: try await enrolled(session.device, in: account), account: account)
        }
        let claim = try RequestSignature.Claim(
            device: request.headers[Headers.device],
            timestamp: request.headers[Headers.timestamp],
            nonce: request.headers[Headers.nonce],
            signature: request.headers[Headers.signature])
        return Claimant(proof: .signature(claim), device: try await enrolled(claim.device, in: account), account: account)
    }

    private static var unknownSession: ProtocolError {
        ProtocolError(.unknownSession, "this session is unknown or expired; open a new one (POST /v1/accounts/{account}/sessions)")
    }

    /// Checks the claimant's signature (or session MAC) over the request and its body, then
    /// its revocation, timestamp and nonce: the request let in, with its device and its
    /// account's head as the nonce's statement saw it (a shared store).
    func authenticate(_ claimant: Claimant, _ request: Request, body: [UInt8]) async throws -> SignedCaller {
        var device = claimant.device
        let account = claimant.account
        switch claimant.proof {
        case .signature(let claim):
            guard let key = try? Ed25519.PublicKey(rawRepresentation: device.signingKey),
                  claim.isValid(method: request.method.rawValue, path: request.uri.path, query: request.uri.query ?? "",
                                bodyHash: SHA256.hash(body), key: key)
            else {
                await refused(.badSignature, device, account)
                throw ProtocolError(.badSignature, "the request signature does not verify")
            }
            return try await admit(&device, account: account, timestamp: claim.timestamp, nonce: claim.nonce, persistNonce: true, body: body)
        case .session(let claim, let key):
            // Still open once the body has arrived (a slow body does not outlive its session).
            guard try sessions.get(claim.session, now: Int64(Date().timeIntervalSince1970)) != nil else { throw Self.unknownSession }
            guard try claim.isValid(method: request.method.rawValue, path: request.uri.path, query: request.uri.query ?? "",
                                    bodyHash: SHA256.hash(body), key: key)
            else {
                await refused(.badSignature, device, account, detail: "session")
                throw ProtocolError(.badSignature, "the request MAC does not verify")
            }
            // Sessions of a secret of this process alone end with it, and so may their nonces.
            return try await admit(&device, account: account, timestamp: claim.timestamp, nonce: claim.nonce,
                                   persistNonce: sessions.outliveProcess, body: body)
        }
    }

    /// The device, if it is enrolled in `account`: the copy its signature or MAC is checked with.
    ///
    /// A shared store's cached copy of an active device of this account is enough here, with no
    /// read: its signing key is bound to its id, and ``admit(_:account:timestamp:nonce:persistNonce:body:)``
    /// reads the device again, from the store, before the request is let through (in the nonce's
    /// own round trip). Anything else (not cached, another account, revoked) is decided by the store.
    private func enrolled(_ id: DeviceID, in account: AccountID) async throws -> StoredDevice {
        if let cached = devices.get(id), cached.account == account, cached.revoked == nil { return cached }
        guard let device = try await device(id) else {
            throw ProtocolError(.unknownDevice, "this device is not enrolled in any account")
        }
        guard device.account == account else { throw ProtocolError(.wrongAccount, "this device belongs to another account") }
        return device
    }

    /// The checks both kinds of request share, after the signature or MAC verified.
    /// `persistNonce`: record the nonce in the database, so that the request cannot
    /// be replayed after a restart either (Ed25519-signed requests).
    private func admit(_ device: inout StoredDevice, account: AccountID, timestamp: Int64, nonce: String,
                       persistNonce: Bool, body: [UInt8]) async throws -> SignedCaller {
        // Revocation is checked after the signature, so that only the device itself
        // (not anyone who knows its id) learns that it was revoked.
        try await refuseIfRevoked(device, account)
        let now = Int64(Date().timeIntervalSince1970)
        // Compared without subtracting the client's value: any Int64 is accepted
        // from the header, and now - Int64.min would overflow.
        guard timestamp >= now - window, timestamp <= now + window else {
            throw ProtocolError(.staleTimestamp, "the request timestamp is more than \(window) seconds from the server's clock")
        }
        let shared = database.isSharedWithOtherProcesses
        let fresh: Bool
        // The device as it is now: a revocation that committed while this request was
        // suspended wins. A shared store reads it in the nonce's own round trip.
        var current: StoredDevice?
        var head: HeadSeen?
        if persistNonce && shared {
            // The last-seen update goes in that round trip too: the device comes back with
            // `now` as its time, and the touch below is skipped.
            (fresh, current, head) = try await database.useNonceReadingDevice(nonce, device: device.id, timestamp: timestamp,
                                                                              touchingAt: now, forgetBefore: now - 2 * window)
        } else {
            fresh = persistNonce
                ? try await database.useNonce(nonce, device: device.id, timestamp: timestamp, forgetBefore: now - 2 * window)
                : nonces.use(nonce, device: device.id, at: now)
            // Read again (the cache, or the store when the cache has it no more): a device
            // whose account was deleted while its body arrived is no device at all.
            current = try await self.device(device.id)
        }
        if shared {
            device = try storeCopy(current, of: device, account)
            devices.put(device)
            current = devices.get(device.id) ?? device  // a revocation this process committed stays
        }
        // Revoked before replayed, the documented order (the first check may have used a
        // cached copy that did not know of the revocation yet).
        guard let current, current.account == account else {
            throw ProtocolError(.unknownDevice, "this device is not enrolled in any account")
        }
        try await refuseIfRevoked(current, account)
        guard fresh else {
            await refused(.replayedNonce, device, account)
            throw ProtocolError(.replayedNonce, "this request was already received (nonce reused)")
        }
        if device.isDueSeen(at: now) {
            // Only the time, in place: writing this copy back could undo a revocation
            // that commits while the update below is suspended.
            devices.touch(device.id, at: now)
            await beforeTouch?()
            try? await database.touch(device.id, at: now)
            device.lastSeen = now
            // ...and so may one that committed during this update.
            let current = shared ? try await self.device(device.id) : devices.get(device.id)
            if let current { try await refuseIfRevoked(current, account) }
        }
        return SignedCaller(account: account, device: device, head: head, body: body)
    }

    /// A shared store's copy of the device, read after the first check: the one that counts
    /// from here. Refused when it is gone (its account deleted meanwhile) or is not the device
    /// that check knew (the first check may have used a cached copy).
    private func storeCopy(_ stored: StoredDevice?, of device: StoredDevice, _ account: AccountID) throws -> StoredDevice {
        guard let stored, stored.account == account, stored.signingKey == device.signingKey else {
            throw ProtocolError(.unknownDevice, "this device is not enrolled in any account")
        }
        return stored
    }

    private func refuseIfRevoked(_ device: StoredDevice, _ account: AccountID) async throws {
        guard device.revoked == nil else {
            await refused(.deviceRevoked, device, account)
            throw ProtocolError(.deviceRevoked, "this device was revoked; enrol it again with the recovery code or a link")
        }
    }

    /// Logs a refusal of a known device, at most one row a minute per device and event.
    private func refused(_ code: ErrorCode, _ device: StoredDevice, _ account: AccountID, detail: String? = nil) async {
        let event = AuditEvent.refused(code)
        guard let skipped = refusals.admit(device: device.id, event: event, at: Int64(Date().timeIntervalSince1970)) else { return }
        let note = skipped > 0 ? "\(skipped) more not logged in the minute before" : nil
        let text = [detail, note].compactMap { $0 }.joined(separator: "; ")
        try? await database.recordAudit(account, event: event, device: device.id.rawValue, detail: text.isEmpty ? nil : text)
    }
}

/// Refusals of a known device go to its account's audit log, but a device (or
/// whoever replays its requests) must not be able to grow that log without bound:
/// at most one row per device and event a minute; the row after a quiet minute
/// carries how many were left out before it.
final class RefusalLog: Sendable {
    static let interval: Int64 = 60
    private struct Entries {
        var last: [String: (time: Int64, skipped: Int)] = [:]
        var lastSweep: Int64 = 0
    }
    private let entries = Locked(Entries())

    /// nil when this refusal is not logged; otherwise how many were left out since the last row.
    func admit(device: DeviceID, event: AuditEvent, at now: Int64) -> Int? {
        entries.withLock { entries in
            // Amortised: one pass a minute drops entries with nothing left to report.
            if now - entries.lastSweep >= Self.interval {
                entries.last = entries.last.filter { now - $0.value.time < Self.interval || $0.value.skipped > 0 }
                entries.lastSweep = now
            }
            let key = device.rawValue + " " + event.rawValue
            if let entry = entries.last[key], now - entry.time < Self.interval {
                entries.last[key] = (entry.time, entry.skipped + 1)
                return nil
            }
            let skipped = entries.last[key]?.skipped ?? 0
            entries.last[key] = (now, 0)
            return skipped
        }
    }
}
