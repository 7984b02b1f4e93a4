import Hummingbird

/// One route of the API, as docs/api.md and openapi.json describe it.
struct APIRoute: Sendable {
    let method: HTTPRequest.Method
    /// OpenAPI form: `/v1/accounts/{account}`.
    let path: String
    /// Whether the request must carry a device signature.
    let signed: Bool
}

/// Where the controllers add their routes. An open route gets the request as it
/// comes; a signed one is reached only through ``SignatureMiddleware`` (with the
/// route's body limit) and gets a ``SignedRequestContext``. Every route is also
/// recorded in ``routes``, which a test matches against openapi.json.
final class RouteBuilder {
    typealias Handler<Context> = @Sendable (Request, Context) async throws -> Response
    private let router: Router<KeyVaultRequestContext>
    private let authenticator: Authenticator
    private let defaultBodyLimit: Int
    private(set) var routes: [APIRoute] = []

    init(router: Router<KeyVaultRequestContext>, authenticator: Authenticator, defaultBodyLimit: Int) {
        self.router = router
        self.authenticator = authenticator
        self.defaultBodyLimit = defaultBodyLimit
    }

    /// A route anyone may call; the handler checks whatever capability it needs.
    func open(_ method: HTTPRequest.Method, _ path: String, use handler: @escaping Handler<KeyVaultRequestContext>) {
        routes.append(APIRoute(method: method, path: path, signed: false))
        router.on(Self.routerPath(path), method: method, use: handler)
    }

    /// A route only a device of the account in the path may call.
    /// - Parameters:
    ///   - bodyLimit: the most body bytes read (default: the configuration's JSON limit).
    ///   - acceptsSessions: false where only an Ed25519 signature will do.
    func signed(_ method: HTTPRequest.Method, _ path: String, bodyLimit: Int? = nil, acceptsSessions: Bool = true,
                use handler: @escaping Handler<SignedRequestContext>) {
        routes.append(APIRoute(method: method, path: path, signed: true))
        router.group()
            .add(middleware: SignatureMiddleware(authenticator: authenticator, bodyLimit: bodyLimit ?? defaultBodyLimit,
                                                 acceptsSessions: acceptsSessions))
            .group(context: SignedRequestContext.self)
            .on(Self.routerPath(path), method: method, use: handler)
    }

    /// `/v1/accounts/{account}` → `/v1/accounts/:account`.
    private static func routerPath(_ path: String) -> RouterPath {
        RouterPath(path.replacingOccurrences(of: "{", with: ":").replacingOccurrences(of: "}", with: ""))
    }
}
