import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import NIOCore
import NIOPosix
import Logging
import KeyVaultStore
import KeyVaultPostgres
import ServiceLifecycle

/// The event loops. After ``prepareServerProcess()`` they also run Swift's tasks,
/// so a request never hops between an event loop thread and the task pool (that
/// hop was the largest cost left per request: Benchmarks/server.sh, BENCHMARKS.md).
private var eventLoops: MultiThreadedEventLoopGroup { .singleton }

/// Makes NIO's event loops Swift's global executor. Call it first thing in a
/// process that will serve, before anything uses Swift concurrency; elsewhere it
/// does nothing useful. Returns false if it was too late.
@discardableResult
package func prepareServerProcess() -> Bool {
    NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
}

/// The router with every controller's routes and the error middleware.
func buildRouter(_ service: ServiceState, metrics: ServiceMetrics = ServiceMetrics()) -> Router<KeyVaultRequestContext> {
    buildRoutes(service, metrics: metrics).router
}

/// The router, and the table of its routes (which a test matches against openapi.json).
func buildRoutes(_ service: ServiceState, metrics: ServiceMetrics = ServiceMetrics()) -> (router: Router<KeyVaultRequestContext>, routes: [APIRoute]) {
    let router = Router(context: KeyVaultRequestContext.self)
    router.add(middleware: RequestMetricsMiddleware(metrics: metrics))  // outside ErrorMiddleware: it sees each refusal's code
    router.add(middleware: ErrorMiddleware())
    router.add(middleware: RequestLogMiddleware())  // method and route template only: no path, query, header values or bodies
    if service.database.isSharedWithOtherProcesses {
        router.add(middleware: DatabaseGateMiddleware(watch: service.databaseWatch))
    }
    if !service.configuration.trustedProxies.isEmpty {
        router.add(middleware: ClientAddressMiddleware(trusted: service.configuration.trustedProxies))
    }
    let routes = RouteBuilder(router: router, authenticator: service.authenticator, defaultBodyLimit: service.configuration.maxJSONBytes)
    HealthController(database: service.database, metrics: metrics, metricsToken: service.configuration.metricsToken,
                     maxAttachmentBytes: service.configuration.maxAttachmentBytes,
                     maxWholeAttachmentBytes: service.configuration.maxWholeAttachmentBytes, instance: service.instance).addRoutes(to: routes)
    AccountController(service: service).addRoutes(to: routes)
    ChainController(service: service).addRoutes(to: routes)
    DeviceController(service: service).addRoutes(to: routes)
    KeyController(service: service).addRoutes(to: routes)
    RecoveryController(service: service).addRoutes(to: routes)
    AuditController(service: service).addRoutes(to: routes)
    LinkRequestController(service: service).addRoutes(to: routes)
    AttachmentController(service: service).addRoutes(to: routes)
    SharingController(service: service).addRoutes(to: routes)
    // Last: it then wraps only the not-found responder, which Hummingbird builds with every middleware.
    router.add(middleware: MethodNotAllowedMiddleware(routes: routes.routes))
    return (router, routes.routes)
}

/// The whole service on `configuration` with a SQLite database: the database opened
/// and migrated, the routes, and graceful shutdown on SIGINT/SIGTERM (through
/// `runService()`). A PostgreSQL URL needs ``runServer(_:logger:onServerRunning:)``,
/// which connects before it listens.
///
/// - Parameter onServerRunning: called with the bound port once the server listens.
/// - Throws: `ConfigurationError` for a bad setting; the database's error when it cannot be opened.
package func buildApplication(
    _ configuration: ServerConfiguration, logger: Logger,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) throws -> some ApplicationProtocol {
    try configuration.validate()
    guard case .sqlite(let path) = try configuration.databaseLocation() else {
        throw ConfigurationError("buildApplication opens SQLite only; runServer connects to PostgreSQL")
    }
    let database = try KeyVaultDatabase.open(path: path)
    return try buildApplication(configuration, database: database, logger: logger, services: [], secret: nil,
                                server: try httpServer(configuration, tls: try configuration.tlsConfiguration()), metrics: ServiceMetrics(),
                                onServerRunning: onServerRunning)
}

/// The same on a given store (tests use an in-memory database), over plain HTTP
/// (``runServer(_:logger:onServerRunning:)`` serves HTTPS). `services` run beside
/// the server (a PostgreSQL store's connection pool).
///
/// - Parameter secret: the replicas' shared secret; nil reads (or makes) the
///   configuration's secret file, or draws one for this process when none is set.
/// - Throws: `ConfigurationError` when the secret file cannot be used.
package func buildApplication(
    _ configuration: ServerConfiguration, database: any KeyVaultRepository, logger: Logger, services: [any Service] = [],
    secret: ServerSecret? = nil,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) throws -> some ApplicationProtocol {
    try buildApplication(configuration, database: database, logger: logger, services: services, secret: secret,
                         server: try httpServer(configuration, tls: nil), metrics: ServiceMetrics(), onServerRunning: onServerRunning)
}

