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
        // Input is written, and standard error drained, on threads of their own beside
        // the read of standard output: a process that fills one pipe while another is
        // served cannot stall.
        async let error = onThreadOfItsOwn { stderr.fileHandleForReading.readDataToEndOfFile() }
        async let written: Void = onThreadOfItsOwn {
            // A process that exits unread makes the write fail (EPIPE) instead of
            // signalling this thread, which would end the whole test process.
            var broken = sigset_t()
            sigemptyset(&broken)
            sigaddset(&broken, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &broken, nil)
            try? stdin.fileHandleForWriting.write(contentsOf: input)
            try? stdin.fileHandleForWriting.close()
        }
        let out = await onThreadOfItsOwn { stdout.fileHandleForReading.readDataToEndOfFile() }
        await written
        let err = await error
        await onThreadOfItsOwn { running.waitUntilExit() }
        return (running.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    } onCancel: {
        killGroup(of: running)
    }
}

/// Kills a process and what it started (its process group, when it leads one), unless
/// it has exited already: its pid may be another process's by then.
package func killGroup(of process: Process) {
    guard process.isRunning else { return }
    let pid = process.processIdentifier
    if kill(-pid, SIGKILL) != 0 { kill(pid, SIGKILL) }
}

/// Runs the built `keyctl` as a real process.
package func keyctl(_ arguments: [String], input: Data = Data(), environment: [String: String] = [:]) async throws -> ProcessResult {
    try await runProcess(BuiltProducts.keyctl, arguments, input: input, environment: environment)
}

