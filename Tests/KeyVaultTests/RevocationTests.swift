import Foundation
import KeyVault
import KeyVaultCrypto
import KeyVaultMnemonic
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultVault
import Testing

// Revocation and rotation against the real in-process service (issue 8, items 2, 4
// and 7): what a revocation leaves behind must still open for everyone who remains.

/// Every member key generation of the account, opened by `vault` from the server
/// (nothing cached), and every attachment in `files` read back.
func expectOpensEverything(_ vault: Vault, _ files: [(Vault.Member, ContentAddress, [UInt8])],
                           sourceLocation: SourceLocation = #_sourceLocation) async throws {
    for member in try await vault.chain.members.values {
        for h in 1...member.generation { _ = try await vault.memberKey(member.id, generation: h) }
    }
    for (stale, address, bytes) in files {
        let member = try await vault.member(named: stale.name)
        let opened = try await vault.get(address, member: member)
        #expect(opened.withUnsafeBytes { Array($0) } == bytes, sourceLocation: sourceLocation)
    }
}

extension Fixture {
    /// A new device `name` enrolled in `account` with `code` (the account's first code by default).
    func enroll(_ name: String, in account: AccountID, code: Mnemonic? = nil) async throws -> Vault {
        try await Vault.enrollWithRecoveryCode(home: home(name), server: "test", transport: transport, account: account, name: name,
                                               code: code ?? self.code)
    }
}

/// Puts a small file for `member` and returns what `expectOpensEverything` checks.
func putFile(_ vault: Vault, _ fixture: Fixture, _ member: Vault.Member, _ text: String) async throws -> (Vault.Member, ContentAddress, [UInt8]) {
    let path = fixture.root.appendingPathComponent(UUID().uuidString).path
    let bytes = Array(text.utf8)
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    let put = try await vault.put(fileAt: path, member: member)
    return (member, put.address, bytes)
}

/// A rename seals a name as a put seals content: after the revocation's rotation, under
/// a member key generation the revoked device never receives.
@Test func aRenameAfterARevocationWaitsForItsRotation() async throws {
    try await Fixture.run { fixture, laptop in
        let alice = try await laptop.addMember(name: "Alice")
        let before = try await laptop.put(Array("a scan".utf8), member: alice, name: "scan.pdf")
        let phone = try await fixture.enroll("phone", in: laptop.account)
        phone.home.unlock()
        try await laptop.sync()
        await revokeLosingTheRotation(fixture, laptop, "phone")
        #expect(try await laptop.pendingRotation().master)

        let renamed = try await laptop.renameAttachment(before.address, member: alice, to: "vaccinations.pdf")
        #expect(try await laptop.pendingRotation().isEmpty)
        let generation = try AttachmentMeta.generation(of: try #require(renamed.sealedMeta))
        #expect(generation > before.address.generation, "the new name is sealed under generation \(generation), which the phone holds")
        #expect(try await laptop.attachments(member: alice).first { $0.address == before.address }?.name == "vaccinations.pdf")
    }
}

@Test func revokingThePhoneThatMadeTheCurrentMasterKeyStrandsNothing() async throws {
    try await Fixture.run { fixture, laptop in
        let alice = try await laptop.addMember(name: "Alice")
        var files = [try await putFile(laptop, fixture, alice, "before the phone")]
        let phone = try await fixture.enroll("phone", in: laptop.account)
        // The phone makes master key generation 2; the laptop never opens it.
        #expect(try await phone.rotateMaster() == 2)
        files.append(try await putFile(phone, fixture, try await phone.member(named: "Alice"), "while the phone held generation 2"))
        phone.home.unlock()
        laptop.home.unlock()

        // The laptop, which holds no key of generation 2, revokes the phone and finishes every rotation.
        let revoker = try await fixture.open("laptop", forgetKeys: true)
        try await revoker.revoke(try revoker.device(matching: "phone"))
        #expect(try await revoker.pendingRotation().isEmpty)
        #expect(try await revoker.chain.masterGeneration == 3)
        revoker.home.unlock()
        try await expectOpensEverything(try await fixture.open("laptop", forgetKeys: true), files)

        // A device enrolled with the recovery code afterwards opens everything too.
        let desktop = try await fixture.enroll("desktop", in: laptop.account)
        try await expectOpensEverything(desktop, files)
    }
}

@Test func recoveryRotateRetriedAfterAConcurrentRotationSealsTheCurrentGeneration() async throws {
    try await Fixture.run { fixture, laptop in
        _ = try await laptop.addMember(name: "Alice")
        laptop.home.unlock()
        let phone = try await fixture.enroll("phone", in: laptop.account)
        phone.home.unlock()
        // The laptop reads the chain, then the phone rotates the master key before the laptop writes.
        let racer = try await fixture.open("laptop")
        #expect(try await fixture.open("phone").rotateMaster() == 2)
        let code = try Mnemonic.generate(wordCount: 24, language: .english)
        try await racer.setRecoveryCode(RecoveryCode(code), parameters: .interactive)

        // The recovery.set landed while generation 2 was current: the new code must open generation 2.
        let slot = try await racer.api.recoverySlot()
        let keys = try await RecoveryKeys.derive(code: code, salt: try Hex.decode(slot.salt), parameters: .interactive)
        let opened = try await racer.api.boxes(all: true).filter { $0.recipient == ChainLink.recoverySigner }.compactMap { box -> UInt32? in
            guard let sealed = base64Decode(box.box), (try? keys.boxKey.openSealedBox(sealed)) != nil else { return nil }
            return box.generation
        }
        #expect(opened.sorted() == [2, 3], "the new code opens generations \(opened)")
    }
}

@Test func uploadsAndNewMembersAfterARevocationWaitForItsRotation() async throws {
    try await Fixture.run { fixture, laptop in
        let alice = try await laptop.addMember(name: "Alice")
        let phone = try await fixture.enroll("phone", in: laptop.account)
        let phoneKnows = try await phone.chain.masterGeneration
        phone.home.unlock()
        try await laptop.sync()

        // The revocation lands; its master key rotation does not (the connection drops).
        await revokeLosingTheRotation(fixture, laptop, "phone")
        #expect(try await laptop.pendingRotation().master)

        // An upload and a new member now use only generations made after the revocation.
        let put = try await putFile(laptop, fixture, alice, "after the revocation")
        #expect(put.1.generation > 1, "the upload used member key generation \(put.1.generation), which the phone knows")
        let bob = try await laptop.addMember(name: "Bob")
        #expect(try await laptop.pendingRotation().isEmpty)
        let state = try await laptop.chain
        #expect(state.masterGeneration > phoneKnows)
        let wraps = try await laptop.api.wraps(member: bob.id)
        #expect(!wraps.isEmpty && wraps.allSatisfy { $0.masterGeneration > phoneKnows },
                "Bob's key was wrapped under master key generations \(wraps.map(\.masterGeneration))")
    }
}