/// HTTP/1.1, inside TLS when `tls` is given, closing connections silent for the configuration's idle timeout.
///
/// - Throws: NIOSSL's error for a configuration it cannot make a context of.
func httpServer(_ configuration: ServerConfiguration, tls: TLSConfiguration?) throws -> HTTPServerBuilder {
    let http1 = HTTPServerBuilder.http1(configuration: .init(idleTimeout: .seconds(Int64(configuration.idleTimeoutSeconds))))
    if let tls { return try .tls(http1, tlsConfiguration: tls) } else { return http1 }
}

/// The same with `metrics` behind `GET /metrics`, on `server`.
func buildApplication(
    _ configuration: ServerConfiguration, database: any KeyVaultRepository, logger: Logger, services: [any Service],
    secret: ServerSecret?, server: HTTPServerBuilder, metrics: ServiceMetrics,
    onServerRunning: @escaping @Sendable (Int) async -> Void
) throws -> some ApplicationProtocol {
    let state = try ServiceState(configuration: configuration, database: database, secret: try secret ?? configuration.secret())
    let router = buildRouter(state, metrics: metrics)
    // A shared store is watched: while it does not answer, requests get 503 at once.
    let watching: [any Service] = database.isSharedWithOtherProcesses
        ? [DatabaseWatchService(database: database, watch: state.databaseWatch, logger: logger)] : []
    return ServedApplication(base: Application(
        router: router,
        server: server,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "KeyVault"),
        services: services + watching + [UploadSweepService(database: database, logger: logger)],
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
        eventLoopGroupProvider: .shared(eventLoops),
        logger: logger))
}

/// Builds and runs the service until SIGINT or SIGTERM, then shuts down gracefully.
/// A PostgreSQL database is connected to and migrated before the server listens.
///
/// - Throws: ``ConfigurationError`` before listening (a setting, or the database);
///   afterwards, what the server throws.
package func runServer(_ configuration: ServerConfiguration, logger: Logger,
                      onServerRunning: @escaping @Sendable (Int) async -> Void) async throws {
    try configuration.validate()
    // Before anything is created: a port in use or a host not this machine's stops it here.
    try ListenCheck.check(host: configuration.host, port: configuration.port)
    let location = try configuration.databaseLocation()
    let secret = try configuration.secret()
    let tls = try configuration.tlsConfiguration()
    let server: HTTPServerBuilder
    do {
        server = try httpServer(configuration, tls: tls)
    } catch {
        throw ConfigurationError("\(ServerConfiguration.tlsCertificateSetting): TLS cannot be set up with these files")
    }
    let metrics = ServiceMetrics()
    let database: any KeyVaultRepository
    var services: [any Service] = []
    switch location {
    case .sqlite(let path):
        do {
            database = try KeyVaultDatabase.open(path: path)
        } catch {
            throw ConfigurationError(String(describing: error), kind: .database, database: path)
        }
    case .postgres(let url):
        let postgres = try await PostgresKeyVaultDatabase.connect(url, logger: logger, maximumConnections: postgresPoolSize,
                                                                  keepAllOpen: true)
        database = postgres
        services.append(PostgresStoreService(store: postgres))
        metrics.databasePool(maximumConnections: postgresPoolSize)
    }
    let app = try buildApplication(configuration, database: database, logger: logger, services: services, secret: secret,
                                   server: server, metrics: metrics, onServerRunning: onServerRunning)
    // SIGTERM or SIGINT: requests in flight get `gracefulStopSeconds` to finish, then what
    // is left is cancelled, so a stop never waits for ever (an orchestrator's kill comes later).
    var group = ServiceGroupConfiguration(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
    group.maximumGracefulShutdownDuration = .seconds(gracefulStopSeconds)
    group.maximumCancellationDuration = .seconds(5)
    try await ServiceGroup(configuration: group).run()
    logger.info("stopped", metadata: ["reason": "a signal, or the service's end; requests in flight finished or were cancelled"])
}

/// The PostgreSQL pool, and the watch that closes a connection PostgreSQL stopped answering
/// on (``PostgresKeyVaultDatabase/run()``), for as long as the service runs.
struct PostgresStoreService: Service {
    let store: PostgresKeyVaultDatabase
    func run() async throws { await store.run() }
}

/// How long a stopping service waits for requests in flight before it cancels them.
let gracefulStopSeconds: Int64 = 20

/// The connections one service process keeps open to PostgreSQL.
let postgresPoolSize = 20
