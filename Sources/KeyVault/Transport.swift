import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// One HTTP exchange, as the client sees it.
public struct HTTPExchange: Sendable {
    public var method: String
    /// Path and query, e.g. `/v1/accounts/…/chain?after=3`.
    public var target: String
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// The largest answer body the client takes; a transport stops reading beyond it
    /// (a dishonest server could otherwise make the client buffer without end).
    public var maxReplyBytes: Int

    /// The limit of an exchange that names none: a JSON answer.
    public static let defaultMaxReplyBytes = 8 << 20

    public init(method: String, target: String, headers: [(String, String)] = [], body: [UInt8] = [],
                maxReplyBytes: Int = HTTPExchange.defaultMaxReplyBytes) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.maxReplyBytes = maxReplyBytes
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

/// How requests reach the server: ``URLSessionTransport`` by default; tests put a
/// tampering double in between to play a dishonest server.
///
/// An app's own transport takes over two duties of the default one: refuse plain
/// `http://` to anything but this machine (everything KeyVault sends is signed, but
/// its metadata is not secret from the network otherwise), and stop reading an
/// answer at the exchange's `maxReplyBytes` (KeyVault checks the size again, but
/// only after the transport has buffered it). `send` is called concurrently (an
/// attachment's chunks go a few at a time), and should honour task cancellation.
public protocol HTTPTransport: Sendable {
    /// - Throws: `response_too_large` for an answer beyond `request.maxReplyBytes`.
    func send(_ request: HTTPExchange) async throws -> HTTPReply
}

extension KeyVaultError {
    /// An answer beyond the limit the client set for it (`response_too_large`): what
    /// a transport of the app's own throws for a reply past `maxReplyBytes`.
    public static func tooLarge(_ limit: Int, _ what: String) -> KeyVaultError {
        KeyVaultError(.responseTooLarge, "the server's answer to \(what) is larger than the \(limit) bytes (\(limit >> 20) MiB) the client accepts for it; it was not read")
    }
}

/// HTTP(S) through Foundation's URLSession.
///
/// Plain `http://` is refused to anything but this machine (127.0.0.0/8, ::1,
/// localhost) unless `allowInsecureHTTP`.
/// Answers are read as they arrive and refused past the exchange's `maxReplyBytes`;
/// redirects are not followed (the KeyVault API has none, and one could lead to plain HTTP).
public struct URLSessionTransport: HTTPTransport {
    public let baseURL: URL
    public let allowInsecureHTTP: Bool
    let timeout: TimeInterval
    /// One session for every exchange of this transport (and its copies): connections
    /// are kept open and used again, instead of one connection per request.
    private let sessions: SessionOwner

    public init(baseURL: URL, timeout: TimeInterval = 30, allowInsecureHTTP: Bool = false) {
        self.baseURL = baseURL
        self.timeout = timeout
        self.allowInsecureHTTP = allowInsecureHTTP
        sessions = SessionOwner(SharedSession(timeout: timeout))
    }

