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

/// Issue 22: the six link digits stayed on screen only for a moment, a new countdown
/// line scrolling them off every second. On a terminal the countdown is one line,
/// rewritten in place, and the digits stay above it.
@Test(.timeLimit(.minutes(10)))
func theLinkCountdownStaysOnOneLineUnderTheDigits() async throws {
    let story = try await Story("link-countdown")
    let created = try await story.run(["init", "--server", story.url, "--name", "laptop", "--recovery-file", story.path("code"), "--yes"], "laptop")
    let account = try #require(created["account"] as? String)
    let console = BufferConsole(terminal: true, awaitingInput: true)
    let link = Task {
        await KeyctlMain.run(["device", "link", "--server", story.url, "--account", account, "--name", "tablet 123", "--poll", "0.1",
                              "--home", story.path("tablet")], console: console)
    }
    func waitUntil(_ ready: () -> Bool) async throws {
        for _ in 0..<1200 where !ready() { try await Task.sleep(for: .milliseconds(25)) }
    }
    try await waitUntil { console.output.contains("keyctl device approve ") }
    let code = try #require(console.output.split(separator: "\n").first { $0.contains("keyctl device approve ") }?
        .split(separator: " ").last.map(String.init))
    // The approver as a person runs it (no --json): what it prints is what the person reads.
    let approver = try BackgroundKeyctl(["device", "approve", code, "--poll", "0.1", "--home", story.path("laptop")])
    try await waitUntil { console.output.contains("Type this code on the other device:") }
    // Several countdown reports go by while the digits wait to be typed.
    try await Task.sleep(for: .milliseconds(2500))
    let digits = try #require(console.output.split(separator: "\n").first { $0.contains("Type this code") }?.split(separator: " ").suffix(2).joined(separator: " "))
    approver.type(digits)
    let approval = await approver.finish()
    #expect(approval.code == 0, "\(approval.err)")
    // The name the request carries is shown with its digits masked (the server relays it).
    #expect(approval.err.contains(#"New device "tablet ###""#) && !approval.err.contains("123"), "\(approval.err)")
    // The code the approver shows once it approved, on a line of its own, typed on the new
    // device (version 4): first one digit off, then right.
    let line = try #require(approval.out.split(separator: "\n").first { $0.hasPrefix("Confirmation code for the new device:  ") },
                            "\(approval.out)")
    let confirmation = String(line.suffix(7))
    #expect(confirmation.count == 7 && confirmation.filter(\.isNumber).count == 6, "\(confirmation)")
    let slip = String(confirmation.prefix(6)) + (confirmation.last == "9" ? "0" : String(Int(String(confirmation.last!))! + 1))
    console.feed(slip + "\n")
    try await waitUntil { console.errorOutput.contains("(try 2 of 3)") }
    console.feed(confirmation + "\n")
    #expect(await link.value == 0, "\(console.errorOutput)")
    #expect(console.errorOutput.contains("The server says the other device approved. Type the code on its line"))
    #expect(console.errorOutput.contains("(try 2 of 3)"))
    let countdown = console.errorOutput.components(separatedBy: "waiting for the code to be typed")
    #expect(countdown.count > 2, "no countdown was shown: \(console.errorOutput)")
    // Every countdown report rewrote the same line (\r and erase), none began a new one.
    let lines = console.errorOutput.split(separator: "\n").filter { $0.contains("waiting for the code to be typed") }
    #expect(lines.count == 1, "the countdown took \(lines.count) lines: \(console.errorOutput.debugDescription)")
    #expect(console.errorOutput.contains("\r\u{1B}[2K… waiting for the code to be typed"))
}
