import Foundation
import KeyVaultTestSupport
import Testing
@testable import KeyVaultCommands

/// docs/completions and docs/man are made by Scripts/generate-completions.sh for
/// keyctl installed as kvctl; they must equal what the command tree makes now.
private let docs = repositoryRoot.appendingPathComponent("docs")

@Test(arguments: [(["completion", "bash"], "completions/kvctl.bash"), (["completion", "zsh"], "completions/_kvctl"),
                  (["completion", "fish"], "completions/kvctl.fish"), (["manual"], "man/kvctl.1")])
func committedCompletionsAndManualAreUpToDate(_ command: [String], _ file: String) async throws {
    // The real binary: its command tree has `serve`, which the client commands alone do not.
    let (code, made, err) = try await keyctl(command + ["--name", "kvctl"])
    #expect(code == 0, "\(err)")
    let committed = try String(contentsOf: docs.appendingPathComponent(file), encoding: .utf8)
    #expect(made == committed, "docs/\(file) is out of date: run `bash Scripts/generate-completions.sh`")
}

@Test func completionsCompleteTheNameKeyctlIsInstalledAs() async throws {
    let bash = await runKeyctl(["completion", "bash", "--name", "kvctl"]).1
    #expect(bash.hasSuffix("complete -o filenames -F _kvctl kvctl\n"))
    #expect(await runKeyctl(["completion", "zsh", "--name", "kvctl"]).1.hasPrefix("#compdef kvctl\n"))
    let fish = await runKeyctl(["completion", "fish", "--name", "kvctl"]).1
    #expect(fish.contains("complete -c 'kvctl' ") && !fish.contains("complete -c 'keyctl'"))
    let manual = await runKeyctl(["manual", "--name", "kvctl"]).1
    #expect(manual.contains(".TH KVCTL 1") && manual.contains(#".SS "kvctl device revoke""#))
    // Without --name, the name it was run as: the real binary is called keyctl.
    let real = try await keyctl(["completion", "bash"])
    #expect(real.code == 0 && real.out.hasSuffix("-F _keyctl keyctl\n"), "\(real.err)")
    for bad in [["completion", "tcsh"], ["completion", "bash", "--name", "kv ctl"], ["manual", "--name", "$(x)"]] {
        #expect(await runKeyctl(bad).0 == 64, "\(bad)")
    }
}

/// The DocC landing page lists the library's whole top-level public surface: every
/// public type, protocol, actor and typealias of the `KeyVault` module (issue 20).
@Test func theLandingPageListsEveryPublicTypeOfTheLibrary() throws {
    let sources = repositoryRoot.appendingPathComponent("Sources/KeyVault")
    let page = try String(contentsOf: sources.appendingPathComponent("KeyVault.docc/KeyVault.md"), encoding: .utf8)
    let declaration = #/^public (?:final )?(?:typealias|struct|enum|class|protocol|actor) (\w+)/#.anchorsMatchLineEndings()
    var names = [String]()
    for file in try FileManager.default.contentsOfDirectory(atPath: sources.path) where file.hasSuffix(".swift") {
        let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
        names += text.matches(of: declaration).map { String($0.1) }
    }
    #expect(names.count > 10)
    let missing = names.filter { !page.contains("``\($0)``") }.sorted()
    #expect(missing.isEmpty, "public in KeyVault but not on its DocC landing page: \(missing)")
}

/// Issue 22: errors and hints name the binary as it was run. A copy installed as
/// `kvctl` (where Debian's keyutils owns `keyctl`) says `kvctl: error:` and hints
/// `kvctl init …`, not a command that would run keyutils.
@Test func errorsAndHintsNameTheBinaryAsItWasRun() async throws {
    let directory = try TemporaryDirectory("kv-renamed")
    let kvctl = directory.path("kvctl")
    try FileManager.default.createSymbolicLink(atPath: kvctl, withDestinationPath: BuiltProducts.keyctl.path)
    let result = try await runProcess(URL(fileURLWithPath: kvctl), ["status", "--home", directory.path("nowhere")])
    #expect(result.code != 0)
    #expect(result.err.contains("kvctl: error:") && result.err.contains("kvctl: hint:") && result.err.contains("`kvctl init"), "\(result.err)")
    #expect(!result.err.contains("keyctl"), "\(result.err)")
}
