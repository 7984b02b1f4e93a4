import Foundation
import Hummingbird
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore

/// Short-lived state of recovery enrolment: challenges, one-enrolment tokens, and
/// failure counts per account and per client address.
///
/// Nothing here grows with what strangers send, and nothing scans it all per call:
/// - a challenge is stateless: its expiry and a random part, authenticated with a
///   key of this process, so issuing one stores nothing (and a stranger cannot use
///   up the owner's); only a challenge answered by a valid proof is remembered,
///   until it expires, so that it is single use;
/// - tokens are issued only for valid proofs;
/// - failures are counted only until a key (account or address) reaches its limit,
///   and the total remembered is capped;
/// - everything expires through queues ordered by time, swept from the front.
///
/// A valid proof is never refused by a limit: limits count and slow failures only.
actor RecoveryGate {
    static let challengeLifetime: Int64 = 120
    static let tokenLifetime: Int64 = 300
    /// Failed proofs allowed per account, and per client address, in `failureWindow`.
    static let maxFailures = 5
    static let failureWindow: Int64 = 900
    /// Failures remembered across every account and address. Past it a failing proof
    /// is refused as rate limited without being counted; a valid one still passes.
    static let maxTrackedFailures = 100_000

    private let challengeKey = SymmetricKey()
    private var usedChallenges = ExpiringSet<String>()
    private var tokens = ExpiringSet<String>()
    private var tokenAccounts: [String: AccountID] = [:]
    private var failures: [String: [Int64]] = [:]
    private var failureQueue = ExpiryQueue<String>()

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    /// A challenge for `account`: 8 bytes of expiry (big-endian seconds), 8 random
    /// bytes and the first 16 bytes of their HMAC with the account, in hex.
    func issueChallenge(for account: AccountID) throws -> RecoveryChallenge {
        let expires = Self.now() + Self.challengeLifetime
        let body = withUnsafeBytes(of: UInt64(expires).bigEndian, Array.init) + SystemRandom.bytes(count: 8)
        return RecoveryChallenge(challenge: Hex.encode(body + (try mac(body, account))), expires: expires)
    }

    private func mac(_ body: [UInt8], _ account: AccountID) throws -> [UInt8] {
        Array(try HMACSHA256.authenticationCode(for: Array("keyvault/v1/recovery-challenge".utf8) + [0] + Array(account.rawValue.utf8) + [0] + body,
                                                using: challengeKey).prefix(16))
    }

    /// Whether `challenge` is one this process issued for `account`, unexpired and
    /// not yet answered by a valid proof.
    func isOpen(challenge: String, for account: AccountID) -> Bool {
        let now = Self.now()
        sweep(now)
        guard let bytes = try? Hex.decode(challenge), bytes.count == 32, challenge == challenge.lowercased(),
              let expected = try? mac(Array(bytes[0..<16]), account), constantTimeEquals(expected, Array(bytes[16...]))
        else { return false }
        let expires = Int64(bitPattern: bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) })
        return expires >= now && !usedChallenges.contains(challenge)
    }

    /// Marks a challenge answered (single use); false if it already was.
    func close(challenge: String) -> Bool {
        guard !usedChallenges.contains(challenge) else { return false }
        usedChallenges.insert(challenge, expires: Self.now() + Self.challengeLifetime)
        return true
    }

    /// Seconds to wait, when `account` or `client` has failed too often recently.
    func retryAfter(account: AccountID, client: String) -> Int64? {
        let now = Self.now()
        sweep(now)
        if failureQueue.count >= Self.maxTrackedFailures { return Self.failureWindow }
        var wait: Int64?
        for key in ["account:\(account)", "client:\(client)"] {
            if let recent = failures[key], recent.count >= Self.maxFailures, let oldest = recent.first {
                wait = max(wait ?? 0, oldest + Self.failureWindow - now)
            }
        }
        return wait
    }

    func recordFailure(account: AccountID, client: String) {
        let now = Self.now()
        for key in ["account:\(account)", "client:\(client)"] {
            failures[key, default: []].append(now)
            failureQueue.append(key, at: now)
        }
    }

    func issueToken(for account: AccountID) -> (String, Int64) {
        let token = Hex.encode(SystemRandom.bytes(count: 32))
        let expires = Self.now() + Self.tokenLifetime
        tokens.insert(token, expires: expires)
        tokenAccounts[token] = account
        return (token, expires)
    }

    /// Takes an enrolment token (single use).
    func take(token: String, for account: AccountID) -> Bool {
        sweep(Self.now())
        guard tokens.remove(token), let owner = tokenAccounts.removeValue(forKey: token) else { return false }
        return owner == account
    }

    /// Drops what expired, from the fronts of the queues: each entry is dropped
    /// once, so the cost is amortised over the calls that added them.
    private func sweep(_ now: Int64) {
        usedChallenges.removeExpired(now)
        for token in tokens.removeExpired(now) { tokenAccounts[token] = nil }
        for key in failureQueue.popOlder(than: now - Self.failureWindow) {
            failures[key]?.removeFirst()
            if failures[key]?.isEmpty == true { failures[key] = nil }
        }
    }

    /// How much the gate remembers, for tests.
    var remembered: (challenges: Int, tokens: Int, failures: Int) { (usedChallenges.count, tokens.count, failureQueue.count) }
}

