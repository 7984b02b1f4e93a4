import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import KeyVaultCrypto
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// Hummingbird's `Application`, run without its date cache service.
///
/// That service ticks once a second through ServiceLifecycle's
/// `cancelOnGracefulShutdown()`, which is swift-async-algorithms' `merge`: the
/// only `merge` in `keyctl serve`. `merge` takes its lock and releases it inside a
/// continuation's closure, which Swift 6.0–6.3 may run later, from the executor's
/// queue (apple/swift-async-algorithms#430). With NIO's event loops as the global
/// executor (``prepareServerProcess()``), the graceful shutdown's cancellation could
/// then block an event loop on that lock while the job that releases it waited in
/// the same loop's queue: the one hang at exit (docs/evidence.md). Here the `Date`
/// header is made when a response needs it, at most once a second, and nothing in
/// the service group waits on a timer.
struct ServedApplication<Base: ApplicationProtocol>: ApplicationProtocol {
    let base: Base

    var responder: Base.Responder { get async throws { try await base.responder } }
    var server: HTTPServerBuilder { base.server }
    var eventLoopGroup: any EventLoopGroup { base.eventLoopGroup }
    var configuration: ApplicationConfiguration { base.configuration }
    var logger: Logger { base.logger }
    func onServerRunning(_ channel: any Channel) async { await base.onServerRunning(channel) }
    var services: [any Service] { base.services }
    // No `processesRunBeforeServerStart`: the service runs none (Hummingbird's prelude is internal to it).

    /// What Hummingbird's `run()` does (HummingbirdCore's server, each request under its
    /// own request id, a 500 for an error nothing else answered), with ``HTTPDate``.
    func run() async throws {
        precondition(base.processesRunBeforeServerStart.isEmpty, "ServedApplication runs no processes before the server starts")
        let responder = try await self.responder
        let logger = self.logger, serverName = self.configuration.serverName
        let c = configuration
        let http = HummingbirdCore.ServerConfiguration(address: c.address, serverName: c.serverName, backlog: c.backlog, reuseAddress: c.reuseAddress,
                                       availableConnectionsDelegate: c.availableConnectionsDelegate)
        let server = try self.server.buildServer(configuration: http, eventLoopGroup: eventLoopGroup,
                                                 logger: logger) { (request, responseWriter: consuming ResponseWriter, channel) in
            var logger = logger
            logger[metadataKey: "hb.request.id"] = .stringConvertible(RequestID())
            var response: Response
            do {
                response = try await responder.respond(to: request, context: Base.Context(source: .init(channel: channel, logger: logger)))
            } catch let error as HTTPParserError {
                throw error
            } catch {
                logger.debug("Unrecognised Error", metadata: ["error.type": "\(error)"])
                response = Response(status: .internalServerError, body: .init())
            }
            response.headers[.date] = HTTPDate.now()
            if let serverName { response.headers[.server] = serverName }
            do {
                try await responseWriter.write(response: response.head, body: response.body)
            } catch is HTTPParserError {
                throw ParseErrorWhileWritingResponse()  // not the parser's error: that would write another response
            }
        } onServerRunning: {
            await self.onServerRunning($0)
        }
        try await ServiceGroup(configuration: .init(services: services + [server], logger: logger)).run()
    }
}

/// The connection closes without another response.
struct ParseErrorWhileWritingResponse: Error {}

/// The `Date` header's value (RFC 9110 IMF-fixdate), made again only when the second changes.
enum HTTPDate {
    private static let cached = Locked<(second: Int, text: String)>((-1, ""))

    static func now() -> String {
        let second = Int(Date().timeIntervalSince1970)
        if let text = cached.withLock({ $0.second == second ? $0.text : nil }) { return text }
        let text = format(second)
        cached.withLock { $0 = (second, text) }
        return text
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` for `second` since 1970.
    static func format(_ second: Int) -> String {
        var time = time_t(second), parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
