import Foundation
import KeyVaultCrypto
import KeyVaultTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A connection that stops sending (before its first request, in the middle of a body,
/// or between requests) is closed after `KEYVAULT_IDLE_TIMEOUT` seconds: otherwise
/// silent connections pile up until the process runs out of descriptors, and a signed
/// route that judges its claimant before reading the body would wait on it for ever.
@Test(.timeLimit(.minutes(2)))
func aSilentConnectionIsClosedAfterTheIdleTimeoutAndOneThatTalksIsServed() async throws {
    let server = try await RunningServer(environment: ["KEYVAULT_IDLE_TIMEOUT": "1"])

    // The sockets block: they talk on a thread of their own, none of the concurrency pool's.
    let port = server.port
    let (answer, closed) = try await onThreadOfItsOwn { () throws -> ([UInt8]?, [(String, Bool, Duration)]) in
        // Says nothing at all.
        let silent = try LoopbackConnection(port: port)
        // Sends the head of an account's creation and the start of its body, then stalls.
        let stalled = try LoopbackConnection(port: port)
        try stalled.send("POST /v1/accounts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         + "Content-Length: 100000\r\n\r\n{\"chain\": [")
        // Asks for something and gets it, then stays quiet on the kept-open connection.
        let talking = try LoopbackConnection(port: port)
        try talking.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let answer = talking.receiveSome(within: 10)
        let closed = [("silent", silent), ("stalled", stalled), ("talking", talking)].map { name, connection in
            let start = ContinuousClock.now
            return (name, connection.waitForClose(within: 10), ContinuousClock.now - start)
        }
        return (answer, closed)
    }
    #expect(String(decoding: try #require(answer), as: UTF8.self).hasPrefix("HTTP/1.1 200"))
    for (name, wasClosed, took) in closed {
        #expect(wasClosed, "the \(name) connection was not closed within 10 s")
        #expect(took < .seconds(8), "the \(name) connection")
    }
    #expect(await server.stop() == 0)
}

/// One TCP connection to a loopback port, with blocking reads bounded in time.
private final class LoopbackConnection: @unchecked Sendable {
    let socket: Int32

    init(port: Int) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { close(socket); throw POSIXError(.ECONNREFUSED) }
    }

    deinit { close(socket) }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        guard Glibc.send(socket, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw POSIXError(.EPIPE) }
    }

    /// What arrives within `seconds`; nil when nothing does or the peer closed.
    func receiveSome(within seconds: Int) -> [UInt8]? {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = recv(socket, &buffer, buffer.count, 0)
        return n > 0 ? Array(buffer[..<n]) : nil
    }

    /// True when the peer closes (or resets) the connection within `seconds`; whatever
    /// else it sends meanwhile (an error answer) is read and passed over.
    func waitForClose(within seconds: Int) -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while ContinuousClock.now < deadline {
            var timeout = timeval(tv_sec: 1, tv_usec: 0)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let n = recv(socket, &buffer, buffer.count, 0)
            if n == 0 { return true }
            if n < 0, errno != EAGAIN, errno != EWOULDBLOCK, errno != EINTR { return true }
        }
        return false
    }
}
