import Hummingbird
import Logging

/// Logs each answered request at debug level by its method, route template
/// (`/v1/accounts/{account}/link-requests/{code}`) and status, never its path: a path
/// carries a link code (the capability of that request's unsigned routes), account ids
/// and content addresses, and the query more. Hummingbird's own request log wrote the
/// whole URI. A refusal is logged by ``ErrorMiddleware`` (its code and route template).
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let response = try await next(request, context)
        context.logger.debug("request", metadata: logFields(of: request, context).merging(["status": .stringConvertible(response.status.code)]) { a, _ in a })
        return response
    }
}

/// A request as the log names it: its method and its route's template (never the path
/// itself, which holds account ids, link codes and content addresses).
func logFields(of request: Request, _ context: some RequestContext) -> Logger.Metadata {
    ["method": .string(request.method.rawValue), "route": .string(context.endpointPath ?? "unmatched")]
}
