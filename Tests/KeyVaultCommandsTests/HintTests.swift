import KeyVault
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