@Test func aBoxClaimingALinkWhereItsSignerWasRevokedOrAnotherGenerationIsRefused() async throws {
    try await Fixture.run { fixture, laptop in
        let phone = try await fixture.enroll("phone", in: laptop.account)
        #expect(try await phone.rotateMaster() == 2)
        let phoneActiveAt = try await phone.chain.sequence  // the link where the phone made generation 2
        let phoneKeys = await phone.record.keys
        phone.home.unlock()
        try await laptop.sync()
        try await laptop.revoke(try laptop.device(matching: "phone"))
        let g = try await laptop.chain.masterGeneration
        laptop.home.unlock()
        let honest = try await fixture.open("laptop", forgetKeys: true)
        _ = try await honest.masterKey()  // the honest box opens
        honest.home.unlock()

        // The revoked phone (or a server holding its key) forges the laptop's box of the newest
        // generation: naming the link that made it, where the phone was revoked; or naming a link
        // where the phone was active, where that generation did not exist yet.
        let account = laptop.account
        let me = await laptop.record.keys
        let chosen = SymmetricKey()
        for (claim, expected) in [(UInt64?.none, "signer_revoked"), (phoneActiveAt, "wrong_generation")] {
            fixture.transport.tamper(rewriting("/boxes", as: [String: [KeyBox]].self) { answer in
                answer["boxes"] = try answer["boxes"]!.map { box in
                    var forged = KeyBox(generation: box.generation, sequence: claim ?? box.sequence, recipient: box.recipient,
                                        box: base64Encode(try me.boxKey.publicKey.sealedBox(for: chosen)),
                                        signer: phoneKeys.id.rawValue, signature: "")
                    forged.sign(with: phoneKeys.signing, account: account)
                    return forged
                }
            })
            let vault = try await fixture.open("laptop", forgetKeys: true)
            await expectRefusal(expected) { _ = try await vault.masterKey() }
            let cached = await vault.record.masterKeys[g]
            #expect(cached == nil)
            vault.home.unlock()
        }
    }
}

