import Foundation
import KeyVaultCrypto
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A running `keyctl serve` on a free loopback port with a fresh database.
package final class RunningServer {
    package let process = Process()
    package let directory: URL
    package let port: Int
    private let output = Pipe()
    /// Where its standard error (its JSON log) goes: ``stop(_:within:)`` prints its end when
    /// the server does not exit cleanly.
    private let log: URL
    private let logDirectory: TemporaryDirectory

    /// The directory this server made (nil when it runs on another server's).
    private let temporary: TemporaryDirectory?

    /// Starts a server; on a fresh directory unless `directory` (another server's) is given.
    ///
    /// - Parameters:
    ///   - database: a PostgreSQL URL; by default a SQLite file in the directory.
    ///   - port: 0 picks a free one.
    ///   - log: a file for its standard error (its JSON log); by default one in a directory of its own.
    package init(arguments: [String] = [], environment: [String: String] = [:], directory existing: URL? = nil,
                 database: String? = nil, port: Int = 0, binary: URL = BuiltProducts.keyctl, log: URL? = nil) async throws {
        temporary = existing == nil ? try TemporaryDirectory("kv-serve") : nil
        directory = existing ?? temporary!.url
        process.executableURL = binary
        process.arguments = ["serve", "--port", String(port),
                             "--database", database ?? directory.appendingPathComponent("keyvault.sqlite").path] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardOutput = output
        logDirectory = try TemporaryDirectory("kv-serve-log")
        let log = log ?? logDirectory.url.appendingPathComponent("serve.log")
        self.log = log
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        // The first line says where it listens: "keyctl: serving on http://127.0.0.1:PORT (…)".
        // Read on a thread of its own, within 20 s however long the server stays silent.
        nonisolated(unsafe) let (process, output) = (process, output)
        let text = await onThreadOfItsOwn {
            var buffer = ""
            return nextLine(from: output.fileHandleForReading, buffer: &buffer, within: 20, while: { process.isRunning }) ?? buffer
        }
        guard let range = text.range(of: #"127\.0\.0\.1:(\d+)"#, options: .regularExpression),
              let port = Int(text[range].split(separator: ":").last!) else {
            process.terminate()
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "keyctl serve did not start: \(text)"])
        }
        self.port = port
    }

    /// `http://127.0.0.1:PORT`, for `--server`.
    package var url: String { "http://127.0.0.1:\(port)" }

    package func request(_ method: String, _ path: String, body: Data? = nil, headers: [String: String] = [:]) async throws -> (Int, Data) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        request.httpBody = body
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as! HTTPURLResponse).statusCode, data)
    }

    /// What ``stop(_:within:)`` returns for a server that did not exit in time (it is then killed).
    package static let hungAtExit: Int32 = -1

    /// Sends `signal` and waits for the exit status, at most `seconds`: a server that
    /// has not exited by then is killed (SIGKILL) and ``hungAtExit`` returned, so a hang
    /// at shutdown fails the test that stops it instead of stopping the whole run. The
    /// wait is on a thread of its own (none of the shared pool's), and a server that has
    /// already exited gets no signal: its pid may be another process's by now.
    package func stop(_ signal: Int32 = SIGTERM, within seconds: Double = 60) async -> Int32 {
        nonisolated(unsafe) let process = process
        let status = await onThreadOfItsOwn {
            if process.isRunning { kill(process.processIdentifier, signal) }
            let deadline = Date().addingTimeInterval(seconds)
            while process.isRunning, Date() < deadline { usleep(50_000) }
            guard !process.isRunning else {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                return Self.hungAtExit
            }
            return process.terminationStatus
        }
        if status != 0, !(process.terminationReason == .uncaughtSignal && status == signal) {
            let tail = (try? Data(contentsOf: log)).map { String(decoding: $0.suffix(4096), as: UTF8.self) } ?? "(no log)"
            FileHandle.standardError.write(Data("keyctl serve on port \(port) ended with status \(status) after signal \(signal); the end of its log:\n\(tail)\n".utf8))
        }
        return status
    }

    // The process goes before the directory it writes in (`temporary` is released after).
    deinit {
        if process.isRunning { process.terminate() }
    }
}
