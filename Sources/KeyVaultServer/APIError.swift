import Foundation
import Hummingbird
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore

/// Every refusal the service makes: an HTTP status, a stable snake_case code and
/// a message. The body is always `{"error": {"code", "message"}}`.
struct APIError: HTTPResponseError, Sendable {
    let status: HTTPResponse.Status
    let code: String
    let message: String
    /// Extra headers (Retry-After).
    var headers: HTTPFields = [:]

    init(_ status: HTTPResponse.Status, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        let body = try JSONEncoder().encode(ErrorBody(code: code, message: message))
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// The HTTP status for each protocol refusal.
    init(_ error: ProtocolError) {
        let status: HTTPResponse.Status = switch error.code {
        case "stale_chain", "device_exists", "member_exists", "stale_generation": .conflict
        case "unsigned_request", "malformed_signature", "unknown_device", "bad_signature", "stale_timestamp", "replayed_nonce", "unknown_session": .unauthorized
        case "device_revoked", "signer_revoked", "wrong_account", "recovery_compromised": .forbidden
        default: .badRequest
        }
        self.init(status, error.code, error.message)
    }

    static func badRequest(_ message: String) -> APIError { APIError(.badRequest, "bad_request", message) }
    static func notFound(_ what: String) -> APIError { APIError(.notFound, "not_found", "\(what) not found") }
}

/// Turns every error into the JSON error body, so no handler can leak a stack
/// trace or an empty 500, and logs each refusal with the request id (never a body
/// or a header value).
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            context.logger.info("refused", metadata: ["code": .string(error.code), "status": .stringConvertible(error.status.code)])
            throw error
        } catch let error as ProtocolError {
            context.logger.info("refused", metadata: ["code": .string(error.code)])
            throw APIError(error)
        } catch let error as HTTPError {
            let (code, message): (String, String) = switch error.status {
            case .notFound: ("not_found", "no such route: \(request.method.rawValue) \(request.uri.path)")
            case .methodNotAllowed: ("method_not_allowed", "\(request.method.rawValue) is not allowed on \(request.uri.path)")
            case .contentTooLarge: ("payload_too_large", "the request body is larger than this endpoint accepts")
            default: (error.status.reasonPhrase.lowercased().replacingOccurrences(of: " ", with: "_"), error.body ?? error.status.reasonPhrase)
            }
            throw APIError(error.status, code, message)
        } catch let error as StoreError {
            let api: APIError = switch error {
            case .staleChain: APIError(.conflict, "stale_chain", "another device changed the account first; fetch the chain and try again")
            case .accountExists: APIError(.conflict, "account_exists", "that account (or its first device) already exists")
            case .notFound: APIError.notFound("account")
            case .tooManyLinkRequests: APIError(.tooManyRequests, "too_many_link_requests", "too many pending link requests from this address (or on this server); wait for them to expire")
            case .linkRequestClosed: APIError(.conflict, "link_request_closed", "this link request is no longer pending")
            case .linkRequestOutOfTurn: APIError(.conflict, "link_request_out_of_turn", "this link request is not at that step (already answered, not answered yet, or not revealed yet)")
            }
            context.logger.info("refused", metadata: ["code": .string(api.code)])
            throw api
        } catch is DecodingError {
            throw APIError.badRequest("the JSON body does not have the expected fields and types")
        } catch {
            context.logger.error("internal error", metadata: ["type": .string(String(describing: type(of: error)))])
            throw APIError(.internalServerError, "internal", "the server failed to handle this request")
        }
    }
}
