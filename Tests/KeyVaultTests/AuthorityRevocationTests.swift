import Foundation
import KeyVault
import KeyVaultCrypto
import KeyVaultMnemonic
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultVault
import Testing

// Issue 19, item 1: revocation takes back what the revoked device granted (contact
// pins and share grants, LinkAuthority.table), before any new key is made.

/// A thief with an unlocked phone for a minute: an account of its own, contact add on
/// both sides (it types both codes), a share of the member to its account. The owner
/// revokes the phone from the laptop.
@Test func aThiefsShareEndsWithTheRevocationOfThePhoneItWasMadeOn() async throws {
    try await Fixture.run { fixture, laptop in
        let sent = SentBoxes()
        fixture.transport.tamper { request, _ in sent.record(request) }
        let emma = try await laptop.addMember(name: "Emma")
        let phone = try await fixture.enroll("phone", in: laptop.account)
        let thief = try await Vault.createAccount(home: fixture.home("thief"), server: "test", transport: fixture.transport, name: "thief",
                                                  code: try Mnemonic.generate(wordCount: 24, language: .english), parameters: .interactive)
        _ = await verifyContacts(phone, thief)
        try await phone.share(try await phone.member(named: "Emma"), with: thief.account, readOnly: false)
        let stolen = try #require(try await thief.sharedMembers().members.first)
        #expect(stolen.id == emma.id)

        // The owner revokes the phone: the plan lists the pin and the share it made.
        try await laptop.sync()
        let plan = try await laptop.revocationPlan(for: try await laptop.device(matching: "phone"))
        #expect(plan.ended.map(\.account) == [thief.account, thief.account], "\(plan.ended)")
        let done = try await laptop.revoke(plan)
        #expect(done.ended.count == 2)
        let state = try await laptop.chain
        #expect(state.contacts.isEmpty && state.grants.isEmpty && state.orphaned.isEmpty)
        let boxesBefore = sent.all.count

        // What the owner makes afterwards reaches the thief in no form.
        let scan = try await laptop.put(Array("after the theft".utf8), member: try await laptop.member(named: "Emma"))
        #expect(sent.all.count == boxesBefore, "a share box was sealed after the revocation: \(sent.all.dropFirst(boxesBefore).map(\.grantee))")
        #expect(try await thief.sharedMembers().members.isEmpty)
        await #expect(throws: KeyVaultError.self) { try await thief.get(scan.address, member: stolen) }
        // And nothing the thief writes is taken in.
        let forged = await Result(catching: { try await thief.put(Array("forged record".utf8), member: stolen) })
        #expect(forged.failure != nil, "the thief's account could still write to Emma after the revocation")
        #expect(try await laptop.attachments(member: try await laptop.member(named: "Emma")).count == 1)
        #expect(try await laptop.audit().findings.isEmpty)
    }
}

