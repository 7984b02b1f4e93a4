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
    // Input is written on a thread of its own beside the reads: a process that fills
    // one pipe while another is served cannot stall.
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
    let (out, err) = await process.outputAndExit(out: stdout.fileHandleForReading, err: stderr.fileHandleForReading)
    await written
    return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
}

extension Process {
    /// Reads standard output and standard error to their ends at once, each on a thread
    /// of its own, then waits there for the exit; a cancelled test kills the process.
    package func outputAndExit(out: FileHandle, err: FileHandle) async -> (out: Data, err: Data) {
        nonisolated(unsafe) let process = self
        return await withTaskCancellationHandler {
            async let error = onThreadOfItsOwn { err.readDataToEndOfFile() }
            let output = await onThreadOfItsOwn { out.readDataToEndOfFile() }
            let errors = await error
            await process.exited()
            return (output, errors)
        } onCancel: {
            killGroup(of: process)
        }
    }

    /// Waits for the exit on a thread of its own.
    package func exited() async {
        nonisolated(unsafe) let process = self
        await onThreadOfItsOwn { process.waitUntilExit() }
    }
}

/// The next line `handle` gives, read on into `buffer` (which keeps what follows it):
/// waits at most `seconds`, and no longer than `alive` holds; nil at the end of the
/// output or the deadline. It blocks: call it on a thread of its own.
package func nextLine(from handle: FileHandle, buffer: inout String, within seconds: Double,
                      while alive: () -> Bool = { true }) -> String? {
    let deadline = Date().addingTimeInterval(seconds)
    var ready = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
    while !buffer.contains("\n"), alive() {
        let left = deadline.timeIntervalSinceNow
        guard left > 0 else { break }
        // Read once: a negative timeout would make poll wait without a limit.
        let polled = poll(&ready, 1, Int32(left * 1000) + 1)
        if polled < 0, errno == EINTR { continue }
        guard polled > 0 else { break }
        let data = handle.availableData
        if data.isEmpty { break }
        buffer += String(decoding: data, as: UTF8.self)
    }
    guard let end = buffer.firstIndex(of: "\n") else { return nil }
    let line = String(buffer[..<end])
    buffer = String(buffer[buffer.index(after: end)...])
    return line
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

