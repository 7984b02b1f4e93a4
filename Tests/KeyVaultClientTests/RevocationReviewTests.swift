import Foundation
import KeyVaultClient
import KeyVaultCrypto
import KeyVaultMnemonic
import KeyVaultModel
import KeyVaultProtocol
import Testing

// Proofs of concept from the security review of branch sec-review (round after issue 8).
// Each test states what SHOULD hold; it fails on the code reviewed.

/// SEC-1. `device revoke` computes its plan (the devices the stolen one added) once,
/// before the confirmation prompt, and `Vault.revoke(_ plan:)` never looks again. A
/// device the thief adds after the plan was made (while the person reads the prompt,
/// or in any window before the revocation link lands) is not revoked, and the master
/// key rotation that follows seals the new generation to it: the thief keeps reading
/// everything after a "successful" revocation.
@Test func secReviewADeviceAddedByTheThiefAfterThePlanIsRevokedToo() async throws {
    try await Fixture.run { fixture, laptop in
        let alice = try await laptop.addMember(name: "Alice")
        _ = try await putFile(laptop, fixture, alice, "before the theft")
        let phone = try await fixture.enroll("phone", in: laptop.account)  // stolen, unlocked
        try await laptop.sync()

        // The person runs `keyctl device revoke phone`: the plan is made and the prompt shows it.
        let plan = try laptop.revocationPlan(for: try laptop.device(matching: "phone"))
        #expect(plan.targets.map(\.name) == ["phone"])

        // Meanwhile the thief approves a device of its own from the phone (it controls both screens).
        let screen = LinkScreen()
        let sleeperTask = Task {
            try await Vault.link(home: fixture.home("sleeper"), server: "test", transport: fixture.transport, account: laptop.account,
                                 name: "sleeper", pollInterval: .milliseconds(10), events: { screen.show($0) })
        }
        let exchanged = try await phone.exchange(try await phone.linkCandidate(code: try await screen.wait { screen.code }),
                                                 pollInterval: .milliseconds(10))
        try await phone.approve(exchanged, typedSAS: try await screen.wait { screen.sas })
        let sleeper = try await sleeperTask.value
        let sleeperID = sleeper.device
        sleeper.home.unlock()
        phone.home.unlock()

        // The person confirms; the revocation "succeeds" and rotates every key.
        try await laptop.revoke(plan)
        let state = try laptop.chain
        #expect(try laptop.pendingRotation().isEmpty)
        #expect(state.devices[sleeperID]?.addedBy == phone.device)

        // Expected: a device the revoked phone added is revoked with it (issue 8, item 2).
        #expect(state.devices[sleeperID]?.isActive == false,
                "the device the thief added after the plan is still active after `device revoke phone`")
        // Expected: it receives no master key made after the revocation.
        let leaked = try? await fixture.open("sleeper", forgetKeys: true).masterKey()
        #expect(leaked == nil, "the thief's device opened master key generation \(leaked?.generation ?? 0), made by the revocation")
    }
}

/// Links a new device `name` into the account of `approver`, through the real
/// commit/answer/reveal exchange, with the approver typing the digits shown.
func secReviewLink(_ fixture: Fixture, by approver: Vault, _ name: String) async throws -> Vault {
    let screen = LinkScreen()
    let task = Task {
        try await Vault.link(home: fixture.home(name), server: "test", transport: fixture.transport, account: approver.account,
                             name: name, pollInterval: .milliseconds(10), events: { screen.show($0) })
    }
    let exchanged = try await approver.exchange(try await approver.linkCandidate(code: try await screen.wait { screen.code }),
                                                pollInterval: .milliseconds(10))
    try await approver.approve(exchanged, typedSAS: try await screen.wait { screen.sas })
    return try await task.value
}

