import Foundation
import KeyVaultCommands
import KeyVaultTestSupport
import Testing

/// Runs keyctl in-process; returns exit code, stdout and stderr.
func runKeyctl(_ arguments: [String], input: String = "", terminal: Bool = false) async -> (code: Int32, out: String, err: String) {
    let console = BufferConsole(input: input, terminal: terminal)
    let code = await KeyctlMain.run(arguments, console: console)
    return (code, console.output, console.errorOutput)
}

@Test func aMissingHomeSaysHowToStart() async throws {
    let scratch = try TemporaryDirectory("kv-empty")
    let home = scratch.path("home")  // not made: no device lives there
    for command in [["status"], ["device", "list"], ["member", "add", "Emma"], ["audit"]] {
        let (code, _, err) = await runKeyctl(command + ["--home", home])
        #expect(code == 2, "\(command)")
        #expect(err.contains("there is no KeyVault device") && err.contains("keyctl init"), "\(command) \(err)")
    }
    let (code, out, _) = await runKeyctl(["status", "--home", home, "--json"])
    #expect(code == 2 && out.contains(#""code":"not_initialized""#), "\(out)")
}

@Test func badClientCommandLinesAreUsageErrors() async {
    for arguments in [
        ["init", "--server", "not a url", "--name", "laptop"],
        ["init", "--server", "ftp://example.org", "--name", "laptop"],
        ["device", "approve", "ABCDEFGH12", "--yes"],  // no yes/no: the digits the new device shows must be typed
        ["device", "approve", "ABCDEFGH12", "--sas", "123 456"],  // nor known before this device draws its value
        ["device", "enroll", "--server", "http://127.0.0.1:1", "--account", "xyz", "--name", "phone"],
        ["attachment", "get", "--member", "Emma", "ca1.x.00"],
        ["init", "--server", "http://127.0.0.1:1", "--name", "laptop", "--kdf", "weak"],
    ] {
        let (code, _, err) = await runKeyctl(arguments)
        #expect(code == 64, "\(arguments): \(err)")
    }
}

@Test func anUnreachableServerIsAFailureWithAHint() async throws {
    let scratch = try TemporaryDirectory("kv-empty")
    let home = scratch.path("home")
    let (code, _, err) = await runKeyctl(["init", "--server", "http://127.0.0.1:1", "--name", "laptop", "--home", home, "--yes"])
    #expect(code == 2)
    #expect(err.contains("cannot reach the server") && err.contains("keyctl serve"), "\(err)")
    #expect(!FileManager.default.fileExists(atPath: home + "/device.json"), "nothing is saved when the account was not created")
}

/// Issue 22: an attachment's content (a PDF, a photo) is not written to a terminal:
/// keyctl says to use -o before it reads anything, device home included.
@Test func anAttachmentIsNotWrittenToATerminal() async throws {
    let scratch = try TemporaryDirectory("kv-tty")
    let result = await runKeyctl(["attachment", "get", "--member", "Emma", "ca1.1." + String(repeating: "0", count: 64),
                                  "--home", scratch.path("nothing-here")], terminal: true)
    #expect(result.code == 64, "\(result.err)")
    #expect(result.err.contains("terminal") && result.err.contains("-o"), "\(result.err)")
    #expect(!result.err.contains("no device"), "it looked at the device home first: \(result.err)")
}
