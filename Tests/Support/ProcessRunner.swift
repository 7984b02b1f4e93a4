import Foundation
import KeyVaultCrypto

/// How a process ended: its exit code and what it wrote.
package typealias ProcessResult = (code: Int32, out: String, err: String)

/// Runs `executable` to its end with `input` on standard input and `environment` added
/// to this process's; returns its exit code, standard output and standard error.
///
/// The wait is on a thread of its own: a test that waits for a real binary suspends
/// instead of holding one of Swift's shared threads (as many as the cores: two here),
/// which starved the in-process async tests running beside it. A cancelled test (its
/// time limit passed) kills the process, so a hung binary cannot hold the run.
package func runProcess(_ executable: URL, _ arguments: [String], input: Data = Data(),
                        environment: [String: String] = [:]) async throws -> ProcessResult {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    }
    let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    nonisolated(unsafe) let running = process
    return await withTaskCancellationHandler {
        await onThreadOfItsOwn {
            // Input is written, and standard error drained, beside the read of standard
            // output: a process that fills one pipe while another is served cannot stall.
            let error = Drained()
            let group = DispatchGroup()
            DispatchQueue.global().async(group: group) {
                stdin.fileHandleForWriting.write(input)
                try? stdin.fileHandleForWriting.close()
            }
            DispatchQueue.global().async(group: group) { error.data = stderr.fileHandleForReading.readDataToEndOfFile() }
            let out = stdout.fileHandleForReading.readDataToEndOfFile()
            group.wait()
            running.waitUntilExit()
            return (running.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: error.data, as: UTF8.self))
        }
    } onCancel: {
        if running.isRunning { kill(running.processIdentifier, SIGKILL) }
    }
}

/// Runs the built `keyctl` as a real process.
package func keyctl(_ arguments: [String], input: Data = Data(), environment: [String: String] = [:]) async throws -> ProcessResult {
    try await runProcess(BuiltProducts.keyctl, arguments, input: input, environment: environment)
}

/// Written by one reader thread before `DispatchGroup.wait()` returns, read after.
private final class Drained: @unchecked Sendable {
    var data = Data()
}
