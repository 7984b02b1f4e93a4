import Foundation
import Hummingbird
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore

/// Every refusal the service makes: a stable code, a message and the HTTP status
/// the code has in ``ErrorCode/httpStatus``. The body is always `{"error": {"code", "message"}}`.
struct APIError: HTTPResponseError, Sendable {
    let code: ErrorCode
    let message: String
    let status: HTTPResponse.Status
    /// Extra headers (Retry-After).
    var headers: HTTPFields = [:]

    init(_ code: ErrorCode, _ message: String) {
        self.init(code, message, status: code.httpStatus)
    }

    private init(_ code: ErrorCode, _ message: String, status: HTTPResponse.Status) {
        self.code = code
        self.message = message
        self.status = status
    }

    /// A refusal Hummingbird made before any handler ran, with a status the table
    /// may not have: the code is named after the status, which is kept.
    init(passingOn error: HTTPError) {
        self.init(ErrorCode(rawValue: error.status.reasonPhrase.lowercased().replacingOccurrences(of: " ", with: "_")),
                  error.body ?? error.status.reasonPhrase, status: error.status)
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        let body = try JSONEncoder().encode(ErrorBody(code: code, message: message))
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    init(_ error: ProtocolError) { self.init(error.code, error.message) }

    static func badRequest(_ message: String) -> APIError { APIError(.badRequest, message) }
    static func notFound(_ what: String) -> APIError { APIError(.notFound, "\(what) not found") }
}

extension ErrorCode {
    /// The HTTP status of each wire code: the one table (docs/api.md, "Errors").
    /// A code missing here (none of ``ErrorCode/wireCodes`` is) would be a 400.
    static let httpStatuses: [ErrorCode: HTTPResponse.Status] = Dictionary(uniqueKeysWithValues: [
        (HTTPResponse.Status.badRequest, [ErrorCode.badRequest, .malformedLink, .unsupportedVersion, .malformedBox, .malformedSession,
                                          .badReveal, .boxPosition, .wrongGeneration, .malformedAttachment, .unknownSigner,
                                          .unknownRecipient, .noSuchDevice, .unknownMember, .alreadyRevoked, .lastDevice, .weakKDF,
                                          .kdfAboveCeiling]),
        (.unauthorized, [.unsignedRequest, .malformedSignature, .unknownDevice, .badSignature, .staleTimestamp, .replayedNonce,
                         .unknownSession, .badRecoveryProof, .badRecoveryToken]),
        (.forbidden, [.deviceRevoked, .wrongAccount, .wrongSigner, .signerRevoked, .recoveryCompromised, .inviteRequired,
                      .signatureRequired]),
        (.notFound, [.notFound]),
        (.methodNotAllowed, [.methodNotAllowed]),
        (.conflict, [.staleChain, .staleGeneration, .accountExists, .deviceExists, .memberExists, .linkRequestClosed,
                     .linkRequestOutOfTurn]),
        (.contentTooLarge, [.payloadTooLarge]),
        (.tooManyRequests, [.rateLimited, .tooManyLinkRequests]),
        (.internalServerError, [.internalError]),
    ].flatMap { status, codes in codes.map { ($0, status) } })

    var httpStatus: HTTPResponse.Status { Self.httpStatuses[self] ?? .badRequest }
}

/// Turns every error into the JSON error body, so no handler can leak a stack
/// trace or an empty 500, and logs each refusal with the request id (never a body
/// or a header value).
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            context.logger.info("refused", metadata: ["code": .string(error.code.rawValue), "status": .stringConvertible(error.status.code)])
            throw error
        } catch let error as ProtocolError {
            context.logger.info("refused", metadata: ["code": .string(error.code.rawValue)])
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
            case .notFound: APIError.notFound("account")
            case .tooManyLinkRequests: APIError(.tooManyLinkRequests, "too many pending link requests from this address (or on this server); wait for them to expire")
            case .linkRequestClosed: APIError(.linkRequestClosed, "this link request is no longer pending")
            case .linkRequestOutOfTurn: APIError(.linkRequestOutOfTurn, "this link request is not at that step (already answered, not answered yet, or not revealed yet)")
            }
            context.logger.info("refused", metadata: ["code": .string(api.code.rawValue)])
            throw api
        } catch is DecodingError {
            throw APIError.badRequest("the JSON body does not have the expected fields and types")
        } catch {
            context.logger.error("internal error", metadata: ["type": .string(String(describing: type(of: error)))])
            throw APIError(.internalError, "the server failed to handle this request")
        }
    }
}
