import Foundation
import Hummingbird
import KeyVaultModel
import KeyVaultProtocol

/// The account chain: read by the account's devices, appended to by them.
struct ChainController: Sendable {
    let service: ServiceState

    func addRoutes(to routes: RouteBuilder) {
        routes.signed(.get, "/v1/accounts/{account}/chain", use: chain)
        routes.signed(.post, "/v1/accounts/{account}/chain", use: append)
        routes.signed(.post, "/v1/accounts/{account}/head-statements", bodyLimit: 4096, use: putHeadStatement)
    }

    @Sendable func chain(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        try await chain(of: context.account, request)
    }

    /// The account's chain from the `after` query parameter on: the caller's own, or
    /// a contact's for an account it pins (SharingController, once it checked the pin).
    func chain(of account: AccountID, _ request: Request) async throws -> Response {
        let after = try request.query("after", as: UInt64.self, "a link sequence number")
        guard let stored = try await service.database.links(account, after: after) else { throw APIError.notFound("account") }
        let links = try stored.links.map { try JSONDecoder().decode(ChainLink.self, from: $0.json) }
        return try .json(ChainResponse(account: account, links: links, head: stored.head))
    }

    /// A device's statement of the head it just read (docs/formats/head-statement.md):
    /// its own, of the head the server holds now, signed, dated within the signature window.
    @Sendable func putHeadStatement(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let statement = try decodeBody(HeadStatement.self, from: context.body)
        guard statement.account == context.account, statement.device == context.device.id else {
            throw APIError(.wrongSigner, "a device states only its own account's head, as itself")
        }
        guard statement.version == 1 else { throw ProtocolError(.unsupportedVersion, "head statement version \(statement.version) is not supported") }
        let state = try await service.chainState(context.account)
        guard statement.sequence == state.sequence, statement.head == state.head else {
            throw ProtocolError(.staleChain, "the statement names link \(statement.sequence), but the head is at \(state.sequence); fetch the chain and state it again")
        }
        guard let key = state.devices[context.device.id]?.signingKey, statement.isSigned(by: key) else {
            throw APIError(.badSignature, "the head statement's signature does not verify under this device's key")
        }
        // Compared without subtracting the sender's value, which may be anything an Int64 holds.
        let now = RecoveryGate.now(), window = service.configuration.signatureWindowSeconds
        guard statement.time >= now - window, statement.time <= now + window else {
            throw APIError(.staleTimestamp, "the head statement is dated \(statement.time), outside the server's window of \(window) s")
        }
        try await service.database.putHeadStatement(statement)
        return Response(status: .noContent)
    }

    @Sendable func append(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        try await service.appendVerified(context.account, try decodeBody(AppendRequest.self, from: context.body), by: context.device)
    }
}
