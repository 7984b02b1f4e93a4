import Foundation
import KeyVault
import KeyVaultMnemonic
import KeyVaultModel
import KeyVaultTestSupport
import Testing
@testable import KeyVaultCommands

// Issue 8 item 7: server-supplied text is made safe everywhere it reaches a terminal.

/// A server whose refusal carries terminal escape sequences, as far as the client's own checks let it through.
private struct HostileStub: HTTPTransport {
    func send(_ request: HTTPExchange) async throws -> HTTPReply {
        // Its error code is not one the library knows (it arrives as `unrecognized`, the
        // text quoted in the message); its message carries terminal controls.
        let body = ["error": ["code": "evil\u{1B}[31m", "message": "refused: \u{1B}]0;pwned\u{07}\u{1B}[2J\r\u{9B}1A gone, run \u{1B}[8mhidden\u{1B}[0m"]]
        return HTTPReply(status: 400, headers: ["content-type": "application/json"], body: Array(try JSONEncoder().encode(body)))
    }
}

@Test func errorsPrintNoTerminalControlsWhateverTheServerSent() async throws {
    for json in [false, true] {
        let scratch = try TemporaryDirectory("kv-empty")
        let home = scratch.path("home")  // not made: no device lives there yet
        let (code, out, err) = await KeyctlMain.$transport.withValue({ _ in HostileStub() }) {
            await runKeyctl(["init", "--server", "http://127.0.0.1:1", "--name", "laptop", "--yes", "--home", home] + (json ? ["--json"] : []))
        }
        #expect(code != 0)
        #expect(err.contains("gone") && err.contains("hidden"), "\(err)")
        for text in [out, err] {
            #expect(!text.unicodeScalars.contains { $0 != "\n" && $0.properties.generalCategory == .control }, "\(text.debugDescription)")
        }
    }
}
