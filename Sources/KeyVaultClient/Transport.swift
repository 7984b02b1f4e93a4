import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP exchange, as the client sees it.
public struct HTTPExchange: Sendable {
    public var method: String
    /// Path and query, e.g. `/v1/accounts/…/chain?after=3`.
    public var target: String
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(method: String, target: String, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
    }
}

public struct HTTPReply: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String] = [:], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// How requests reach the server. The real one is HTTP; tests put a tampering
/// double in between to play a dishonest server.
public protocol HTTPTransport: Sendable {
    func send(_ request: HTTPExchange) async throws -> HTTPReply
}

/// HTTP(S) through Foundation's URLSession.
public struct URLSessionTransport: HTTPTransport {
    public let baseURL: URL
    let session: URLSession

    public init(baseURL: URL, timeout: TimeInterval = 30) {
        self.baseURL = baseURL
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration)
    }

    public func send(_ exchange: HTTPExchange) async throws -> HTTPReply {
        guard let url = URL(string: baseURL.absoluteString.trimmingSuffix("/") + exchange.target) else {
            throw ClientError(.network, "cannot build a URL from \(baseURL) and \(exchange.target)")
        }
        var request = URLRequest(url: url)
        request.httpMethod = exchange.method
        for (name, value) in exchange.headers { request.setValue(value, forHTTPHeaderField: name) }
        if !exchange.body.isEmpty { request.httpBody = Data(exchange.body) }
        let data: Data, response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            throw ClientError(.network, "cannot reach the server at \(baseURL.absoluteString): \(error.localizedDescription)",
                              hint: "check that `keyctl serve` is running there and the URL (--server) is right")
        }
        guard let http = response as? HTTPURLResponse else {
            throw ClientError(.network, "the server at \(baseURL.absoluteString) did not answer HTTP")
        }
        var headers = [String: String]()
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return HTTPReply(status: http.statusCode, headers: headers, body: [UInt8](data))
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        var s = self
        while s.hasSuffix(suffix) { s.removeLast(suffix.count) }
        return s
    }
}