/// Keys in the order they were added, with their times: times grow along the
/// queue, so what expired is at the front.
struct ExpiryQueue<Key> {
    private var entries: [(key: Key, time: Int64)] = []
    private var head = 0

    var count: Int { entries.count - head }

    mutating func append(_ key: Key, at time: Int64) { entries.append((key, time)) }

    /// Removes and returns the keys added before `time`.
    mutating func popOlder(than time: Int64) -> [Key] {
        var popped = [Key]()
        while head < entries.count, entries[head].time < time {
            popped.append(entries[head].key)
            head += 1
        }
        // Compacts once the dead prefix is half the storage: amortised O(1) per entry.
        if head > 64, head * 2 > entries.count {
            entries.removeFirst(head)
            head = 0
        }
        return popped
    }
}

/// A set whose members expire; all of them live equally long, so they expire in the
/// order they were inserted.
struct ExpiringSet<Key: Hashable> {
    private var members: [Key: Int64] = [:]
    private var queue = ExpiryQueue<Key>()

    var count: Int { members.count }
    func contains(_ key: Key) -> Bool { members[key] != nil }

    mutating func insert(_ key: Key, expires: Int64) {
        members[key] = expires
        queue.append(key, at: expires)
    }

    /// false if `key` was not there.
    mutating func remove(_ key: Key) -> Bool { members.removeValue(forKey: key) != nil }

    /// Removes the members expired at `now`; returns them.
    @discardableResult
    mutating func removeExpired(_ now: Int64) -> [Key] {
        queue.popOlder(than: now).filter { members.removeValue(forKey: $0) != nil }
    }
}

extension KeyService {
    static let linkRequestLifetime: Int64 = 600
    /// Pending link requests one client address (an IPv6 /56) may have, on all accounts together.
    static let maxPendingLinkRequestsPerClient = 5
    /// Pending link requests on the whole server before the per-account floor below applies.
    static let maxPendingLinkRequests = 100_000
    /// Past that, an account with fewer pending requests than this still gets one: a
    /// flood over many addresses stops no account that it does not itself target.
    static let maxPendingLinkRequestsPerAccountOverTotal = 3

    // MARK: Recovery

    func recoveryChallenge(_ request: Request, _ context: Context) async throws -> Response {
        let account = try accountParameter(context)
        guard let recovery = try await state(account).recovery else { throw APIError.notFound("recovery code for this account") }
        try Self.refuseIfCompromised(recovery)
        // Never rate limited: a challenge costs this server no memory (``RecoveryGate``),
        // and refusing challenges would refuse the owner's valid proof with them.
        return try json(try await recoveryGate.issueChallenge(for: account), status: .created)
    }

