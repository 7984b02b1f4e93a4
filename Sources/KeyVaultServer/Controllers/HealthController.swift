import Hummingbird

/// The routes about the service itself: health and its API description.
struct HealthController: Sendable {
    func addRoutes(to routes: RouteBuilder) {
        routes.open(.get, "/health", use: health)
        routes.open(.get, "/openapi.json", use: openAPI)
    }

    @Sendable func health(_ request: Request, _ context: KeyVaultRequestContext) async throws -> Response {
        try .json(["status": "ok"])
    }

    /// Compiled into the binary: a resource bundle would be missing beside an installed
    /// keyctl, and `Bundle.module` traps when it is.
    @Sendable func openAPI(_ request: Request, _ context: KeyVaultRequestContext) async throws -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.json)))
    }
}
