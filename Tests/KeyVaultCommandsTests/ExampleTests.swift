import Foundation
import Testing

/// Examples/FamilyRecords tells seed 002's story with `import KeyVault` alone.
@Suite struct ExampleTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let source = repository.appendingPathComponent("Examples/FamilyRecords/main.swift")

    /// Runs a process to its end; returns its exit code and output.
    static func run(_ executable: URL, _ arguments: [String]) throws -> (code: Int32, out: String, err: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile(), error = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self), String(decoding: error, as: UTF8.self))
    }

    @Test func theFamilyStoryRunsAgainstARealServer() throws {
        let server = try RunningServer()
        let binary = keyctlBinary.deletingLastPathComponent().appendingPathComponent("FamilyRecords")
        let result = try Self.run(binary, ["http://127.0.0.1:\(server.port)"])
        #expect(result.code == 0, "\(result.err)")
        let lines = result.out.split(separator: "\n").map(String.init)
        #expect(lines.count == 6, "\(result.out)")
        #expect(lines.first?.hasPrefix("created account ") == true)
        #expect(lines.contains { $0.hasPrefix("revoked phone;") && $0.hasSuffix("generation 2") })
        #expect(lines.contains("the laptop opened the scan again (Emma's key generation 2)"))
        #expect(lines.last == "the phone is refused: device_revoked")
    }

    /// Built in this package, the example could use `package` declarations; type-checked
    /// on its own against the built modules, it reaches only what is public. A probe
    /// that reaches for keys shows the check can fail, and that no key is public: the
    /// device record, the master and member keys are `package`.
    @Test func theExampleUsesOnlyThePublicAPI() throws {
        let modules = keyctlBinary.deletingLastPathComponent().appendingPathComponent("Modules")
        let source = try String(contentsOf: Self.source, encoding: .utf8)
        let imports = source.split(separator: "\n").filter { $0.hasPrefix("import ") }
        #expect(imports == ["import Foundation", "import KeyVault"])

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kv-example-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let probe = directory.appendingPathComponent("probe.swift")
        try Data("""
            import KeyVault
            func probe(_ vault: Vault, _ member: MemberID) async throws {
                _ = await vault.record
                _ = try await vault.masterKey()
                _ = try await vault.memberKey(member, generation: 1)
            }
            """.utf8).write(to: probe)

        let swiftc = URL(fileURLWithPath: "/usr/bin/env")
        let flags = ["swiftc", "-typecheck", "-parse-as-library", "-I", modules.path,
                     "-I", Self.repository.appendingPathComponent("Sources/CSodium").path,
                     "-I", Self.repository.appendingPathComponent("Sources/CLibCrypto").path]
        let clean = try Self.run(swiftc, flags + [Self.source.path])
        #expect(clean.code == 0, "\(clean.err)")
        let probed = try Self.run(swiftc, flags + [Self.source.path, probe.path])
        #expect(probed.code != 0, "\(probed.err)")
        for name in ["record", "masterKey", "memberKey"] {
            #expect(probed.err.contains("'\(name)' is inaccessible due to 'package' protection level"), "\(probed.err)")
        }
    }
}
