#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultPostgres
import KeyVaultStore
import KeyVaultTestSupport
import Testing
@testable import KeyVaultServer

// PostgreSQL that stops answering without closing anything (its host gone without a word,
// a failover, a path through a firewall that dropped the connection's state): a request
// waiting on it is answered 503 `unavailable` once its connection's lease is past the
// deadline (10 s here), instead of waiting until the kernel gives up on the connection
// (about 15 minutes, for every connection of the pool in turn). The connection is closed,
// and the next request is served on a new one. The readiness check says 503 at its own
// 3 s meanwhile.

@Test func onPostgreSQLARequestPostgreSQLStopsAnsweringIsAnswered503AtTheDeadlineAndTheNextIsServed() async throws {
    guard case .postgres(let url)? = StoreBackend.all.first(where: \.isShared),
          case .socket(let directory, let port) = url.endpoint else { return }
    let proxy = try SilencingProxy(upstream: directory + "/.s.PGSQL.\(port)")
    defer { proxy.close() }
    let through = {
        var through = url
        through.endpoint = .socket(directory: proxy.directory.path, port: SilencingProxy.port)
        return through
    }()
    // Outside the test's own task: a store that waits for the silent connection for ever
    // (its pool too, when it stops) fails the test rather than hang the run.
    let ended = await within(seconds: 90) { () -> Bool in
        do {
            try await PostgresKeyVaultDatabase.withTemporarySchema(through, statementDeadline: .seconds(10)) { database in
                try await testApplication(database: database).test(.router) { client in
                    let phone = TestDevice("phone")
                    var state = try await client.createAccount(phone)
                    let member = try await client.addMember(phone, &state)
                    let list = "/v1/accounts/\(state.account)/members/\(member)/attachments"
                    #expect(try await client.signed(phone, .get, list).status == .ok)
                    // Connections open and idle in the pool, as a service keeps them: what goes
                    // silent is a connection in use (a new one would wait in its startup for the
                    // pool's own connect timeout and retries instead, about a minute).
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for _ in 0..<4 { group.addTask { try await database.client.query("SELECT pg_sleep(0.3)") } }
                        try await group.waitForAll()
                    }

                    proxy.silence()
                    // The readiness check answers at its own 3 s, without waiting for the read it left.
                    let ready = await within(seconds: 7) { try? await client.execute(uri: "/health/ready", method: .get) }
                    #expect(ready??.status == .serviceUnavailable, "readiness: \(String(describing: ready??.status))")
                    let stalled = await within(seconds: 40) { try? await client.signed(phone, .get, list) }
                    proxy.speak()
                    switch stalled {
                    case nil: Issue.record("no answer within 40 s")
                    case .some(nil): Issue.record("the request threw instead of being answered")
                    case .some(let response?):
                        #expect(response.status == .serviceUnavailable, "\(response.status)")
                        #expect(errorCode(response) == "unavailable")
                        // Its own statement's failure, not the gate the database watch closes later.
                        #expect(String(buffer: response.body).contains("did not answer this request"), "\(String(buffer: response.body))")
                        // Told at once: the client does not send it again by itself (its outcome is unknown).
                        #expect(response.headers[.retryAfter] == String(RetryAfter.down))
                    }
                    // Served again once the database watch sees it answer (it checks every second;
                    // meanwhile the gate it closed answers 503 at once).
                    var after = try await client.signed(phone, .get, list)
                    for _ in 0..<40 where after.status == .serviceUnavailable {
                        try await Task.sleep(for: .milliseconds(500))
                        after = try await client.signed(phone, .get, list)
                    }
                    #expect(after.status == .ok, "\(after.status): \(String(buffer: after.body))")
                }
            }
        } catch {
            Issue.record(error)
        }
        return true
    }
    #expect(ended != nil, "the store did not stop within 90 s")
}

/// A stand-in for PostgreSQL's socket that passes bytes both ways until silenced. From
/// then on, every connection that carries a byte goes silent for good: what it is sent is
/// dropped, nothing comes back, and it is never closed from this side. Connections made
/// after ``speak()`` pass bytes again.
final class SilencingProxy: Sendable {
    static let port = 5432
    let directory: TemporaryDirectory
    private let listener: Int32
    private let upstream: String
    private let silent = Locked(false)
    /// Signalled when the accepting thread has ended (after ``close()``'s shutdown).
    private let acceptEnded = DispatchSemaphore(value: 0)

    struct Refused: Error { let call: String }

    init(upstream: String) throws {
        directory = try TemporaryDirectory("pg-proxy")
        self.upstream = upstream
        listener = try Self.socket(at: directory.path(".s.PGSQL.\(Self.port)"), listening: true)
        guard listen(listener, 64) == 0 else {
            _ = systemClose(listener)
            throw Refused(call: "listen")
        }
        Thread.detachNewThread { [self] in
            acceptAll()
            acceptEnded.signal()
        }
    }

    func silence() { silent.withLock { $0 = true } }
    func speak() { silent.withLock { $0 = false } }

    /// Stops taking connections: `shutdown` wakes the `accept` under way, and the socket is
    /// closed once that thread has ended (its number cannot be reused under it).
    func close() {
        shutdown(listener, Int32(SHUT_RDWR))
        acceptEnded.wait()
        _ = systemClose(listener)
    }

    private func acceptAll() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            guard let server = try? Self.socket(at: upstream, listening: false) else {
                _ = systemClose(client)
                continue
            }
            let stuck = Locked(false), ended = Locked(0)
            for (from, to) in [(client, server), (server, client)] {
                Thread.detachNewThread { [self] in
                    pump(from, to, stuck)
                    // One direction ended (a side closed): end the other, close both once both ended.
                    shutdown(client, Int32(SHUT_RDWR))
                    shutdown(server, Int32(SHUT_RDWR))
                    if ended.withLock({ $0 += 1; return $0 }) == 2 {
                        _ = systemClose(client)
                        _ = systemClose(server)
                    }
                }
            }
        }
    }

    private func pump(_ from: Int32, _ to: Int32, _ stuck: Locked<Bool>) {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            if silent.withLock({ $0 }) { stuck.withLock { $0 = true } }
            if stuck.withLock({ $0 }) { continue }
            var sent = 0
            while sent < count {
                let written = buffer.withUnsafeBytes { write(to, $0.baseAddress! + sent, count - sent) }
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return }
                sent += written
            }
        }
    }

    private static func socket(at path: String, listening: Bool) throws -> Int32 {
        #if canImport(Glibc)
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = Darwin.socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw Refused(call: "socket") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            _ = systemClose(fd)
            throw Refused(call: "a socket path of \(bytes.count) bytes")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { listening ? bind(fd, $0, length) : connect(fd, $0, length) }
        }
        guard result == 0 else {
            _ = systemClose(fd)
            throw Refused(call: listening ? "bind" : "connect")
        }
        return fd
    }
}

private func systemClose(_ fd: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.close(fd)
    #else
    Darwin.close(fd)
    #endif
}
