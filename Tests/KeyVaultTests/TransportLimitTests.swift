import Foundation
import KeyVault
import KeyVaultTestSupport
import Testing

// Issue 8 item 7: a dishonest server cannot make the client buffer answers without end.

// Ten minutes, as every time limit here: a hang is what it catches, and under
// ThreadSanitizer (Scripts/tsan.sh) with the whole suite running beside it on two
// cores, tests that take seconds alone have taken over three minutes.
@Test(.timeLimit(.minutes(10)))
func theHTTPTransportStopsReadingAnAnswerLargerThanItsLimit() async throws {
    let limit = 1 << 20
    // Streamed without a length at about 64 MB/s, 1024 times the limit: refused while
    // reading, long before the end. (Unpaced, on loopback, URLSession reads on for a
    // while after the cancel; what it reads then is dropped, never kept.)
    let streaming = try FloodServer(head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
                                    bodyBytes: 1024 * limit, pause: 1000)
    let transport = URLSessionTransport(baseURL: URL(string: "http://127.0.0.1:\(streaming.port)")!)
    do {
        _ = try await transport.send(HTTPExchange(method: "GET", target: "/v1/big", maxReplyBytes: limit))
        Issue.record("an answer of \(1024 * limit) bytes was accepted under a limit of \(limit)")
    } catch let error as KeyVaultError {
        #expect(error.code == .responseTooLarge && error.message.contains("\(limit)"), "\(error.message)")
    }
    // The transfer stops: the server's count settles (its sends fail once the client
    // has hung up), far short of the whole answer. How far past the limit it got
    // depends on how soon URLSession acts on the cancel, not on the answer's size.
    var settled = streaming.sent.withLock { $0 }
    for _ in 0..<40 {
        try await Task.sleep(for: .milliseconds(250))
        let now = streaming.sent.withLock { $0 }
        if now == settled { break }
        settled = now
    }
    #expect(settled == streaming.sent.withLock { $0 }, "the transport kept reading after it refused the answer")
    #expect(settled < 512 * limit, "the transport read \(settled) bytes of an answer it refused at \(limit)")

    // A declared length above the limit is refused from the headers alone.
    let declared = try FloodServer(head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000000000\r\n\r\n",
                                   bodyBytes: 64 * limit)
    do {
        _ = try await URLSessionTransport(baseURL: URL(string: "http://127.0.0.1:\(declared.port)")!)
            .send(HTTPExchange(method: "GET", target: "/v1/big", maxReplyBytes: limit))
        Issue.record("a declared length of 100 GB was accepted")
    } catch let error as KeyVaultError {
        #expect(error.code == .responseTooLarge, "\(error.message)")
    }

    // Within the limit, the answer arrives whole.
    let small = try FloodServer(head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", bodyBytes: 1000)
    let reply = try await URLSessionTransport(baseURL: URL(string: "http://127.0.0.1:\(small.port)")!)
        .send(HTTPExchange(method: "GET", target: "/v1/small", maxReplyBytes: limit))
    #expect(reply.status == 200 && reply.body.count == 1000)
}

@Test func anOversizedJSONAnswerIsRefusedWithAClearError() async throws {
    try await Fixture.run { fixture, laptop in
        _ = try await laptop.api.devices()
        let size = ServerAPI.maxJSONReplyBytes + 1
        fixture.transport.tamper { request, reply in
            guard request.target.contains("/devices") else { return }
            reply.body = Array(#"{"devices":[],"padding":""#.utf8) + [UInt8](repeating: 0x61, count: size) + Array(#""}"#.utf8)
        }
        await expectRefusal("response_too_large", kind: .network) { _ = try await laptop.api.devices() }
        do {
            _ = try await laptop.api.devices()
        } catch let error as KeyVaultError {
            #expect(error.message.contains("\(ServerAPI.maxJSONReplyBytes)") || error.message.contains("MiB"), "\(error.message)")
        }
    }
}