    /// Whether `url` names this machine: an IPv4 address in 127.0.0.0/8, `::1`, or `localhost`.
    package static func isLoopback(_ url: URL) -> Bool {
        guard var host = url.host?.lowercased() else { return false }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) } == [UInt8](repeating: 0, count: 15) + [1]
        }
        return false
    }

    /// Refuses plain HTTP to anything but this machine unless `allowInsecureHTTP`.
    ///
    /// Over plain HTTP the server's host and anyone on the path read every request's
    /// metadata (account, device, times, sizes) and can rewrite answers; a device-link
    /// exchange in particular must not cross a network in the clear.
    ///
    /// - Throws: `insecure_http` (kind input).
    public static func checkCleartext(_ url: URL, allowInsecureHTTP: Bool) throws {
        guard url.scheme?.lowercased() == "http", !allowInsecureHTTP, !isLoopback(url) else { return }
        throw KeyVaultError(.insecureHTTP, "refusing plain http:// to \(url.host ?? url.absoluteString): only loopback (127.0.0.0/8, ::1, localhost) is reached without TLS",
                          kind: .input)
    }

    public func send(_ exchange: HTTPExchange) async throws -> HTTPReply {
        try Self.checkCleartext(baseURL, allowInsecureHTTP: allowInsecureHTTP)
        guard let url = URL(string: baseURL.absoluteString.trimmingSuffix("/") + exchange.target) else {
            throw KeyVaultError(.network, "cannot build a URL from \(baseURL) and \(exchange.target)")
        }
        var request = URLRequest(url: url)
        request.httpMethod = exchange.method
        for (name, value) in exchange.headers { request.setValue(value, forHTTPHeaderField: name) }
        if !exchange.body.isEmpty { request.httpBody = Data(exchange.body) }
        let outcome: BoundedReader.Outcome
        do {
            outcome = try await sessions.shared.exchange(request, limit: max(0, exchange.maxReplyBytes))
        } catch let error as KeyVaultError {
            throw error
        } catch {
            throw KeyVaultError(.network, "cannot reach the server at \(baseURL.absoluteString): \(error.localizedDescription)")
        }
        switch outcome {
        case .tooLarge:
            throw KeyVaultError.tooLarge(exchange.maxReplyBytes, "\(exchange.method) \(exchange.target.prefix { $0 != "?" })")
        case .redirected:
            throw KeyVaultError(.badResponse, "the server at \(baseURL.absoluteString) answered with a redirect, which KeyVault never sends")
        case .done(let data, let response):
            guard let http = response as? HTTPURLResponse else {
                throw KeyVaultError(.network, "the server at \(baseURL.absoluteString) did not answer HTTP")
            }
            var headers = [String: String]()
            for (name, value) in http.allHeaderFields {
                if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
            }
            return HTTPReply(status: http.statusCode, headers: headers, body: [UInt8](data))
        }
    }
}

/// Ends the shared session when the last copy of its transport goes (the session holds
/// its delegate until then).
private final class SessionOwner: Sendable {
    let shared: SharedSession
    init(_ shared: SharedSession) { self.shared = shared }
    deinit { shared.invalidate() }
}

/// A URLSession shared by a transport's exchanges, whose delegate hands each task's
/// events to that task's ``BoundedReader``. A reader that must stop its answer for good
/// (too large, a redirect) ends the whole session, as cancelling the task alone lets
/// URLSession read on; the next exchange makes a new one.
private final class SharedSession: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let timeout: TimeInterval
    // All mutable state is behind `lock`: URLSession calls the delegate on its own queue.
    private let lock = NSLock()
    private var session: URLSession?
    private var readers: [ObjectIdentifier: BoundedReader] = [:]

    init(timeout: TimeInterval) { self.timeout = timeout }

    func exchange(_ request: URLRequest, limit: Int) async throws -> BoundedReader.Outcome {
        let reader = BoundedReader(limit: limit)
        let (session, task) = start(request, reader)
        return try await reader.run(task, stop: { [weak self] in self?.end(session) })
    }

    private func start(_ request: URLRequest, _ reader: BoundedReader) -> (URLSession, URLSessionDataTask) {
        lock.withLock {
            let session = self.session ?? {
                let configuration = URLSessionConfiguration.ephemeral
                configuration.timeoutIntervalForRequest = timeout
                configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
                let made = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
                self.session = made
                return made
            }()
            let task = session.dataTask(with: request)
            readers[ObjectIdentifier(task)] = reader
            return (session, task)
        }
    }

    /// Ends `session` for good (its tasks are cancelled); the next exchange makes a new one.
    private func end(_ session: URLSession) {
        lock.lock()
        let current = self.session === session
        if current { self.session = nil }
        lock.unlock()
        if current { session.invalidateAndCancel() }
    }

    func invalidate() {
        lock.lock()
        let session = self.session
        self.session = nil
        lock.unlock()
        session?.finishTasksAndInvalidate()
    }

    private func reader(_ task: URLSessionTask, removing: Bool = false) -> BoundedReader? {
        lock.lock()
        defer { lock.unlock() }
        return removing ? readers.removeValue(forKey: ObjectIdentifier(task)) : readers[ObjectIdentifier(task)]
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        guard let reader = reader(dataTask) else { return completionHandler(.cancel) }
        reader.received(response, dataTask, completionHandler)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive chunk: Data) {
        reader(dataTask)?.received(chunk, dataTask)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        reader(task)?.redirected(task)
        completionHandler(nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        reader(task, removing: true)?.completed(error)
    }
}