    func recoveryProof(_ request: Request, _ context: Context) async throws -> Response {
        let account = try accountParameter(context)
        let proof = try decode(RecoveryProof.self, from: try await body(request, limit: 4096))
        let chainState = try await state(account)
        guard let recovery = chainState.recovery else { throw APIError.notFound("recovery code for this account") }
        try Self.refuseIfCompromised(recovery)
        // The proof is checked before any limit: a valid proof passes whatever others
        // did before it; limits count and slow failures only.
        let signature = base64Decode(proof.signature) ?? []
        let valid = await recoveryGate.isOpen(challenge: proof.challenge, for: account)
            && recovery.authKey.isValidSignature(signature, for: RecoveryProofFormat.signedBytes(account: account, challenge: proof.challenge))
        guard valid, await recoveryGate.close(challenge: proof.challenge) else {
            try await refuseIfThrottled(account, context)
            await recoveryGate.recordFailure(account: account, client: Self.addressBucket(context.clientAddress))
            try? await database.recordAudit(account, event: "refused.recovery_proof", device: nil, detail: nil)
            throw APIError(.badRecoveryProof, "the recovery proof does not verify (wrong code, or a stale or reused challenge)")
        }
        guard let stored = try await database.links(account) else { throw APIError.notFound("account") }
        let links = try stored.links.map { try JSONDecoder().decode(ChainLink.self, from: $0.json) }
        let (token, expires) = await recoveryGate.issueToken(for: account)
        try? await database.recordAudit(account, event: "recovery.proven", device: nil, detail: nil)
        return try json(RecoverySession(
            token: token, expires: expires, chain: ChainResponse(account: account, links: links, head: stored.head),
            boxes: try database.boxes(account, recipient: ChainLink.recoverySigner, generation: nil),
            wraps: try await database.wraps(account, member: nil)))
    }

    func recoveryEnroll(_ request: Request, _ context: Context) async throws -> Response {
        let account = try accountParameter(context)
        let enroll = try decode(RecoveryEnrollRequest.self, from: try await body(request, limit: configuration.maxJSONBytes))
        guard await recoveryGate.take(token: enroll.token, for: account) else {
            throw APIError(.badRecoveryToken, "the enrolment token is unknown, used or expired; prove the recovery code again")
        }
        guard enroll.link.type == .deviceAdd, enroll.link.signer == ChainLink.recoverySigner else {
            throw APIError.badRequest("recovery enrolment appends one device.add link signed with the recovery key")
        }
        return try await appendVerified(account, AppendRequest(link: enroll.link, boxes: enroll.boxes), by: nil, context)
    }

    /// A code whose origin device was revoked opens nothing more (docs/formats/account-chain.md, "History").
    static func refuseIfCompromised(_ recovery: ChainState.Recovery) throws {
        guard let link = recovery.compromised else { return }
        throw APIError(.recoveryCompromised,
                       "this account's recovery code was compromised at link \(link) (the device that set it was revoked); a device of the account must set a new one (`keyctl recovery rotate`)")
    }

    /// Refuses a failed proof without counting it, once its account or client failed too often.
    private func refuseIfThrottled(_ account: AccountID, _ context: Context) async throws {
        if let wait = await recoveryGate.retryAfter(account: account, client: Self.addressBucket(context.clientAddress)) {
            var error = APIError(.rateLimited, "too many failed recovery proofs; try again in \(wait) seconds")
            error.headers[.retryAfter] = String(wait)
            throw error
        }
    }

    // MARK: Device links

    func createLinkRequest(_ request: Request, _ context: Context) async throws -> Response {
        let account = try accountParameter(context)
        let create = try decode(LinkRequestCreate.self, from: try await body(request, limit: 4096))
        guard create.isWellFormed else {
            throw APIError.badRequest("a link request has hex public keys, the device id derived from the signing key, a 1-100 character name and a 32-byte hex commitment")
        }
        guard try await state(account).devices[create.device] == nil else {
            throw APIError(.deviceExists, "that device is already part of this account")
        }
        let code = LinkCode.random()
        let expires = RecoveryGate.now() + Self.linkRequestLifetime
        // Limits per client address, not per account: a stranger flooding one account's
        // requests must not stop the owner's new device from asking.
        try await database.createLinkRequest(account, code: code, expires: expires, request: create,
                                             client: Self.addressBucket(context.clientAddress),
                                             perClient: Self.maxPendingLinkRequestsPerClient, total: Self.maxPendingLinkRequests,
                                             perAccountOverTotal: Self.maxPendingLinkRequestsPerAccountOverTotal)
        return try json(LinkRequestInfo(code: code, status: .pending, expires: expires, request: create), status: .created)
    }

