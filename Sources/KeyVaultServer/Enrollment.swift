import Foundation
import Hummingbird
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore

/// Short-lived state of recovery enrolment: single-use challenges, one-enrolment
/// tokens, and failure counts per account and per client address.
actor RecoveryGate {
    static let challengeLifetime: Int64 = 120
    static let tokenLifetime: Int64 = 300
    /// Failed proofs allowed per account, and per client address, in `failureWindow`.
    static let maxFailures = 5
    static let failureWindow: Int64 = 900

    private var challenges: [String: (account: AccountID, expires: Int64)] = [:]
    private var tokens: [String: (account: AccountID, expires: Int64)] = [:]
    private var failures: [String: [Int64]] = [:]

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    func issueChallenge(for account: AccountID) -> RecoveryChallenge {
        sweep()
        let challenge = Hex.encode(SystemRandom.bytes(count: 32))
        let expires = Self.now() + Self.challengeLifetime
        challenges[challenge] = (account, expires)
        return RecoveryChallenge(challenge: challenge, expires: expires)
    }

    /// Seconds to wait, when `account` or `client` has failed too often recently.
    func retryAfter(account: AccountID, client: String) -> Int64? {
        let now = Self.now()
        var wait: Int64?
        for key in ["account:\(account)", "client:\(client)"] {
            let recent = (failures[key] ?? []).filter { now - $0 < Self.failureWindow }
            failures[key] = recent
            if recent.count >= Self.maxFailures, let oldest = recent.first {
                wait = max(wait ?? 0, oldest + Self.failureWindow - now)
            }
        }
        return wait
    }

    func recordFailure(account: AccountID, client: String) {
        sweep()
        let now = Self.now()
        failures["account:\(account)", default: []].append(now)
        failures["client:\(client)", default: []].append(now)
    }

    /// Takes a challenge (single use); false if unknown, expired or for another account.
    func take(challenge: String, for account: AccountID) -> Bool {
        guard let entry = challenges.removeValue(forKey: challenge) else { return false }
        return entry.account == account && entry.expires >= Self.now()
    }

    func issueToken(for account: AccountID) -> (String, Int64) {
        let token = Hex.encode(SystemRandom.bytes(count: 32))
        let expires = Self.now() + Self.tokenLifetime
        tokens[token] = (account, expires)
        return (token, expires)
    }

    /// Takes an enrolment token (single use).
    func take(token: String, for account: AccountID) -> Bool {
        guard let entry = tokens.removeValue(forKey: token) else { return false }
        return entry.account == account && entry.expires >= Self.now()
    }

    /// Drops expired challenges and tokens, and failures older than the window, so
    /// that memory follows recent activity rather than every address ever seen.
    private func sweep() {
        let now = Self.now()
        challenges = challenges.filter { $0.value.expires >= now }
        tokens = tokens.filter { $0.value.expires >= now }
        failures = failures.compactMapValues { times in
            let recent = times.filter { now - $0 < Self.failureWindow }
            return recent.isEmpty ? nil : recent
        }
    }
}

extension KeyService {
    static let linkRequestLifetime: Int64 = 600
    static let maxPendingLinkRequests = 5

    // MARK: Recovery

    func recoveryChallenge(_ request: Request, _ context: Context) async throws -> Response {
        let account = try accountParameter(context)
        guard let recovery = try await state(account).recovery else { throw APIError.notFound("recovery code for this account") }
        try Self.refuseIfCompromised(recovery)
        try await refuseIfThrottled(account, context)
        return try json(await recoveryGate.issueChallenge(for: account), status: .created)
    }