/// SEC-3. The cascade follows `addedBy` only through ACTIVE devices
/// (`ChainState.devicesAdded(by:)` filters `activeDevices`), and a code's compromise looks
/// one level up only (`recoveryCompromised(byRevoking:)`). The thief, on the stolen phone,
/// launders a device through a revoked intermediate: phone adds X, X adds Y, the phone
/// revokes X keeping Y (or signs a plain device.revoke of X), Y sets a recovery code of its
/// own. When the owner revokes the phone, the plan lists nothing, the code is not
/// compromised, and Y and its code receive the new master key.
@Test func secReviewADeviceLaunderedThroughARevokedIntermediateIsRevokedWithThePhone() async throws {
    try await Fixture.run { fixture, laptop in
        let alice = try await laptop.addMember(name: "Alice")
        _ = try await putFile(laptop, fixture, alice, "the owner's scan")
        let phone = try await fixture.enroll("phone", in: laptop.account)  // stolen, unlocked

        // The thief: phone adds X, X adds Y, the phone revokes X but keeps Y.
        let x = try await secReviewLink(fixture, by: phone, "x")
        let y = try await secReviewLink(fixture, by: x, "laptop (work)")
        let yID = y.device
        x.home.unlock()
        try await phone.sync()
        try await phone.revoke(try phone.revocationPlan(for: try phone.device(matching: "x"), keeping: [yID]))
        // Y sets a recovery code only the thief knows.
        try await y.sync()
        let thiefCode = try Mnemonic.generate(wordCount: 24, language: .english)
        try await y.setRecoveryCode(thiefCode, parameters: .interactive)
        y.home.unlock()
        phone.home.unlock()

        // The owner revokes the stolen phone.
        try await laptop.sync()
        let plan = try laptop.revocationPlan(for: try laptop.device(matching: "phone"))
        #expect(plan.targets.contains { $0.id == yID }, "the plan does not list Y, which the phone's device X added")
        #expect(plan.compromisesRecovery, "the plan does not treat the code set by Y as compromised")
        try await laptop.revoke(plan, newRecoveryCode: try Mnemonic.generate(wordCount: 24, language: .english), parameters: .interactive)
        let state = try laptop.chain
        #expect(state.devices[yID]?.isActive == false, "Y is still active after `device revoke phone`")
        let leaked = try? await fixture.open("laptop (work)", forgetKeys: true).masterKey()
        #expect(leaked == nil, "Y opened master key generation \(leaked?.generation ?? 0), made by the revocation")
        #expect(state.recovery?.isCompromised == true || state.recovery?.setBy != yID,
                "the thief's recovery code (set by Y) is still the account's working code")
    }
}

/// SEC-5. Judging a box at the link it names lets a revoked device sign boxes of the
/// generation current at its revocation (it is "active" at any link before it), and
/// nothing in the chain commits to the key inside a box. Between a revocation and its
/// master key rotation (an interrupted `device revoke`, or one still running), the
/// revoked device (with the server, or the server holding its key) hands an honest device
/// that has not cached that generation a box of a key of its choosing. The device
/// accepts it and caches it for good: with members, the pending rotation can then never
/// finish from that device (the wraps do not open), and whatever it seals meanwhile
/// (a new device's box, a new recovery code's box) holds the forged key.
/// Expected: a forged key is refused (e.g. `master.rotate` and genesis commit to a key
/// check value that a device compares after opening its box).
@Test func secReviewARevokedDeviceCannotHandOutAForgedKeyOfTheGenerationItKnew() async throws {
    try await Fixture.run { fixture, laptop in
        _ = try await laptop.addMember(name: "Alice")
        let phone = try await fixture.enroll("phone", in: laptop.account)
        let phoneKeys = phone.record.keys
        let phoneActiveAt = try phone.chain.sequence  // the phone's enrolment link
        phone.home.unlock()
        try await laptop.sync()

        // The revocation lands; its master key rotation does not (the connection drops).
        fixture.transport.answer { request in
            guard request.method == "POST", request.target.hasSuffix("/chain"),
                  String(decoding: request.body, as: UTF8.self).contains("master.rotate") else { return nil }
            return HTTPReply(status: 503, headers: [:], body: Array(#"{"error":{"code":"unavailable","message":"down"}}"#.utf8))
        }
        await #expect(throws: (any Error).self) { try await laptop.revoke(try laptop.device(matching: "phone")) }
        fixture.transport.answer(nil)
        let g = try laptop.chain.masterGeneration
        let me = laptop.record.keys
        let account = laptop.account
        laptop.home.unlock()

        // The server serves, as the laptop's box of generation g, one the revoked phone signed
        // naming the link where it was added, sealing a key the phone chose.
        let chosen = SymmetricKey()
        var forged = KeyBox(generation: g, sequence: phoneActiveAt, recipient: me.id.rawValue,
                            box: base64Encode(try me.agreement.publicKey.sealedBox(for: chosen)), signer: phoneKeys.id.rawValue, signature: "")
        forged.sign(with: phoneKeys.signing, account: account)
        let served = forged
        fixture.transport.tamper(rewriting("/boxes", as: [String: [KeyBox]].self) { answer in answer["boxes"] = [served] })
        let reopened = try await fixture.open("laptop", forgetKeys: true)  // or a second device that never opened g
        let opened = try? await reopened.masterKey()
        #expect(opened == nil || opened?.key != chosen,
                "the laptop accepted and cached a master key of generation \(g) chosen by the revoked phone")
    }
}
