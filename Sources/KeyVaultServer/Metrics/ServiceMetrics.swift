import CoreMetrics
import Hummingbird
import Prometheus

/// What `GET /metrics` shows, in Prometheus' text format.
///
/// The metrics go through swift-metrics' API into a Prometheus registry of this
/// application's own, not into swift-metrics' process-wide bootstrap: every
/// application in a process (the tests make many) then counts only its own requests.
///
/// Labels are bounded and say nothing about a caller: a route is its template
/// (`/v1/accounts/{account}/chain`, never the path with the account in it), a method
/// outside the usual few is `other`, a refusal is its wire error code.
final class ServiceMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private let inFlight: CoreMetrics.Meter

    init() {
        factory = PrometheusMetricsFactory(registry: registry)
        inFlight = CoreMetrics.Meter(label: "keyvault_http_requests_in_flight", factory: factory)
    }

    /// The exposition, `text/plain; version=0.0.4`.
    func exposition() -> [UInt8] { registry.emitToBuffer() }

    /// Around one request: in flight until `finish` is called.
    func started() -> ContinuousClock.Instant {
        inFlight.increment()
        return .now
    }

    /// A request answered with `status`; `refusal` is the wire error code when it was refused.
    func finished(_ method: HTTPRequest.Method, route: String?, status: HTTPResponse.Status, refusal: String?,
                  since start: ContinuousClock.Instant) {
        inFlight.decrement()
        let method = Self.knownMethods.contains(method) ? method.rawValue : "other"
        let route = route ?? "NotFound"
        CoreMetrics.Counter(label: "keyvault_http_requests_total",
                dimensions: [("method", method), ("route", route), ("status", String(status.code))], factory: factory).increment()
        CoreMetrics.Timer(label: "keyvault_http_request_duration_seconds", dimensions: [("method", method), ("route", route)], factory: factory)
            .recordInterval(since: start)
        if let refusal {
            CoreMetrics.Counter(label: "keyvault_refusals_total", dimensions: [("code", refusal)], factory: factory).increment()
        }
    }

    /// The most connections the PostgreSQL pool opens (postgres-nio reports no use of
    /// its pool: its observability delegate only logs, at debug level).
    func databasePool(maximumConnections: Int) {
        CoreMetrics.Gauge(label: "keyvault_database_pool_max_connections", dimensions: [("backend", "postgresql")], factory: factory)
            .record(maximumConnections)
    }

    /// Each readiness check's outcome: 1 the database answered, 0 it did not.
    func databaseReady(_ ready: Bool) {
        CoreMetrics.Gauge(label: "keyvault_database_ready", factory: factory).record(ready ? 1 : 0)
    }

    private static let knownMethods: Set<HTTPRequest.Method> = [.get, .head, .post, .put, .patch, .delete, .options]
}

extension CoreMetrics.Timer {
    fileprivate func recordInterval(since start: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - start
        let (seconds, attoseconds) = elapsed.components
        recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

/// Counts every request by method, route template and status, times it, and counts
/// refusals by their error code. It stands outside ``ErrorMiddleware``, so it sees the
/// ``APIError`` that every failure has become.
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: ServiceMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = metrics.started()
        do {
            let response = try await next(request, context)
            metrics.finished(request.method, route: context.endpointPath, status: response.status, refusal: nil, since: start)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            let code = (error as? APIError)?.code.rawValue ?? "internal_error"
            metrics.finished(request.method, route: context.endpointPath, status: status, refusal: code, since: start)
            throw error
        }
    }
}