    /// The key rate limits count a client under (``IPNetwork/bucket(_:)``).
    static func addressBucket(_ address: String) -> String { IPNetwork.bucket(address) }

    /// Both devices poll this, unsigned (the new device is not enrolled yet): the code is
    /// the capability. The approver trusts none of it beyond what the commitment and the
    /// SAS check (docs/formats/device-link.md).
    func linkRequestStatus(_ request: Request, _ context: Context) async throws -> Response {
        let account = try accountParameter(context)
        guard let info = try await database.linkRequest(account, code: try codeParameter(context)) else {
            throw APIError.notFound("link request")
        }
        return try json(info)
    }

    func pendingLinkRequests(_ request: Request, _ context: Context) async throws -> Response {
        let (account, _, _) = try await authenticated(request, context)
        return try json(["requests": try await database.pendingLinkRequests(account)])
    }

    /// The approver's random value r_A, posted after it fetched the request (and so its commitment).
    func respondToLinkRequest(_ request: Request, _ context: Context) async throws -> Response {
        let (account, device, bytes) = try await authenticated(request, context, limit: 4096)
        let code = try codeParameter(context)
        let nonce = try linkNonce(bytes)
        try await database.respondToLinkRequest(account, code: code, nonce: nonce, by: device.id)
        return Response(status: .noContent)
    }

    /// The new device's r_N. Refused unless it opens the request's commitment, so that
    /// nobody but the new device can move the request on (or end it).
    func revealLinkRequest(_ request: Request, _ context: Context) async throws -> Response {
        let account = try accountParameter(context)
        let code = try codeParameter(context)
        let nonce = try linkNonce(try await body(request, limit: 4096))
        guard let info = try await database.linkRequest(account, code: code) else { throw APIError.notFound("link request") }
        guard LinkCommitment.opens(account: account, request: info.request, nonce: try Hex.decode(nonce)) else {
            throw APIError(.badReveal, "the value does not open the request's commitment")
        }
        try await database.revealLinkRequest(account, code: code, nonce: nonce)
        return Response(status: .noContent)
    }

    func linkNonce(_ bytes: [UInt8]) throws -> String {
        let body = try decode(LinkNonce.self, from: bytes)
        guard body.nonce.utf8.count == 64, (try? Hex.decode(body.nonce)) != nil else {
            throw APIError.badRequest("nonce is 32 bytes as 64 hex digits")
        }
        return body.nonce.lowercased()
    }

    func approveLinkRequest(_ request: Request, _ context: Context) async throws -> Response {
        let (account, device, bytes) = try await authenticated(request, context)
        let code = try codeParameter(context)
        guard let info = try await database.linkRequest(account, code: code) else { throw APIError.notFound("link request") }
        guard info.status == .pending else {
            throw APIError(.linkRequestClosed, "this link request is \(info.status.rawValue)")
        }
        guard info.deviceNonce != nil, info.approver == device.id else {
            throw APIError(.linkRequestOutOfTurn, "approve a link request after answering it and seeing the new device's reveal")
        }
        let append = try decode(AppendRequest.self, from: bytes)
        guard append.link.type == .deviceAdd, append.link.body["device"] == info.request.device.rawValue,
              append.link.body["signingKey"] == info.request.signingKey, append.link.body["boxKey"] == info.request.boxKey
        else { throw APIError.badRequest("the approval must add exactly the device that asked (same id and keys)") }
        return try await appendVerified(account, append, by: device, context, approving: code)
    }

    func refuseLinkRequest(_ request: Request, _ context: Context) async throws -> Response {
        let (account, device, _) = try await authenticated(request, context)
        do {
            try await database.refuseLinkRequest(account, code: try codeParameter(context), by: device.id)
        } catch StoreError.linkRequestClosed {
            throw APIError(.linkRequestClosed, "this link request is no longer pending")
        }
        return Response(status: .noContent)
    }

    func codeParameter(_ context: Context) throws -> String {
        guard let code = context.parameters.get("code"), LinkCode.isValid(code) else {
            throw APIError.badRequest("a link code is 10 characters of 0-9 and A-Z without I, L, O, U")
        }
        return code
    }
}