@Test func revokingTheDeviceThatSetTheCodeCompromisesItUntilANewOneIsSet() async throws {
    try await Fixture.run { fixture, laptop in
        let alice = try await laptop.addMember(name: "Alice")
        let files = [try await putFile(laptop, fixture, alice, "the owner's scan")]
        let phone = try await fixture.enroll("phone", in: laptop.account)
        // The thief, on the phone: a code of its own, and two devices enrolled with it.
        let thiefCode = try Mnemonic.generate(wordCount: 24, language: .english)
        try await phone.setRecoveryCode(RecoveryCode(thiefCode), parameters: .interactive)
        phone.home.unlock()
        var added = [KeyVaultModel.DeviceID]()
        for name in ["extra", "spare"] {
            let vault = try await fixture.enroll(name, in: laptop.account, code: thiefCode)
            added.append(vault.device)
            vault.home.unlock()
        }
        try await laptop.sync()

        // The plan: the phone and what it added, less what the person keeps; the code needs replacing.
        let target = try await laptop.device(matching: "phone")
        let all = try await laptop.revocationPlan(for: target)
        #expect(all.targets.map(\.id) == [target.id] + added && all.kept.isEmpty && all.compromisesRecovery)
        let plan = try await laptop.revocationPlan(for: target, keeping: [added[1]])
        #expect(plan.targets.map(\.id) == [target.id, added[0]] && plan.kept.map(\.id) == [added[1]])
        await expectRefusal("invalid_input", kind: .input) { _ = try await laptop.revocationPlan(for: target, keeping: [laptop.device]) }

        // Revoked without a new code: the code is compromised, and nothing new is sealed to it.
        try await laptop.revoke(plan)
        let state = try await laptop.chain
        #expect(state.recovery?.isCompromised == true)
        #expect(try await laptop.pendingRotation().isEmpty)
        let boxes = try await laptop.api.boxes(all: true)
        #expect(!boxes.contains { $0.recipient == ChainLink.recoverySigner && $0.generation == state.masterGeneration })
        #expect(try await laptop.audit().findings.contains { $0.area == "recovery" })
        await expectRefusal("recovery_compromised", kind: .server) { _ = try await laptop.api.recoveryChallenge() }
        await #expect(throws: KeyVaultError.self) {
            _ = try await fixture.enroll("thief", in: laptop.account, code: thiefCode)
        }
        // Nor does the server take a box sealed to it, even one signed by an active device.
        let me = await laptop.record.keys
        var link = ChainLink(sequence: state.sequence + 1, previous: state.head, type: .masterRotate, signer: me.id.rawValue,
                             time: 0, body: ["masterGeneration": String(state.masterGeneration + 1)])
        link.sign(with: me.signing)
        var box = KeyBox(generation: state.masterGeneration + 1, sequence: link.sequence, recipient: ChainLink.recoverySigner,
                         box: base64Encode(try state.recovery!.boxKey.sealedBox(for: SymmetricKey())), signer: me.id.rawValue, signature: "")
        box.sign(with: me.signing, account: laptop.account)
        await expectRefusal("recovery_compromised", kind: .server) { try await laptop.api.append(AppendRequest(link: link, boxes: [box])) }

        // A new code from the laptop ends it: it enrolls, and opens everything.
        let fresh = try Mnemonic.generate(wordCount: 24, language: .english)
        try await laptop.setRecoveryCode(RecoveryCode(fresh), parameters: .interactive)
        #expect(try await laptop.chain.recovery?.isCompromised == false)
        #expect(try await laptop.audit().findings.isEmpty)
        let desktop = try await fixture.enroll("desktop", in: laptop.account, code: fresh)
        try await expectOpensEverything(desktop, files)
    }
}

/// Revokes `name` from `vault` while the server drops the master key rotation that
/// follows (a 503): the revocation lands, the rotation is left to do.
func revokeLosingTheRotation(_ fixture: Fixture, _ vault: Vault, _ name: String) async {
    fixture.transport.answer { request in
        guard request.method == "POST", request.target.hasSuffix("/chain"),
              String(decoding: request.body, as: UTF8.self).contains("master.rotate") else { return nil }
        return HTTPReply(status: 503, headers: [:], body: Array(#"{"error":{"code":"unavailable","message":"down"}}"#.utf8))
    }
    await #expect(throws: (any Error).self) { try await vault.revoke(try vault.device(matching: name)) }
    fixture.transport.answer(nil)
}
