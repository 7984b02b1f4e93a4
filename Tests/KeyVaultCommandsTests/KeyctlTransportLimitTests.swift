import Foundation
import KeyVault
@testable import KeyVaultCommands
import KeyVaultTestSupport
import Testing

// Issue 8 item 7 for keyctl's own transport (AsyncHTTPClient): a dishonest server cannot
// make it hold more of an answer than the exchange takes, whether by sending more or by
// declaring more (keyctl makes room for a declared length, issue 21: never past the limit).

private func send(to server: FloodServer, limit: Int) async throws -> HTTPReply {
    try await KeyctlTransport(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, certificateAuthority: nil, allowInsecureHTTP: true)
        .send(HTTPExchange(method: "GET", target: "/v1/big", maxReplyBytes: limit))
}

@Test(.timeLimit(.minutes(10)))
func keyctlsTransportHoldsNoMoreOfAnAnswerThanItsLimit() async throws {
    // Small sizes: the answers are read on the shared thread pool, which a whole suite
    // running beside this test can keep busy long enough to time a long read out.
    let limit = 64 << 10
    // Sent without a length, 4 times the limit: refused while reading.
    let streaming = try FloodServer(head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
                                    bodyBytes: 4 * limit)
    await #expect { try await send(to: streaming, limit: limit) } throws: { ($0 as? KeyVaultError)?.code == .responseTooLarge }

    // A length of 100 GB declared: no room is made for it (making it would end the
    // process), and the answer is refused as its bytes pass the limit.
    let declared = try FloodServer(head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000000000\r\n\r\n",
                                   bodyBytes: 2 * limit)
    await #expect { try await send(to: declared, limit: limit) } throws: { ($0 as? KeyVaultError)?.code == .responseTooLarge }

    // Within the limit, the answer arrives whole.
    let small = try FloodServer(head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", bodyBytes: 1000)
    let reply = try await send(to: small, limit: limit)
    #expect(reply.status == 200 && reply.body.count == 1000)
}
