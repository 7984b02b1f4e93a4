import Foundation
import Hummingbird
import KeyVaultModel

/// The account chain: read by the account's devices, appended to by them.
struct ChainController: Sendable {
    let service: ServiceState

    func addRoutes(to routes: RouteBuilder) {
        routes.signed(.get, "/v1/accounts/{account}/chain", use: chain)
        routes.signed(.post, "/v1/accounts/{account}/chain", use: append)
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

    @Sendable func append(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        try await service.appendVerified(context.account, try decodeBody(AppendRequest.self, from: context.body), by: context.device)
    }
}
