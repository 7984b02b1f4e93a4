import Hummingbird

/// Turns Hummingbird's 404 for a path that exists under other methods into 405
/// `method_not_allowed` with an `Allow` header (RFC 9110, 15.5.6). Hummingbird's
/// router answers 404 for both; this is added after every route, so it wraps only
/// the router's not-found responder and never a handler.
struct MethodNotAllowedMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Each route's path as segments (nil: a parameter, any one segment) and its methods.
    private let paths: [(segments: [Substring?], methods: [HTTPRequest.Method])]

    init(routes: [APIRoute]) {
        var methods: [String: [HTTPRequest.Method]] = [:]
        for route in routes { methods[route.path, default: []].append(route.method) }
        paths = methods.map { path, methods in
            (path.split(separator: "/").map { $0.hasPrefix("{") ? nil : $0 }, methods)
        }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let segments = request.uri.path.split(separator: "/")
            // The router takes a fixed segment over a parameter (`/v1/accounts/import` is not an
            // account): only the paths with the most fixed segments that match say what is allowed.
            let matching = paths.filter { Self.matches(segments, $0.segments) }
            let fixed = matching.map { $0.segments.count { $0 != nil } }.max() ?? 0
            let allowed = Set(matching.filter { $0.segments.count { $0 != nil } == fixed }.flatMap(\.methods)).sorted { $0.rawValue < $1.rawValue }
            guard !allowed.isEmpty else { throw error }
            var refusal = APIError(.methodNotAllowed, "\(request.method.rawValue) is not allowed on \(request.uri.path)")
            refusal.headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
            throw refusal
        }
    }

    private static func matches(_ segments: [Substring], _ pattern: [Substring?]) -> Bool {
        segments.count == pattern.count && zip(segments, pattern).allSatisfy { segment, fixed in fixed.map { $0 == segment } ?? true }
    }
}
