import Foundation
import HTTPTypes
import Hummingbird
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultStore
import Logging
import ServiceLifecycle

/// Whether the store answered its last check. On PostgreSQL, a request that needs the
/// database waits for a pool connection that will not come while the database is down
/// (a client saw 30 s, then "cannot reach the server"); while this says down, requests
/// are refused at once with 503 `unavailable` and `Retry-After` instead.
final class DatabaseWatch: Sendable {
    private let down = Locked(false)
    var isDown: Bool { down.withLock { $0 } }
    /// - Returns: whether that changed the state.
    @discardableResult
    func set(down now: Bool) -> Bool {
        down.withLock { down in
            let changed = down != now
            down = now
            return changed
        }
    }
}

/// Checks the store every `interval` (a point read, at most `timeout`; three failures in a row are "down") while the
/// service runs, for a store other processes share; logs each change once.
struct DatabaseWatchService: Service {
    /// Throws (or exceeds its time) when the store does not answer.
    let check: @Sendable () async throws -> Void
    let watch: DatabaseWatch
    let logger: Logger
    var interval: Duration = .seconds(1)

    /// Told at each failed check while down (``KeyVaultRepository/storeDoesNotAnswer()``).
    let whileDown: @Sendable () -> Void

    init(database: any KeyVaultRepository, watch: DatabaseWatch, logger: Logger, timeout: Duration = .seconds(3)) {
        self.init(check: { try await HealthController.check(database, within: timeout) }, watch: watch, logger: logger,
                  whileDown: { database.storeDoesNotAnswer() })
    }

    init(check: @escaping @Sendable () async throws -> Void, watch: DatabaseWatch, logger: Logger,
         whileDown: @escaping @Sendable () -> Void = {}) {
        self.check = check
        self.watch = watch
        self.logger = logger
        self.whileDown = whileDown
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            // Down after three checks in a row that fail: one slow read under load is no outage
            // (and 503 for everyone would only add to the load). Up again at the first answer.
            var failures = 0
            while !Task.isCancelled {
                failures = (try? await check()) == nil ? failures + 1 : 0
                let down = failures >= 3
                if down { whileDown() }
                if watch.set(down: down) {
                    if down {
                        logger.error("the database does not answer: requests get 503 until it does")
                    } else {
                        logger.notice("the database answers again")
                    }
                }
                // Cancelled at shutdown: the loop ends, and the service with it, without an error.
                try? await Task.sleep(for: interval)
            }
        }
    }
}

/// 503 at once while the watch says the database is down, but for the routes that do
/// not need it (health, metrics, the API description, the limits).
struct DatabaseGateMiddleware<Context: RequestContext>: RouterMiddleware {
    let watch: DatabaseWatch

    static func needsDatabase(_ path: String) -> Bool {
        !(path.hasPrefix("/health") || path == "/metrics" || path == "/openapi.json" || path == "/v1/limits")
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if watch.isDown, Self.needsDatabase(request.uri.path) {
            var error = APIError(.unavailable, "the service's database does not answer; try again shortly")
            error.headers[.retryAfter] = String(RetryAfter.down)
            throw error
        }
        return try await next(request, context)
    }
}
