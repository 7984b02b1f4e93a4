import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// A running `keyctl serve` on a free loopback port with a fresh database.
final class RunningServer {
    let process = Process()
    let directory: URL
    let port: Int
    private let output = Pipe()

    private let ownsDirectory: Bool

    /// Starts a server; on a fresh directory unless `directory` (another server's) is given.
    init(arguments: [String] = [], environment: [String: String] = [:], directory existing: URL? = nil,
         binary: URL = keyctlBinary) throws {
        directory = existing ?? FileManager.default.temporaryDirectory.appendingPathComponent("kv-serve-\(UUID().uuidString)")
        ownsDirectory = existing == nil
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        process.executableURL = binary
        process.arguments = ["serve", "--port", "0", "--database", directory.appendingPathComponent("keyvault.sqlite").path] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The first line says where it listens: "keyctl: serving on http://127.0.0.1:PORT (…)".
        var text = ""
        let deadline = Date().addingTimeInterval(20)
        while !text.contains("\n"), Date() < deadline, process.isRunning {
            text += String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        }
        guard let range = text.range(of: #"127\.0\.0\.1:(\d+)"#, options: .regularExpression),
              let port = Int(text[range].split(separator: ":").last!) else {
            process.terminate()
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "keyctl serve did not start: \(text)"])
        }
        self.port = port
    }

    func request(_ method: String, _ path: String, body: Data? = nil) async throws -> (Int, Data) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        request.httpBody = body
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as! HTTPURLResponse).statusCode, data)
    }

    /// Sends `signal` and waits for the exit status.
    func stop(_ signal: Int32 = SIGTERM) -> Int32 {
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { process.terminate() }
        if ownsDirectory { try? FileManager.default.removeItem(at: directory) }
    }
}

@Test func realServeAnswersOnAFreePortAndStopsGracefullyOnSIGTERM() async throws {
    let server = try RunningServer()
    let (status, body) = try await server.request("GET", "/health")
    #expect(status == 200 && String(decoding: body, as: UTF8.self) == #"{"status":"ok"}"#)
    let (missing, error) = try await server.request("GET", "/v1/accounts/00000000000000000000000000000000/chain")
    #expect(missing == 401 && String(decoding: error, as: UTF8.self).contains("unsigned_request"))
    let (bad, _) = try await server.request("POST", "/v1/accounts", body: Data("{".utf8))
    #expect(bad == 400)
    #expect(server.stop(SIGTERM) == 0)
    // Closed cleanly: the WAL was checkpointed into the database file and removed.
    let files = try FileManager.default.contentsOfDirectory(atPath: server.directory.path)
    #expect(files.contains("keyvault.sqlite") && !files.contains("keyvault.sqlite-wal"), "\(files)")
}

/// Item 7 of issue 8: an operator installs the binary alone, without its build
/// folder; no request (here the unauthenticated description) may crash it.
@Test func anInstalledKeyctlAloneServesItsAPIDescription() async throws {
    let installed = FileManager.default.temporaryDirectory.appendingPathComponent("kv-installed-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: installed, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: installed) }
    let binary = installed.appendingPathComponent("keyctl")
    try FileManager.default.copyItem(at: keyctlBinary, to: binary)
    // A SwiftPM resource bundle is found beside the binary or at the absolute path of
    // the build it came from; an installed copy on a server has neither. If this build
    // made one (it should not), it is moved aside while the copy runs.
    let bundle = keyctlBinary.deletingLastPathComponent().appendingPathComponent("KeyVault_KeyVaultServer.resources")
    let aside = installed.appendingPathComponent("moved-aside.resources")
    let moved = (try? FileManager.default.moveItem(at: bundle, to: aside)) != nil
    defer { if moved { try? FileManager.default.moveItem(at: aside, to: bundle) } }
    let server = try RunningServer(binary: binary)
    let (status, body) = try await server.request("GET", "/openapi.json")
    #expect(status == 200)
    let spec = try JSONSerialization.jsonObject(with: body) as? [String: Any]
    #expect(spec?["openapi"] as? String == "3.1.0")
    let (health, _) = try await server.request("GET", "/health")
    #expect(health == 200)  // still serving after it
    #expect(server.stop(SIGTERM) == 0)
}

@Test func realServeRefusesABadConfigurationWithAClearMessage() throws {
    for (arguments, environment, expected) in [
        (["serve", "--port", "70000"], [String: String](), "port 70000"),
        (["serve", "--database", "/nonexistent-dir/kv.sqlite"], [:], "does not exist"),
        (["serve"], ["KEYVAULT_PORT": "eighty"], "KEYVAULT_PORT=eighty"),
        (["serve"], ["KEYVAULT_LOG_LEVEL": "loud"], "log level"),
        (["serve", "--trusted-proxy", "10.0.0.0/8,10.1.2.0/33"], [:], "--trusted-proxy: '10.1.2.0/33'"),
        (["serve"], ["KEYVAULT_TRUSTED_PROXIES": "fd00::/8, proxy.local"], "KEYVAULT_TRUSTED_PROXIES: 'proxy.local'"),
    ] {
        let process = Process()
        process.executableURL = keyctlBinary
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 64, "\(arguments) \(environment)")
        #expect(message.contains("keyctl: error: bad configuration") && message.contains(expected), "\(message)")
    }
}