    func recoveryProof(_ request: Request, _ context: Context) async throws -> Response {
        let account = try accountParameter(context)
        try await refuseIfThrottled(account, context)
        let proof = try decode(RecoveryProof.self, from: try await body(request, limit: 4096))
        let chainState = try await state(account)
        guard let recovery = chainState.recovery else { throw APIError.notFound("recovery code for this account") }
        try Self.refuseIfCompromised(recovery)
        let challengeValid = await recoveryGate.take(challenge: proof.challenge, for: account)
        let signature = base64Decode(proof.signature) ?? []
        guard challengeValid,
              recovery.authKey.isValidSignature(signature, for: RecoveryProofFormat.signedBytes(account: account, challenge: proof.challenge))
        else {
            await recoveryGate.recordFailure(account: account, client: context.clientAddress)
            try? await database.recordAudit(account, event: "refused.recovery_proof", device: nil, detail: nil)
            throw APIError(.unauthorized, "bad_recovery_proof", "the recovery proof does not verify (wrong code, or a stale or reused challenge)")
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
            throw APIError(.unauthorized, "bad_recovery_token", "the enrolment token is unknown, used or expired; prove the recovery code again")
        }
        guard enroll.link.type == .deviceAdd, enroll.link.signer == ChainLink.recoverySigner else {
            throw APIError.badRequest("recovery enrolment appends one device.add link signed with the recovery key")
        }
        return try await appendVerified(account, AppendRequest(link: enroll.link, boxes: enroll.boxes), by: nil, context)
    }

    /// A code whose origin device was revoked opens nothing more (docs/formats/account-chain.md, "History").
    static func refuseIfCompromised(_ recovery: ChainState.Recovery) throws {
        guard let link = recovery.compromised else { return }
        throw APIError(.forbidden, "recovery_compromised",
                       "this account's recovery code was compromised at link \(link) (the device that set it was revoked); a device of the account must set a new one (`keyctl recovery rotate`)")
    }

    private func refuseIfThrottled(_ account: AccountID, _ context: Context) async throws {
        if let wait = await recoveryGate.retryAfter(account: account, client: context.clientAddress) {
            var error = APIError(.tooManyRequests, "rate_limited", "too many failed recovery attempts; try again in \(wait) seconds")
            error.headers[.retryAfter] = String(wait)
            throw error
        }
    }

    // MARK: Device links

    func createLinkRequest(_ request: Request, _ context: Context) async throws -> Response {
        let account = try accountParameter(context)
        let create = try decode(LinkRequestCreate.self, from: try await body(request, limit: 4096))
        guard let signingKey = try? Ed25519.PublicKey(rawRepresentation: Hex.decode(create.signingKey)),
              (try? X25519.PublicKey(rawRepresentation: Hex.decode(create.boxKey))) != nil,
              deviceID(for: signingKey) == create.device,
              (try? Hex.decode(create.nonce))?.count == 16,
              (1...100).contains(create.name.count)
        else { throw APIError.badRequest("a link request has hex public keys, the device id derived from the signing key, a 16-byte hex nonce and a 1-100 character name") }
        guard try await state(account).devices[create.device] == nil else {
            throw APIError(.conflict, "device_exists", "that device is already part of this account")
        }
        let code = Self.linkCode()
        let expires = RecoveryGate.now() + Self.linkRequestLifetime
        try await database.createLinkRequest(account, code: code, expires: expires, request: create, limit: Self.maxPendingLinkRequests)
        return try json(LinkRequestInfo(code: code, status: .pending, expires: expires, request: create), status: .created)
    }

    /// The new device polls this (unsigned: it is not enrolled yet); the code is the capability.
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

    func approveLinkRequest(_ request: Request, _ context: Context) async throws -> Response {
        let (account, device, bytes) = try await authenticated(request, context)
        let code = try codeParameter(context)
        guard let info = try await database.linkRequest(account, code: code) else { throw APIError.notFound("link request") }
        guard info.status == .pending else {
            throw APIError(.conflict, "link_request_closed", "this link request is \(info.status.rawValue)")
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
            throw APIError(.conflict, "link_request_closed", "this link request is no longer pending")
        }
        return Response(status: .noContent)
    }

    func codeParameter(_ context: Context) throws -> String {
        guard let code = context.parameters.get("code"), code.count == 10,
              code.unicodeScalars.allSatisfy({ Self.codeAlphabet.unicodeScalars.contains($0) }) else {
            throw APIError.badRequest("a link code is 10 characters of 0-9 and A-Z without I, L, O, U")
        }
        return code
    }

    /// Crockford base32 (no I, L, O, U): 10 characters, 50 bits.
    static let codeAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    static func linkCode() -> String {
        let alphabet = Array(codeAlphabet)
        return String((0..<10).map { _ in alphabet[Int(SystemRandom.uniform(below: 32))] })
    }
}
