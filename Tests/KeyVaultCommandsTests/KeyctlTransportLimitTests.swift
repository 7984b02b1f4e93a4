import Foundation
import KeyVaultTestSupport
import Testing

// Issue 8 item 7 for keyctl's own transport (AsyncHTTPClient), through the real binary:
// a dishonest server cannot make it hold more of an answer than the exchange takes,
// whether by sending more or by declaring more (refused from the headers; under the
// limit keyctl makes room for the declared length, issue 21). `keyctl init`'s first
// request is GET /health, whose answer it takes up to 8 MiB of.

private func initAgainst(_ server: FloodServer) async throws -> ProcessResult {
    let directory = try TemporaryDirectory("kv-flood")
    let result = try await keyctl(["init", "--server", "http://127.0.0.1:\(server.port)", "--name", "x", "--recovery-file", directory.path("code"),
                             "--kdf", "interactive", "--yes", "--home", directory.path("home"), "--insecure-http"])
    #expect(!FileManager.default.fileExists(atPath: directory.path("home")) && !FileManager.default.fileExists(atPath: directory.path("code")),
            "a refused answer left something behind")
    return result
}

@Test(.timeLimit(.minutes(10)))
func keyctlHoldsNoMoreOfAnAnswerThanItsLimit() async throws {
    let limit = 8 << 20
    // Sent without a length, 4 times the limit: refused while reading.
    let streaming = try FloodServer(head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
                                    bodyBytes: 4 * limit)
    let streamed = try await initAgainst(streaming)
    #expect(streamed.code == 2 && streamed.err.contains("larger than the \(limit) bytes"), "\(streamed.err)")

    // A length over the limit declared: refused from the headers, before any body byte
    // (this server sends none and keeps the connection open: reading on would hang for
    // keyctl's 30 s read timeout, and then say the answer broke off).
    let declared = try FloodServer(head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4611686018427387904\r\n\r\n",
                                   bodyBytes: 0, holdOpen: true)
    let start = ContinuousClock.now
    let refused = try await initAgainst(declared)
    #expect(refused.code == 2 && refused.err.contains("larger than the \(limit) bytes"), "\(refused.err)")
    #expect(ContinuousClock.now - start < .seconds(20), "the answer was refused only when the read timed out")
}
