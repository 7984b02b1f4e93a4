import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A one-connection HTTP server on loopback that answers any request with `head`,
/// then streams `bodyBytes` bytes (or until the client hangs up), counting what it sent:
/// the dishonest server both transports are tried against (issue 8, item 7).
package final class FloodServer: Sendable {
    package let port: UInt16
    /// The body bytes sent so far.
    package let sent = Mutex<Int>(0)
    private let listener: Int32

    /// `pause`: microseconds between 64 KiB chunks (a network's pace, not loopback's).
    /// `holdOpen`: after the body, keep the connection open until the client hangs up.
    package init(head: String, bodyBytes: Int, pause: UInt32 = 0, holdOpen: Bool = false) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 4) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        Thread.detachNewThread { [self] in
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            defer { close(connection) }
            var request = [UInt8](), buffer = [UInt8](repeating: 0, count: 4096)
            while !request.ends(with: Array("\r\n\r\n".utf8)) {
                let n = recv(connection, &buffer, buffer.count, 0)
                guard n > 0 else { return }
                request += buffer[..<n]
            }
            let headBytes = Array(head.utf8)
            _ = send(connection, headBytes, headBytes.count, Int32(MSG_NOSIGNAL))
            let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 64 * 1024)
            var total = 0
            while total < bodyBytes {
                let n = send(connection, chunk, min(chunk.count, bodyBytes - total), Int32(MSG_NOSIGNAL))
                guard n > 0 else { return }
                total += n
                sent.withLock { $0 = total }
                if pause > 0 { usleep(pause) }
            }
            // Until the client hangs up (recv sees the end), or 60 s at most.
            if holdOpen {
                var timeout = timeval(tv_sec: 60, tv_usec: 0)
                setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                while recv(connection, &buffer, buffer.count, 0) > 0 {}
            }
        }
    }

    deinit { close(listener) }
}

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
