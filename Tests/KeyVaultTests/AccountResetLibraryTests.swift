import Foundation
import KeyVault
import KeyVaultMnemonic
import KeyVaultTestSupport
import Testing

// Issue 22, item 3, from the library's side: an account reset after sharing can share
// again (its next identity follows the one the reset retired), and revoke and rotate
// afterwards (nothing of before the reset is asked for).

@Test func anAccountResetAfterSharingSharesRevokesAndRotatesAgain() async throws {
    try await Fixture.run { fixture, parent in
        let grandma = try await grandparent(fixture)
        let alice = try await parent.addMember(name: "Alice")
        let (a, _) = await verifyContacts(parent, grandma)
        _ = try a.get()
        try await parent.share(alice, with: grandma.account, readOnly: true)

        let result = try await parent.resetAccount(recoveryCode: try RecoveryCode(bip39: Mnemonic.generate(wordCount: 24, language: .english)),
                                                   parameters: .interactive)
        #expect(result.removedMembers == 1 && result.endedShares == 1)
        let (members, grants, contacts) = (try await parent.members(), try await parent.grants(), try await parent.contacts())
        #expect(members.isEmpty && grants.isEmpty && contacts.isEmpty)
        #expect(try await grandma.sharedMembers().members.isEmpty, "a share the reset ended is still read")

        // Sharing again: verify the contact anew (a new identity), share a new member.
        let noah = try await parent.addMember(name: "Noah")
        let (again, _) = await verifyContacts(parent, grandma)
        _ = try again.get()
        try await parent.share(noah, with: grandma.account, readOnly: true)
        #expect(try await grandma.sharedMembers().members.map(\.name) == ["Noah"])

        // A device added after the reset, then revoked: the rotations it leaves are finished.
        let code = try Mnemonic.generate(wordCount: 24, language: .english)
        try await parent.setRecoveryCode(try RecoveryCode(bip39: code), parameters: .interactive)
        let phone = try await Vault.enrollWithRecoveryCode(home: fixture.home("phone"), server: "test", transport: fixture.transport,
                                                           account: parent.account, name: "phone", code: code)
        try await parent.sync()
        let plan = try await parent.revocationPlan(for: try #require(try await parent.devices().first { $0.id == phone.device }))
        _ = try await parent.revoke(plan, newRecoveryCode: { try RecoveryCode(bip39: Mnemonic.generate(wordCount: 24, language: .english)) },
                                    parameters: .interactive)
        #expect(try await parent.pendingRotation().isEmpty)
        try await parent.rotateMaster()
        _ = try await parent.addMember(name: "Lena")
    }
}
