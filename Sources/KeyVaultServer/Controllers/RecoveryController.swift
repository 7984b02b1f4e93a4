import Foundation
import Hummingbird
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore

/// Recovery: the account's recovery slot, and enrolling a device with the recovery
/// code (challenge, proof, then one device.add link signed with the recovery key).
/// None of these routes is signed by a device: the recovery key is the capability.
struct RecoveryController: Sendable {
    let service: ServiceState

    func addRoutes(to routes: RouteBuilder) {
        routes.open(.get, "/v1/accounts/{account}/recovery", use: slot)
        routes.open(.post, "/v1/accounts/{account}/recovery/challenge", use: challenge)
        routes.open(.post, "/v1/accounts/{account}/recovery/proof", use: proof)
        routes.open(.post, "/v1/accounts/{account}/recovery/enroll", use: enroll)
    }

    @Sendable func slot(_ request: Request, _ context: KeyVaultRequestContext) async throws -> Response {
        let account = try context.parameters.account()
        guard let slot = try await service.database.recoverySlot(account) else { throw APIError.notFound("recovery slot") }
        return try .json(slot)
    }

    @Sendable func challenge(_ request: Request, _ context: KeyVaultRequestContext) async throws -> Response {
        let account = try context.parameters.account()
        guard let recovery = try await service.chainState(account).recovery else { throw APIError.notFound("recovery code for this account") }
        try Self.refuseIfCompromised(recovery)
        // Never rate limited: a challenge costs this server no memory (``RecoveryGate``),
        // and refusing challenges would refuse the owner's valid proof with them.
        return try .json(try service.recoveryGate.issueChallenge(for: account), status: .created)
    }

    @Sendable func proof(_ request: Request, _ context: KeyVaultRequestContext) async throws -> Response {
        let account = try context.parameters.account()
        let proof = try decodeBody(RecoveryProof.self, from: try await request.collectBody(limit: 4096))
        let chainState = try await service.chainState(account)
        guard let recovery = chainState.recovery else { throw APIError.notFound("recovery code for this account") }
        try Self.refuseIfCompromised(recovery)
        // The proof is checked before any limit: a valid proof passes whatever others
        // did before it; limits count and slow failures only.
        let gate = service.recoveryGate, database = service.database
        // A challenge this service did not issue for this account (or one expired) cannot
        // make any proof pass: refused without counting, so it costs nothing.
        guard gate.wasIssued(challenge: proof.challenge, for: account) else {
            throw APIError(.badRecoveryProof, "the recovery proof does not answer a challenge issued for this account in the last \(RecoveryGate.challengeLifetime) seconds; ask for a new one")
        }
        let signature = base64Decode(proof.signature) ?? []
        let valid = recovery.authKey.isValidSignature(signature, for: RecoveryProofFormat.signedBytes(account: account, challenge: proof.challenge))
        guard valid, try await gate.close(challenge: proof.challenge, for: account) else {
            if let wait = try await gate.countFailure(account: account, client: context.clientBucket) {
                var error = APIError(.rateLimited, "too many failed recovery proofs; try again in \(wait) seconds")
                error.headers[.retryAfter] = String(wait)
                throw error
            }
            try? await database.recordAudit(account, event: .refusedRecoveryProof, device: nil, detail: nil)
            throw APIError(.badRecoveryProof, "the recovery proof does not verify (wrong code, or a reused challenge)")
        }
        guard let stored = try await database.links(account) else { throw APIError.notFound("account") }
        let links = try stored.links.map { try JSONDecoder().decode(ChainLink.self, from: $0.json) }
        let (token, expires) = try gate.issueToken(for: account)
        try? await database.recordAudit(account, event: .recoveryProven, device: nil, detail: nil)
        return try .json(RecoverySession(
            token: token, expires: expires, chain: ChainResponse(account: account, links: links, head: stored.head),
            boxes: try await database.boxes(account, recipient: ChainLink.recoverySigner, generation: nil),
            wraps: try await database.wraps(account, member: nil)))
    }

    @Sendable func enroll(_ request: Request, _ context: KeyVaultRequestContext) async throws -> Response {
        let account = try context.parameters.account()
        let enroll = try decodeBody(RecoveryEnrollRequest.self, from: try await request.collectBody(limit: service.configuration.maxJSONBytes))
        // What can be judged without the chain, before the single-use token is looked at.
        // malformed_link: what the route needs of the link and its boxes together, which no JSON schema states.
        guard enroll.link.type == .deviceAdd, enroll.link.signer == ChainLink.recoverySigner else {
            throw APIError(.malformedLink, "recovery enrollment appends one device.add link signed with the recovery key")
        }
        guard let added = enroll.link.body["device"], enroll.boxes.contains(where: { $0.recipient == added }) else {
            throw APIError(.malformedLink, "an enrollment's device.add comes with a box of the current master key for the device it adds")
        }
        // Spent by the enrollment's write, in its transaction: an enrollment refused (a 4xx)
        // or lost (a 503) leaves it as it was, for a corrected request or the same one again.
        guard let token = service.recoveryGate.validToken(enroll.token, for: account) else { throw Self.badToken }
        do {
            return try await service.appendVerified(account, AppendRequest(link: enroll.link, boxes: enroll.boxes), by: nil, spending: token)
        } catch StoreError.usedBefore {
            throw Self.badToken
        }
    }

    private static let badToken = APIError(.badRecoveryToken, "the enrollment token is unknown, used or expired; prove the recovery code again")

    /// A code whose origin device was revoked opens nothing more (docs/formats/account-chain.md, "History").
    static func refuseIfCompromised(_ recovery: ChainState.Recovery) throws {
        guard let link = recovery.compromised else { return }
        throw APIError(.recoveryCompromised,
                       "this account's recovery code was compromised at link \(link) (the device that set it was revoked); a device of the account must set a new one")
    }
}