/// Reads one answer as it arrives and cancels it past `limit` bytes, so an endless
/// or huge answer costs at most `limit` bytes of memory.
private final class BoundedReader: @unchecked Sendable {
    enum Outcome { case done(Data, URLResponse), tooLarge, redirected }

    let limit: Int
    // All mutable state is behind `lock`: URLSession calls the delegate on its own queue.
    private let lock = NSLock()
    private var data = Data()
    private var response: URLResponse?
    private var stopped: Outcome?
    private var continuation: CheckedContinuation<Outcome, any Error>?
    private var finished: Result<Outcome, any Error>?

    init(limit: Int) { self.limit = limit }

    private var cancelled = false
    /// Ends the session this answer comes through (set by ``run(_:stop:)``).
    private var endSession: (@Sendable () -> Void)?

    func run(_ task: URLSessionDataTask, stop endSession: @escaping @Sendable () -> Void) async throws -> Outcome {
        lock.withLock { self.endSession = endSession }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                lock.lock()
                if let finished {
                    lock.unlock()
                    continuation.resume(with: finished)
                    return
                }
                // Cancelled before it began: URLSession may never report a task cancelled
                // before it was resumed, so it is not begun at all.
                if cancelled {
                    lock.unlock()
                    continuation.resume(throwing: CancellationError())
                    return
                }
                self.continuation = continuation
                lock.unlock()
                task.resume()
            }
        } onCancel: {
            lock.withLock { cancelled = true }
            task.cancel()
        }
    }

    /// Stops the exchange for good: cancelling only the task let URLSession read on
    /// (a test saw a whole gigabyte go by), so the session goes with it.
    private func stop(_ outcome: Outcome, _ task: URLSessionTask) {
        lock.lock()
        let first = stopped == nil
        if first { stopped = outcome }
        data = Data()
        let endSession = self.endSession
        lock.unlock()
        task.cancel()
        if first { endSession?() }
    }

    func received(_ response: URLResponse, _ task: URLSessionDataTask,
                  _ completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        if response.expectedContentLength > Int64(limit) {
            stop(.tooLarge, task)
            completionHandler(.cancel)
            return
        }
        lock.lock()
        self.response = response
        lock.unlock()
        completionHandler(.allow)
    }

    func received(_ chunk: Data, _ task: URLSessionDataTask) {
        lock.lock()
        let over = stopped != nil || data.count + chunk.count > limit
        if !over { data.append(chunk) }
        lock.unlock()
        if over { stop(.tooLarge, task) }
    }

    func redirected(_ task: URLSessionTask) { stop(.redirected, task) }

    func completed(_ error: (any Error)?) {
        lock.lock()
        let result: Result<Outcome, any Error>
        if let stopped {
            result = .success(stopped)
        } else if let error {
            result = .failure(error)
        } else if let response {
            result = .success(.done(data, response))
        } else {
            result = .failure(URLError(.badServerResponse))
        }
        data = Data()
        let continuation = self.continuation
        self.continuation = nil
        if continuation == nil { finished = result }
        lock.unlock()
        continuation?.resume(with: result)
    }
}

extension String {
    package func trimmingSuffix(_ suffix: String) -> String {
        var s = self
        while s.hasSuffix(suffix) { s.removeLast(suffix.count) }
        return s
    }
}
