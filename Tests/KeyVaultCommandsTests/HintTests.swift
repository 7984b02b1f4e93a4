import Foundation
import KeyVault
import KeyVaultTestSupport
import Testing
@testable import KeyVaultCommands

/// Issue 22: a digit slip when approving a device is told as a typo, with how to start
/// again; codes that differ in several digits keep the warning.
@Test func aTypoInTheLinkDigitsGetsAHintToStartAgainNotAWarning() {
    let typo = KeyVaultError(.sasMismatch, "the code typed does not match (one digit differs, most likely a typo): the request was refused")
    let other = KeyVaultError(.sasMismatch, "the code typed does not match (4 of the 6 digits differ: that is not a typo; …): the request was refused")
    #expect(Hints.hint(for: typo)?.contains("type its 6 digits carefully") == true)
    #expect(Hints.hint(for: typo)?.contains("do not trust") == false)
    #expect(Hints.hint(for: other)?.contains("swapped the keys") == true)
}

/// Issue 22: what a person reads says sizes as people do (10.5 MB, not 10485760 bytes)
/// and no jargon: the recovery code's cost in words, the account's history, not its
/// "chain head".
@Test(.timeLimit(.minutes(10)))
func sizesAndStepsAreSaidInWordsAPersonUses() async throws {
    let limited = try await RunningServer(arguments: ["--max-attachment-bytes", "10485760"])
    let homes = try DeviceHomes("words")
    _ = try await homes.run(["init", "--server", limited.url, "--name", "laptop", "--recovery-file", homes.path("code"), "--yes"], "laptop")
    _ = try await homes.run(["member", "add", "Emma"], "laptop")
    let big = homes.path("video.mp4")
    try Data(count: 11 << 20).write(to: URL(fileURLWithPath: big))
    // The limit in MB, with whom to ask.
    let refused = try await keyctl(["attachment", "put", "--member", "Emma", big, "--home", homes.path("laptop")])
    #expect(refused.code != 0)
    #expect(refused.err.contains("11.5 MB") && refused.err.contains("10.5 MB") && !refused.err.contains("10485760"), "\(refused.err)")
    #expect(refused.err.contains("operator"), "\(refused.err)")
    // Status and progress without jargon.
    let status = try await keyctl(["status", "--home", homes.path("laptop")])
    #expect(!status.out.contains("chain head") && status.out.contains("history"), "\(status.out)")
    #expect(!Vault.Progress.derivingRecoveryKeys(iterations: 3, memoryKiB: 262_144).text.contains("Argon2id"))
}
