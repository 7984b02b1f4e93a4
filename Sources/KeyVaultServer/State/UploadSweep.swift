import Hummingbird
import KeyVaultStore
import Logging
import ServiceLifecycle

/// Every hour, the uploads begun more than a day ago and never completed go, for every
/// account (issue 21): a new upload sweeps only its own account's, so an account that
/// never uploads again would otherwise keep what it gave up on. Grants nothing and
/// holds nothing a revocation must end: an unfinished upload is never an attachment.
struct UploadSweepService: Service {
    let database: any KeyVaultRepository
    let logger: Logger
    var interval: Duration = .seconds(3600)

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                // The first sweep an interval after the start: a service restarting often sweeps no more often.
                // Cancelled at shutdown: the loop ends, and the service with it, without an error.
                guard (try? await Task.sleep(for: interval)) != nil, !Task.isCancelled else { return }
                do {
                    let swept = try await database.sweepUnfinishedUploads(before: KeyVaultDatabase.now() - KeyVaultDatabase.unfinishedUploadSeconds)
                    if swept > 0 { logger.info("swept unfinished uploads", metadata: ["uploads": "\(swept)"]) }
                } catch is CancellationError {
                    return
                } catch {
                    logger.warning("the sweep of unfinished uploads failed; it runs again in an hour", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
