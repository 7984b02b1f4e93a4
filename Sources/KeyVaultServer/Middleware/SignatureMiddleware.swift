import Hummingbird
import KeyVaultModel

/// Authenticates a signed route: judges who the request claims to be (an enrolled device
/// of the account, or its session) before reading a byte of the body, reads the body
/// within the route's limit, checks the request signature (or session MAC) against it,
/// and hands the route a
/// ``SignedRequestContext`` (through ``KeyVaultRequestContext/caller``).
struct SignatureMiddleware: RouterMiddleware {
    typealias Context = KeyVaultRequestContext
    let authenticator: Authenticator
    let bodyLimit: Int
    /// false: only an Ed25519-signed request passes, not a session's (opening a session).
    let acceptsSessions: Bool

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if !acceptsSessions, request.headers[Headers.session] != nil {
            throw APIError(.signatureRequired, "open a session with an Ed25519-signed request, not from another session")
        }
        let account = try context.parameters.account()
        // Who it claims to be first: a stranger is refused before its body is read.
        let claimant = try await authenticator.claimant(request, account: account)
        let body = try await request.collectBody(limit: bodyLimit)
        var context = context
        context.caller = try await authenticator.authenticate(claimant, request, body: body)
        return try await next(request, context)
    }
}
