import Foundation
import KeyVaultTestSupport
import Testing

/// Examples/FamilyRecords tells seed 002's story with `import KeyVault` alone.
@Suite struct ExampleTests {
    static let source = repositoryRoot.appendingPathComponent("Examples/FamilyRecords/main.swift")

    @Test func theFamilyStoryRunsAgainstARealServer() async throws {
        let server = try await RunningServer()
        let result = try await runProcess(BuiltProducts.familyRecords, [server.url])
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
    /// device record, the master and member keys are `package`; so are the approver's
    /// link digits (issue 19: an app that could read them could approve without the person).
    @Test func theExampleUsesOnlyThePublicAPI() async throws {
        let modules = BuiltProducts.modules
        let source = try String(contentsOf: Self.source, encoding: .utf8)
        let imports = source.split(separator: "\n").filter { $0.hasPrefix("import ") }
        #expect(imports == ["import Foundation", "import KeyVault"])

        let directory = try TemporaryDirectory("kv-example")
        let probe = directory.url("probe.swift")
        try Data("""
            import KeyVault
            func probe(_ vault: Vault, _ member: MemberID, _ candidate: Vault.LinkCandidate) async throws {
                _ = await vault.record
                _ = try await vault.masterKey()
                _ = try await vault.memberKey(member, generation: 1)
                _ = candidate.sas  // the approver's own digits: approving with them would be a yes/no in disguise
            }
            """.utf8).write(to: probe)

        let swiftc = URL(fileURLWithPath: "/usr/bin/env")
        let flags = ["swiftc", "-typecheck", "-parse-as-library", "-I", modules.path,
                     "-I", repositoryRoot.appendingPathComponent("Sources/CSodium").path,
                     "-I", repositoryRoot.appendingPathComponent("Sources/CLibCrypto").path]
        let clean = try await runProcess(swiftc, flags + [Self.source.path])
        #expect(clean.code == 0, "\(clean.err)")
        let probed = try await runProcess(swiftc, flags + [Self.source.path, probe.path])
        #expect(probed.code != 0, "\(probed.err)")
        for name in ["record", "masterKey", "memberKey", "sas"] {
            #expect(probed.err.contains("'\(name)' is inaccessible due to 'package' protection level"), "\(probed.err)")
        }
    }
}
