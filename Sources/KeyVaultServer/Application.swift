import Foundation
import Hummingbird
import NIOCore
import NIOPosix
import Logging
import KeyVaultStore

/// Every route, in one table: the router is built from it and a test matches it
/// against openapi.json, so the two cannot drift apart.
public enum APIRoutes {
    public struct Route: Sendable {
        public let method: HTTPRequest.Method
        /// OpenAPI form: `/v1/accounts/{account}`.
        public let path: String
        /// Whether the request must carry a device signature.
        public let signed: Bool
        let handler: @Sendable (KeyService) -> @Sendable (Request, KeyVaultRequestContext) async throws -> Response
    }

    static let all: [Route] = [
        Route(method: .get, path: "/health", signed: false) { $0.health },
        Route(method: .get, path: "/openapi.json", signed: false) { $0.openAPI },
        Route(method: .post, path: "/v1/accounts", signed: false) { $0.createAccount },
        Route(method: .delete, path: "/v1/accounts/{account}", signed: true) { $0.deleteAccount },
        Route(method: .get, path: "/v1/accounts/{account}/chain", signed: true) { $0.chain },
        Route(method: .post, path: "/v1/accounts/{account}/chain", signed: true) { $0.append },
        Route(method: .get, path: "/v1/accounts/{account}/devices", signed: true) { $0.devices },
        Route(method: .post, path: "/v1/accounts/{account}/sessions", signed: true) { $0.openSession },
        Route(method: .get, path: "/v1/accounts/{account}/boxes", signed: true) { $0.boxes },
        Route(method: .get, path: "/v1/accounts/{account}/wraps", signed: true) { $0.wraps },
        Route(method: .get, path: "/v1/accounts/{account}/recovery", signed: false) { $0.recovery },
        Route(method: .get, path: "/v1/accounts/{account}/audit", signed: true) { $0.audit },
        Route(method: .post, path: "/v1/accounts/{account}/recovery/challenge", signed: false) { $0.recoveryChallenge },
        Route(method: .post, path: "/v1/accounts/{account}/recovery/proof", signed: false) { $0.recoveryProof },
        Route(method: .post, path: "/v1/accounts/{account}/recovery/enroll", signed: false) { $0.recoveryEnroll },
        Route(method: .post, path: "/v1/accounts/{account}/link-requests", signed: false) { $0.createLinkRequest },
        Route(method: .get, path: "/v1/accounts/{account}/link-requests", signed: true) { $0.pendingLinkRequests },
        Route(method: .get, path: "/v1/accounts/{account}/link-requests/{code}", signed: false) { $0.linkRequestStatus },
        Route(method: .post, path: "/v1/accounts/{account}/link-requests/{code}/respond", signed: true) { $0.respondToLinkRequest },
        Route(method: .post, path: "/v1/accounts/{account}/link-requests/{code}/reveal", signed: false) { $0.revealLinkRequest },
        Route(method: .post, path: "/v1/accounts/{account}/link-requests/{code}/approve", signed: true) { $0.approveLinkRequest },
        Route(method: .post, path: "/v1/accounts/{account}/link-requests/{code}/refuse", signed: true) { $0.refuseLinkRequest },
        Route(method: .get, path: "/v1/accounts/{account}/members/{member}/attachments", signed: true) { $0.listAttachments },
        Route(method: .put, path: "/v1/accounts/{account}/members/{member}/attachments/{address}", signed: true) { $0.putAttachment },
        Route(method: .get, path: "/v1/accounts/{account}/members/{member}/attachments/{address}", signed: true) { $0.getAttachment },
        Route(method: .get, path: "/v1/accounts/{account}/members/{member}/attachments/{address}/key", signed: true) { $0.getAttachmentKey },
        Route(method: .put, path: "/v1/accounts/{account}/members/{member}/attachments/{address}/key", signed: true) { $0.putAttachmentKey },
    ]

    /// The (method, path) pairs, for documentation and tests.
    public static var table: [(method: String, path: String)] { all.map { ($0.method.rawValue, $0.path) } }
}

/// The event loops. After ``prepareServerProcess()`` they also run Swift's tasks,
/// so a request never hops between an event loop thread and the task pool (that
/// hop was the largest cost left per request: Benchmarks/server.sh, BENCHMARKS.md).
private var eventLoops: MultiThreadedEventLoopGroup { .singleton }

/// Makes NIO's event loops Swift's global executor. Call it first thing in a
/// process that will serve, before anything uses Swift concurrency; elsewhere it
/// does nothing useful. Returns false if it was too late.
@discardableResult
public func prepareServerProcess() -> Bool {
    NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
}

/// The router with every route and the error middleware.
func buildRouter(_ service: KeyService) -> Router<KeyVaultRequestContext> {
    let router = Router(context: KeyVaultRequestContext.self)
    router.add(middleware: ErrorMiddleware())
    router.add(middleware: LogRequestsMiddleware(.debug))  // method and path only: no header values, no bodies
    if !service.configuration.trustedProxies.isEmpty {
        router.add(middleware: ClientAddressMiddleware(trusted: service.configuration.trustedProxies))
    }
    for route in APIRoutes.all {
        let path = RouterPath(route.path.replacingOccurrences(of: "{", with: ":").replacingOccurrences(of: "}", with: ""))
        let handler = route.handler(service)
        router.on(path, method: route.method) { request, context in try await handler(request, context) }
    }
    return router
}

/// The whole service on `configuration`: the database opened and migrated, the
/// routes, and graceful shutdown on SIGINT/SIGTERM (through `runService()`).
///
/// - Parameter onServerRunning: called with the bound port once the server listens.
/// - Throws: `ConfigurationError` for a bad setting; the database's error when it cannot be opened.
public func buildApplication(
    _ configuration: ServerConfiguration, logger: Logger,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) throws -> some ApplicationProtocol {
    try configuration.validate()
    let database = try KeyVaultDatabase.open(path: configuration.databasePath)
    return buildApplication(configuration, database: database, logger: logger, onServerRunning: onServerRunning)
}

/// The same on a given database (tests use an in-memory one).
public func buildApplication(
    _ configuration: ServerConfiguration, database: KeyVaultDatabase, logger: Logger,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    let router = buildRouter(KeyService(configuration: configuration, database: database))
    return Application(
        router: router,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "KeyVault"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
        eventLoopGroupProvider: .shared(eventLoops),
        logger: logger)
}

/// Why the service could not start.
public enum StartError: Error, Sendable {
    case configuration(String)
    case database(path: String, reason: String)
}

/// Builds and runs the service until SIGINT or SIGTERM, then shuts down gracefully.
///
/// - Throws: `StartError` before listening; afterwards, what the server throws.
public func runServer(_ configuration: ServerConfiguration, logger: Logger,
                      onServerRunning: @escaping @Sendable (Int) async -> Void) async throws {
    do {
        try configuration.validate()
    } catch let error as ConfigurationError {
        throw StartError.configuration(error.message)
    }
    let database: KeyVaultDatabase
    do {
        database = try KeyVaultDatabase.open(path: configuration.databasePath)
    } catch {
        throw StartError.database(path: configuration.databasePath, reason: String(describing: error))
    }
    let app = buildApplication(configuration, database: database, logger: logger, onServerRunning: onServerRunning)
    try await app.runService()
}
