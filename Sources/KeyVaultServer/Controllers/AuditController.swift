import Hummingbird

/// The account's audit log, read by its devices.
struct AuditController: Sendable {
    let service: ServiceState

    func addRoutes(to routes: RouteBuilder) {
        routes.signed(.get, "/v1/accounts/{account}/audit", use: audit)
    }

    @Sendable func audit(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let after = Int64(clamping: try request.query("after", as: UInt64.self, "an audit entry id") ?? 0)
        return try .json(["entries": try await service.database.audit(context.account, after: after)])
    }
}
