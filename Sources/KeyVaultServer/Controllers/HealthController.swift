import HTTPTypes
import Hummingbird
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultStore
import Logging

/// The routes about the service itself: health, readiness, metrics and its API description.
struct HealthController: Sendable {
    let database: any KeyVaultRepository
    let metrics: ServiceMetrics
    /// Opens /metrics to clients off this machine that send it as a bearer token.
    var metricsToken: String? = nil
    /// What /v1/limits says: the largest attachment object, and the largest put whole.
    var maxAttachmentBytes = ServerConfiguration().maxAttachmentBytes
    var maxWholeAttachmentBytes = ServerConfiguration().maxWholeAttachmentBytes
    /// What /v1/server says.
    var instance = ""
    /// How long a readiness check waits for the database.
    static let readinessTimeout: Duration = .seconds(3)

    func addRoutes(to routes: RouteBuilder) {
        routes.open(.get, "/health", use: health)
        routes.open(.get, "/health/live", use: health)
        routes.open(.get, "/health/ready", use: ready)
        routes.open(.get, "/metrics", use: exposition)
        routes.open(.get, "/openapi.json", use: openAPI)
        routes.open(.get, "/v1/limits", use: limits)
        routes.open(.get, "/v1/server", use: server)
    }

    /// Which service this is (``ServiceState/instance``): public, and it grants nothing;
    /// revocation has nothing to end in it. A dishonest server may name another, which
    /// only makes the deletes signed for it refused here.
    @Sendable func server(_ request: Request, _ context: KeyVaultRequestContext) async throws -> Response {
        try .json(["instance": instance])
    }

    /// The service's limits, for clients to check before they work (public: the
    /// limit is no secret, and grants nothing). A dishonest server could say less than
    /// it takes, which only refuses what it could refuse anyway.
    @Sendable func limits(_ request: Request, _ context: KeyVaultRequestContext) async throws -> Response {
        // maxSharedAttachmentBytes: what a grantee puts through its sharer's relay, in
        // chunks (a server that does not say it takes a grantee's whole only).
        try .json(["maxAttachmentBytes": maxAttachmentBytes, "maxWholeAttachmentBytes": maxWholeAttachmentBytes,
                   "maxSharedAttachmentBytes": maxAttachmentBytes])
    }

    /// The process answers: nothing else is checked (a liveness probe must not fail
    /// because the database is away, or the orchestrator restarts a healthy process).
    @Sendable func health(_ request: Request, _ context: KeyVaultRequestContext) async throws -> Response {
        try .json(["status": "ok"])
    }

    /// The database answers a read within ``readinessTimeout``: 200, else 503 (the
    /// reason goes to the log, not to the caller).
    @Sendable func ready(_ request: Request, _ context: KeyVaultRequestContext) async throws -> Response {
        do {
            try await checkDatabase()
            metrics.databaseReady(true)
            return try .json(["status": "ready"])
        } catch {
            metrics.databaseReady(false)
            context.logger.warning("not ready: the database does not answer", metadata: ["reason": .string(Self.describe(error))])
            return try .json(["status": "unavailable", "database": "unreachable"], status: .serviceUnavailable)
        }
    }

    /// Prometheus' text format, for loopback clients, or any that sends the metrics
    /// token as `Authorization: Bearer TOKEN`; others get 404 (request counts by route
    /// and refusal code are the operator's, not the internet's).
    @Sendable func exposition(_ request: Request, _ context: KeyVaultRequestContext) async throws -> Response {
        let offered = request.headers[.authorization].map { Array($0.utf8) } ?? []
        let allowed = metricsToken.map { constantTimeEquals(offered, Array("Bearer \($0)".utf8)) } ?? false
        // This machine: the socket peer is loopback (or in process), and no proxy on it forwarded the request for someone else.
        let forwarded = Self.forwardingHeaders.contains { request.headers[$0] != nil }
        guard allowed || ((context.peerAddress.map(Self.isLoopback) ?? true) && !forwarded) else {
            throw APIError(.notFound, "metrics are served to this machine, or with the operator's metrics token (KEYVAULT_METRICS_TOKEN)")
        }
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                 body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition())))
    }

    static let forwardingHeaders = [HTTPField.Name("X-Forwarded-For")!, HTTPField.Name("Forwarded")!, HTTPField.Name("X-Real-IP")!]

    /// Whether `address` is this machine's: 127.0.0.0/8, or ::1 (also v4-mapped).
    static func isLoopback(_ address: String) -> Bool {
        guard let bytes = IPNetwork.parse(address) else { return false }
        if bytes.count == 4 { return bytes[0] == 127 }
        let mapped: [UInt8] = Array(repeating: 0, count: 10) + [0xff, 0xff]
        return bytes == Array(repeating: 0, count: 15) + [1] || (Array(bytes.prefix(12)) == mapped && bytes[12] == 127)
    }

    /// Compiled into the binary: a resource bundle would be missing beside an installed
    /// keyctl, and `Bundle.module` traps when it is.
    @Sendable func openAPI(_ request: Request, _ context: KeyVaultRequestContext) async throws -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: PackageResources.openapi_json)))
    }

    /// A point read of a device that cannot exist: a real query on either backend, cheap,
    /// and it reads no account. A pool that cannot connect would wait; the timeout ends it.
    private func checkDatabase() async throws {
        try await Self.check(database, within: Self.readinessTimeout)
    }

    /// A point read of the store, or ``ReadinessTimeout`` after `timeout`, whichever comes
    /// first. A read PostgreSQL never answers is not waited for (a query postgres-nio sent
    /// cannot be cancelled): it is left to end when its connection is closed at its deadline.
    static func check(_ database: any KeyVaultRepository, within timeout: Duration) async throws {
        let answer = Locked<CheckedContinuation<Void, any Error>?>(nil)
        let finish: @Sendable (Result<Void, any Error>) -> Void = { result in
            answer.withLock { waiting in
                waiting?.resume(with: result)
                waiting = nil
            }
        }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            answer.withLock { $0 = continuation }
            let read = Task {
                do {
                    _ = try await database.device(DeviceID(unchecked: "readiness-probe"))
                    finish(.success(()))
                } catch {
                    finish(.failure(error))
                }
            }
            Task {
                try? await Task.sleep(for: timeout)
                finish(.failure(ReadinessTimeout()))
                read.cancel()
            }
        }
    }

    private struct ReadinessTimeout: Error, CustomStringConvertible {
        var description: String { "no answer in time" }
    }

    /// GRDB's and postgres-nio's descriptions quote no statement arguments.
    private static func describe(_ error: any Error) -> String { String(describing: error) }
}
