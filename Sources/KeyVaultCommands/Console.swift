#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Where a command reads and writes. Commands never touch the process's standard
/// streams directly, so tests drive them in-process with a ``BufferConsole``.
public protocol Console: AnyObject, Sendable {
    /// Whether standard input is a terminal (then secrets are read without echo).
    var inputIsTerminal: Bool { get }
    /// Whether standard output is a terminal (then output is laid out for people).
    var outputIsTerminal: Bool { get }
    /// Whether standard error is a terminal (then progress may be drawn there).
    var errorIsTerminal: Bool { get }
    /// Everything left on standard input.
    func readToEnd() throws -> [UInt8]
    /// One line without its line ending, or `nil` at end of input.
    func readLine() throws -> [UInt8]?
    /// One line read with echo off when input is a terminal; the prompt goes to standard error.
    func readSecretLine(prompt: String) throws -> [UInt8]?
    func write(_ text: String)
    /// Raw bytes to standard output (file content, not text).
    func writeBytes(_ bytes: [UInt8])
    func writeError(_ text: String)
}

extension Console {
    public func writeBytes(_ bytes: [UInt8]) { write(String(decoding: bytes, as: UTF8.self)) }
}

/// The process's real standard streams.
public final class StandardConsole: Console, @unchecked Sendable {
    // Standard input is read by one command at a time; `pending` needs no lock.
    private var pending: [UInt8] = []
    private var atEnd = false

    public init() {}

    public var inputIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }
    public var outputIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
    public var errorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    public func readToEnd() throws -> [UInt8] {
        while try fill() {}
        defer { pending = [] }
        return pending
    }

    public func readLine() throws -> [UInt8]? {
        while true {
            if let newline = pending.firstIndex(of: 10) {
                var line = Array(pending[..<newline])
                pending.removeSubrange(...newline)
                if line.last == 13 { line.removeLast() }
                return line
            }
            if try !fill() {
                guard !pending.isEmpty else { return nil }
                defer { pending = [] }
                return pending
            }
        }
    }

    public func readSecretLine(prompt: String) throws -> [UInt8]? {
        guard inputIsTerminal else { return try readLine() }
        writeError(prompt)
        let restore = TerminalEcho.disable()
        defer {
            restore()
            writeError("\n")
        }
        return try readLine()
    }

    public func write(_ text: String) { Self.write(Array(text.utf8), to: STDOUT_FILENO) }
    public func writeBytes(_ bytes: [UInt8]) { Self.write(bytes, to: STDOUT_FILENO) }
    public func writeError(_ text: String) { Self.write(Array(text.utf8), to: STDERR_FILENO) }

    private static func write(_ bytes: [UInt8], to fd: Int32) {
        var bytes = bytes
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                return  // a closed pipe: nothing sensible left to do with the output
            }
            offset += n
        }
        bytes.removeAll()
    }

    /// Reads more of standard input into `pending`; false at end of input.
    private func fill() throws -> Bool {
        guard !atEnd else { return false }
        var buffer = [UInt8](repeating: 0, count: 4096)
        defer { buffer.withUnsafeMutableBytes { _ = memset($0.baseAddress!, 0, $0.count) } }
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(STDIN_FILENO, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw KeyctlError(.io, "cannot read standard input: \(String(cString: strerror(errno)))")
            }
            if n == 0 {
                atEnd = true
                return false
            }
            pending += buffer[..<n]
            return true
        }
    }
}

/// Turns terminal echo off for a hidden prompt, and back on afterwards, also when
/// the user presses Ctrl-C at the prompt.
enum TerminalEcho {
    nonisolated(unsafe) private static var saved = termios()
    nonisolated(unsafe) private static var active = false

    static func disable() -> () -> Void {
        var settings = termios()
        guard tcgetattr(STDIN_FILENO, &settings) == 0 else { return {} }
        saved = settings
        active = true
        settings.c_lflag &= ~tcflag_t(ECHO)
        settings.c_lflag |= tcflag_t(ECHONL)
        _ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &settings)
        signal(SIGINT) { signalNumber in
            if TerminalEcho.active { _ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &TerminalEcho.saved) }
            _exit(128 + signalNumber)
        }
        return {
            _ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
            active = false
            signal(SIGINT, SIG_DFL)
        }
    }
}

/// An in-memory console for tests. Progress lines may arrive from several tasks,
/// so its buffers sit behind a lock.
public final class BufferConsole: Console, Sendable {
    private struct Buffers {
        var input: [UInt8] = []
        var output = ""
        var errorOutput = ""
        /// More input may come (``feed(_:)``): a read waits for a whole line.
        var awaiting = false
    }

    /// The buffers behind an NSLock, which ThreadSanitizer sees (ARCHITECTURE.md).
    private final class LockedBuffers: @unchecked Sendable {
        private let lock = NSLock()
        private var buffers = Buffers()
        func withLock<T>(_ body: (inout Buffers) throws -> T) rethrows -> T {
            lock.lock()
            defer { lock.unlock() }
            return try body(&buffers)
        }
    }
    private let buffers = LockedBuffers()
    public let inputIsTerminal: Bool
    public let outputIsTerminal: Bool
    public let errorIsTerminal: Bool

    /// - Parameter awaitingInput: reads wait (up to 30 s) for a line that ``feed(_:)``
    ///   gives later, as a person typing would, instead of ending at the input's end.
    public init(input: String = "", terminal: Bool = false, awaitingInput: Bool = false) {
        buffers.withLock { $0 = Buffers(input: Array(input.utf8), awaiting: awaitingInput) }
        inputIsTerminal = terminal
        outputIsTerminal = terminal
        errorIsTerminal = terminal
    }

    public var output: String { buffers.withLock { $0.output } }
    public var errorOutput: String { buffers.withLock { $0.errorOutput } }

    public func readToEnd() throws -> [UInt8] {
        buffers.withLock { buffers in
            defer { buffers.input = [] }
            return buffers.input
        }
    }

    /// Types more input, as a person would, for a console made with `awaitingInput`.
    public func feed(_ text: String) { buffers.withLock { $0.input += Array(text.utf8) } }

    public func readLine() throws -> [UInt8]? {
        let deadline = ContinuousClock.now + .seconds(30)
        while buffers.withLock({ $0.awaiting && !$0.input.contains(10) }), ContinuousClock.now < deadline { usleep(10_000) }
        return buffers.withLock { buffers in
            guard !buffers.input.isEmpty else { return nil }
            let newline = buffers.input.firstIndex(of: 10) ?? buffers.input.endIndex
            let line = Array(buffers.input[..<newline])
            buffers.input.removeSubrange(..<min(newline + 1, buffers.input.endIndex))
            return line
        }
    }

    public func readSecretLine(prompt: String) throws -> [UInt8]? {
        if inputIsTerminal { writeError(prompt) }
        return try readLine()
    }

    public func write(_ text: String) { buffers.withLock { $0.output += text } }
    public func writeError(_ text: String) { buffers.withLock { $0.errorOutput += text } }
}

extension Console {
    /// ``readLine()`` on a thread of its own: waiting for a person to type, asked from
    /// inside async work (a link's confirmation code), holds none of the concurrency
    /// pool's few threads (two on a 2-core machine, shared with whatever else runs).
    func readLineOffThePool() async throws -> [UInt8]? {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try self.readLine() }) }
        }
    }
}
