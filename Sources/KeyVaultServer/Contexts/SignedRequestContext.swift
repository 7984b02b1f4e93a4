import Hummingbird
import KeyVaultModel
import KeyVaultStore

/// The context of a signed route: it exists only once ``SignatureMiddleware`` has
/// verified the request, so a handler that takes one cannot forget to authenticate.
struct SignedRequestContext: ChildRequestContext {
    var coreContext: CoreRequestContextStorage
    /// The account in the path; the device belongs to it.
    let account: AccountID
    /// The device that signed the request, not revoked.
    let device: StoredDevice
    /// The account's head as the request's nonce statement saw it, when the store reads it
    /// there (PostgreSQL): ``KeyVaultRepository/deviceBoxesJSON(_:recipient:seen:)``.
    let head: HeadSeen?
    /// The body, read within the route's limit: the bytes the signature covers.
    let body: [UInt8]

    init(context: KeyVaultRequestContext) throws {
        // Only reachable through a route added without the middleware: a bug, never input.
        guard let caller = context.caller else { throw APIError(.internalError, "the server failed to handle this request") }
        coreContext = context.coreContext
        account = caller.account
        device = caller.device
        head = caller.head
        body = caller.body
    }
}