/// A revocation cut off before the pins and grants ended (here: the server refuses
/// the share.revoke) leaves them in force: the audit says so, and the next write
/// ends them before any new key is made.
@Test func anAuditReportsAPinAndGrantOfARevokedDeviceUntilTheyEnd() async throws {
    try await Fixture.run { fixture, laptop in
        let emma = try await laptop.addMember(name: "Emma")
        let phone = try await fixture.enroll("phone", in: laptop.account)
        let thief = try await grandparent(fixture)
        _ = await verifyContacts(phone, thief)
        try await phone.share(try await phone.member(named: "Emma"), with: thief.account, readOnly: true)
        try await laptop.sync()
        fixture.transport.answer { request in
            guard request.method == "POST", request.target.hasSuffix("/chain"), String(decoding: request.body, as: UTF8.self).contains("share.revoke")
            else { return nil }
            return HTTPReply(status: 503, body: Array(#"{"error":{"code":"unavailable","message":"down"}}"#.utf8))
        }
        await #expect(throws: KeyVaultError.self) { try await laptop.revoke(try await laptop.device(matching: "phone")) }
        fixture.transport.answer(nil)
        let findings = try await laptop.audit().findings.filter { $0.area == "sharing" }
        #expect(findings.count == 2, "\(findings)")
        #expect(try await laptop.pendingRotation().ends.count == 2)

        _ = try await laptop.rotateMember(emma.id)
        #expect(try await laptop.chain.orphaned.isEmpty)
        #expect(try await laptop.audit().findings.isEmpty)
    }
}

/// Issue 19, item 2: a superseded recovery code, with everything the server holds
/// (its rows before and after the rotation), opens no key, identity or grant in force.
@Test func aSupersededRecoveryCodeOpensNothingInForceAfterTheRotation() async throws {
    try await Fixture.run { fixture, laptop in
        let emma = try await laptop.addMember(name: "Emma")
        let grandma = try await grandparent(fixture)
        _ = await verifyContacts(laptop, grandma)
        try await laptop.share(emma, with: grandma.account, readOnly: true)
        let oldSlot = try await laptop.api.recoverySlot()
        func rows() async throws -> (boxes: [KeyBox], wraps: [MemberWrap], identities: [IdentityWrap]) {
            (try await laptop.api.boxes(all: true), try await laptop.api.wraps(member: emma.id), try await laptop.api.identityWraps())
        }
        let before = try await rows()
        try await laptop.setRecoveryCode(try RecoveryCode.generate(), parameters: .interactive)
        let after = try await rows()  // the database as a copy taken after the rotation would hold it

        // Everything the old code reaches through those rows.
        let old = try await RecoveryKeys.derive(code: fixture.code, salt: try Hex.decode(oldSlot.salt),
                                   parameters: try Argon2id.Parameters(iterations: oldSlot.iterations, memoryKiB: oldSlot.memoryKiB))
        var masters = [UInt32: SymmetricKey]()
        for box in before.boxes + after.boxes where box.recipient == ChainLink.recoverySigner {
            if let sealed = base64Decode(box.box), let key = try? SymmetricKey(old.boxKey.openSealedBox(sealed)) { masters[box.generation] = key }
        }
        var members = [SymmetricKey](), identities = [Ed25519.PublicKey]()
        for wrap in before.wraps + after.wraps {
            guard let master = masters[wrap.masterGeneration] else { continue }
            if let key = try? MemberKeyWrap.open(wrap, account: laptop.account, masterKey: master, masterGeneration: wrap.masterGeneration) {
                members.append(key)
            }
        }
        for wrap in before.identities + after.identities {
            guard let master = masters[wrap.masterGeneration] else { continue }
            if let keys = try? IdentityKeyWrap.open(wrap, account: laptop.account, masterKey: master, masterGeneration: wrap.masterGeneration) {
                identities.append(keys.signing.publicKey)
            }
        }
        // The old code does open the old keys (so this test can fail) ...
        #expect(!masters.isEmpty && !members.isEmpty && !identities.isEmpty)
        // ... and none in force.
        let state = try await laptop.chain
        #expect(masters[state.masterGeneration] == nil, "the old code opens the current master key")
        let generation = try #require(state.members[emma.id]?.generation)
        #expect(!members.contains(try await laptop.memberKey(emma.id, generation: generation)), "the old code opens Emma's current key")
        #expect(!identities.contains(try #require(state.identity).signingKey), "the old code opens the sharing identity in force")
        // The grantee trusts the renewed identity only after the people verify again.
        #expect(try await grandma.sharedMembers().members.isEmpty)
        _ = await verifyContacts(laptop, grandma)
        #expect(try await grandma.sharedMembers().members.first?.generation == generation)
    }
}

/// Keeping a contact keeps exactly the pin and the shares the plan showed, signed again
/// by the revoking device before anything is revoked: a share the thief adds between
/// the plan and the revocation ends with the rest.
@Test func keepingAContactKeepsOnlyWhatThePlanShowed() async throws {
    try await Fixture.run { fixture, laptop in
        let alice = try await laptop.addMember(name: "Alice")
        _ = try await laptop.addMember(name: "Bob")
        let phone = try await fixture.enroll("phone", in: laptop.account)
        let grandma = try await grandparent(fixture)
        _ = await verifyContacts(phone, grandma)
        try await phone.share(try await phone.member(named: "Alice"), with: grandma.account, readOnly: false)
        try await laptop.sync()

        let plan = try await laptop.revocationPlan(for: try await laptop.device(matching: "phone"), keepingContacts: [grandma.account])
        #expect(plan.ended.isEmpty && plan.keptStanding.count == 2)
        // Meanwhile the thief shares Bob too, from the phone.
        try await phone.share(try await phone.member(named: "Bob"), with: grandma.account, readOnly: false)
        let done = try await laptop.revoke(plan)

        let state = try await laptop.chain
        #expect(state.contacts[grandma.account]?.signer == laptop.device, "the kept pin is not signed by the laptop")
        #expect(state.grants.values.map(\.member) == [alice.id] && state.grants.values.allSatisfy { $0.signer == laptop.device })
        #expect(done.keptStanding.count == 2 && done.ended.count == 1, "\(done.ended)")
        #expect(state.orphaned.isEmpty)
        // The identity the phone held was renewed: grandma trusts it once the people verify again, and sees Alice only.
        #expect(try await grandma.sharedMembers().members.isEmpty)
        _ = await verifyContacts(laptop, grandma)
        #expect(try await grandma.sharedMembers().members.map(\.name) == ["Alice"])
    }
}
