import Foundation
import Hummingbird
import Logging
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore

/// Turns every error into the JSON error body, so no handler can leak a stack
/// trace or an empty 500, and logs each refusal with the request id (never a body
/// or a header value).
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    /// A refusal's log fields: its code, the method and the route's template (``logFields(of:_:)``).
    private func refusal(_ code: String, _ request: Request, _ context: Context) -> Logger.Metadata {
        logFields(of: request, context).merging(["code": .string(code)]) { a, _ in a }
    }

    /// 503 `unavailable` with its `Retry-After`, logged at `level` with what the store said.
    private func unavailable(_ message: String, retryAfter: Int, logged level: Logger.Level, _ log: Logger.Message,
                             store detail: String, _ request: Request, _ context: Context) -> APIError {
        context.logger.log(level: level, log, metadata: refusal(ErrorCode.unavailable.rawValue, request, context)
            .merging(["store": .string(detail)]) { a, _ in a })
        var api = APIError(.unavailable, message)
        api.headers[.retryAfter] = String(retryAfter)
        return api
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            context.logger.info("refused", metadata: refusal(error.code.rawValue, request, context).merging(["status": .stringConvertible(error.status.code)]) { a, _ in a })
            throw error
        } catch let error as ProtocolError {
            context.logger.info("refused", metadata: refusal(error.code.rawValue, request, context))
            throw APIError(error)
        } catch let error as HTTPError {
            throw switch error.status {
            case .notFound: APIError(.notFound, "no such route: \(request.method.rawValue) \(request.uri.path)")
            case .methodNotAllowed: APIError(.methodNotAllowed, "\(request.method.rawValue) is not allowed on \(request.uri.path)")
            case .contentTooLarge: APIError(.payloadTooLarge, "the request body is larger than this endpoint accepts")
            default: APIError(passingOn: error)
            }
        } catch let error as StoreError {
            let api: APIError = switch error {
            case .staleChain: APIError(.staleChain, "another device changed the account first; fetch the chain and try again")
            case .accountExists: APIError(.accountExists, "that account (or its first device) already exists")
            case .accountDeleted(let sequence, _):
                APIError(.accountExists, "that account was deleted from this server at link \(sequence): only a chain that goes on from there founds it here again")
            case .deviceExists: APIError(.deviceExists, "that device is already enrolled in an account; a device joins one account, with keys of its own")
            case .notFound: APIError.notFound("account")
            case .tooManyLinkRequests: APIError(.tooManyLinkRequests, "too many pending link requests from this address (or on this server); wait for them to expire")
            case .tooManyUploads:
                APIError(.rateLimited, "this account has \(KeyVaultDatabase.maxUnfinishedUploads) uploads of other files begun and not complete: run those puts again to finish them, or wait (an unfinished upload is dropped a day after it began)")
            case .linkRequestClosed: APIError(.linkRequestClosed, "this link request is no longer pending")
            case .linkRequestOutOfTurn: APIError(.linkRequestOutOfTurn, "this link request is not at that step (already answered, not answered yet, or not revealed yet)")
            case .usedBefore: APIError.badRequest("a single-use value this request carries was used before")
            }
            context.logger.info("refused", metadata: refusal(api.code.rawValue, request, context))
            throw api
        } catch let error as any StoreContention where error.isContention {
            // Lost a race for a lock (a PostgreSQL transaction ran again first): its write was not made.
            throw unavailable("other writes held what this request needed, and its write was not made: try again",
                              retryAfter: RetryAfter.busy, logged: .notice, "refused: lost a race for a lock",
                              store: error.contentionDetail, request, context)
        } catch let error as any StoreUnreachable where error.isUnreachable {
            // The connection was lost, closed (a lease past its deadline) or not to be had, or the
            // database refused for its resources or as a standby: whether a write was made is not
            // known, so the client is told at once (`down`: not sent again by itself).
            throw unavailable("the service's database did not answer this request (a write it carried may or may not have been made); try again shortly",
                              retryAfter: RetryAfter.down, logged: .warning, "refused: the database did not answer",
                              store: error.unreachableDetail, request, context)
        } catch is DecodingError {
            throw APIError.badRequest("the JSON body does not have the expected fields and types")
        } catch {
            context.logger.error("internal error", metadata: ["type": .string(String(describing: type(of: error)))])
            throw APIError(.internalError, "the server failed to handle this request")
        }
    }
}
