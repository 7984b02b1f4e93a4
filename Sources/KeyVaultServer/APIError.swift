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
                                          .unknownRecipient, .noSuchDevice, .unknownMember, .unknownContact, .unknownGrant,
                                          .alreadyRevoked, .lastDevice, .weakKDF, .kdfAboveCeiling]),
        (.unauthorized, [.unsignedRequest, .malformedSignature, .unknownDevice, .badSignature, .staleTimestamp, .replayedNonce,
                         .unknownSession, .badRecoveryProof, .badRecoveryToken]),
        (.forbidden, [.deviceRevoked, .wrongAccount, .wrongSigner, .signerRevoked, .recoveryCompromised, .inviteRequired,
                      .signatureRequired, .readOnlyGrant, .wrongServer]),
        (.notFound, [.notFound]),
        (.methodNotAllowed, [.methodNotAllowed]),
        (.conflict, [.staleChain, .staleGeneration, .accountExists, .deviceExists, .memberExists, .noIdentity, .contactChanged,
                     .grantExists, .linkRequestClosed, .linkRequestOutOfTurn, .contactRequestClosed, .contactRequestOutOfTurn,
                      .attachmentNamed]),
        (.contentTooLarge, [.payloadTooLarge]),
        (.tooManyRequests, [.rateLimited, .tooManyLinkRequests, .tooManyContactRequests]),
        (.internalServerError, [.internalError]),
        (.serviceUnavailable, [.unavailable]),
    ].flatMap { status, codes in codes.map { ($0, status) } })

    var httpStatus: HTTPResponse.Status { Self.httpStatuses[self] ?? .badRequest }
}
