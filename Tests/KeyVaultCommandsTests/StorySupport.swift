import Foundation
import KeyVaultTestSupport
import Testing

/// An end-to-end story with the real binaries: a `keyctl serve` on a free loopback
/// port, a temporary folder of device homes (removed with the story), and a runner
/// that checks each command's exit code and returns its JSON result. Its stored
/// properties never change after `init`, so commands may run from several tasks.
final class Story: @unchecked Sendable {
    let server: RunningServer
    let url: String
    private let homes: DeviceHomes
    var root: URL { homes.root }

    init(_ name: String) async throws {
        server = try await RunningServer()
        url = server.url
        homes = try DeviceHomes("kv-\(name)")
    }

    /// `--home` of the device called `name`, and `--json`.
    func home(_ name: String) -> [String] { homes.home(name) }

    func path(_ name: String) -> String { homes.path(name) }

    /// `init` as "laptop" (its recovery code in the file `code`), then "phone" enrolled
    /// with that code; returns the account id.
    func laptopAndPhone() async throws -> String {
        let created = try await run(["init", "--server", url, "--name", "laptop", "--recovery-file", path("code"), "--yes"], "laptop")
        guard let account = created["account"] as? String else { throw CocoaError(.coderValueNotFound) }
        _ = try await run(["device", "enroll", "--server", url, "--account", account, "--name", "phone"], "phone",
                    input: try String(contentsOfFile: path("code"), encoding: .utf8))
        return account
    }

    /// Runs `keyctl ARGUMENTS` as `device`; expects exit code `expect`, and returns the last JSON line when that is 0.
    func run(_ arguments: [String], _ device: String, input: String = "", expect: Int32 = 0,
             sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: Any] {
        try await homes.run(arguments, device, input: input, expect: expect, sourceLocation: sourceLocation)
    }
}

/// Device homes in a temporary folder (removed with the value), and a runner of
/// `keyctl` as one of them.
final class DeviceHomes: Sendable {
    private let directory: TemporaryDirectory
    var root: URL { directory.url }

    init(_ name: String) throws { directory = try TemporaryDirectory(name) }

    /// `--home` of the device called `name`, and `--json`.
    func home(_ name: String) -> [String] { ["--home", path(name), "--json"] }

    func path(_ name: String) -> String { directory.path(name) }

    /// Runs `keyctl ARGUMENTS` as `device`; expects exit code `expect`, and returns the last JSON line when that is 0.
    func run(_ arguments: [String], _ device: String, input: String = "", expect: Int32 = 0,
             sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: Any] {
        let result = try await keyctl(arguments + home(device), input: Data(input.utf8))
        #expect(result.code == expect, "keyctl \(arguments.joined(separator: " ")) as \(device): \(result.err)", sourceLocation: sourceLocation)
        return expect == 0 && result.code == 0 ? try lastJSON(result.out) : [:]
    }
}
