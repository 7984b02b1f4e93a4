import Foundation
import KeyVault
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultVault
import Testing

// Issue 8, item 8: checks that no other test noticed when they were removed from a
// copy of the code. Each test here is built so that exactly that check stands between
// the tampering double and a wrong outcome (docs/security-tests.md lists them all).

/// A server that relabels Bob's wrap as Alice's, under Alice's name and generation, gives
/// `audit` a wrap that says the right member, generation and master key but does not
/// open for them. Only opening it notices: the audit must report it (and `keyctl audit`
/// then exits 1).
@Test func auditReportsAMemberWrapThatDoesNotOpenForItsMember() async throws {
    try await Fixture.run { fixture, laptop in
        // Both at generation 1, so that nothing but opening tells the two wraps apart.
        let alice = try await laptop.addMember(name: "Alice")
        let bob = try await laptop.addMember(name: "Bob")
        let honest = try await laptop.audit()
        #expect(honest.findings.isEmpty, "\(honest.findings)")

        let bobWraps = try await laptop.api.wraps(member: bob.id)
        fixture.transport.tamper(rewriting("member=\(alice.id)", as: [String: [MemberWrap]].self) { answer in
            answer["wraps"] = bobWraps.map { var wrap = $0; wrap.member = alice.id; return wrap }
        })
        let report = try await laptop.audit()
        #expect(report.findings.count == 1, "\(report.findings)")
        #expect(report.findings.contains { $0.area == "wraps" && $0.message.contains("does not open") }, "\(report.findings)")
    }
}

/// The account id is the first 16 bytes of the genesis hash, so a chain of another
/// account is refused before the anchor is looked at (`wrong_account`). What only the
/// anchor's full genesis hash catches is a recovery slot whose anchor, for this very
/// account id, names another genesis: the test, knowing the code, seals one (as a
/// server that learnt an old code or found a 128-bit prefix collision could). The
/// honest chain must not be accepted against it.
@Test func enrollmentRefusesAChainThatDoesNotStartAtTheAnchorsGenesis() async throws {
    try await Fixture.run { fixture, laptop in
        let slot = try await ServerAPI(transport: fixture.transport, account: laptop.account).recoverySlot()
        let keys = try await RecoveryKeys.derive(code: fixture.code, salt: Hex.decode(slot.salt),
                                    parameters: Argon2id.Parameters(iterations: slot.iterations, memoryKiB: slot.memoryKiB))
        let honest = try Envelope(base64: slot.anchor)
        let links = await laptop.links
        #expect(try RecoveryAnchor.open(honest, with: keys, account: laptop.account).genesis == links.first?.hash)

        let stranger = DeviceKeys()
        let otherGenesis = ChainLink.genesis(signingKey: stranger.signing, boxKey: stranger.boxKey.publicKey, name: "laptop",
                                             time: links[0].time)
        let forged = try RecoveryAnchor(account: laptop.account, genesis: otherGenesis.hash)
            .seal(under: keys, generation: honest.generation).base64
        fixture.transport.tamper(rewriting("/recovery", as: RecoverySlot.self) { $0.anchor = forged })
        await expectRefusal("wrong_account") {
            _ = try await Vault.enrollWithRecoveryCode(home: fixture.home("phone"), server: "test", transport: fixture.transport,
                                                       account: laptop.account, name: "phone", code: fixture.code)
        }
        try await laptop.sync()
        #expect(try await laptop.chain.devices.count == 1)

        fixture.transport.tamper(nil)
        _ = try await Vault.enrollWithRecoveryCode(home: fixture.home("phone"), server: "test", transport: fixture.transport,
                                                   account: laptop.account, name: "phone", code: fixture.code)
    }
}

/// A server that lists Bob's wrap as it is (it says Bob) in its answer for Alice: the
/// wrap opens, for Bob, so only matching the member asked for keeps Bob's key from
/// being taken as Alice's.
@Test func aWrapOfAnotherMemberListedUnderThisOneIsNotTaken() async throws {
    try await Fixture.run { fixture, laptop in
        let alice = try await laptop.addMember(name: "Alice")
        let bob = try await laptop.addMember(name: "Bob")
        laptop.home.unlock()
        let bobWraps = try await laptop.api.wraps(member: bob.id)
        fixture.transport.tamper(rewriting("member=\(alice.id)", as: [String: [MemberWrap]].self) { answer in
            answer["wraps"] = bobWraps
        })
        let vault = try await fixture.open("laptop", forgetKeys: true)
        await expectRefusal("missing_key") { _ = try await vault.memberKey(alice.id, generation: 1) }
        vault.home.unlock()
        fixture.transport.tamper(nil)
        _ = try await fixture.open("laptop", forgetKeys: true).memberKey(alice.id, generation: 1)
    }
}

/// A device that has not seen its chain yet (as just after `device link`) has only the
/// account id to go by. The server cannot sign as this device, but it can found an
/// account of its own and add this device's public keys to it: that chain names the
/// device, active, with its keys, and must still be refused (`wrong_account`).
@Test func aDeviceThatHasSeenNoChainRefusesAnotherAccountThatNamesIt() async throws {
    try await Fixture.run { fixture, laptop in
        laptop.home.unlock()
        var record = try fixture.home("laptop").load()
        record.head = ""
        record.sequence = 0
        try fixture.home("laptop").save(record)
        let server = DeviceKeys()
        let genesis = ChainLink.genesis(signingKey: server.signing, boxKey: server.boxKey.publicKey, name: "server", time: 0)
        var add = ChainLink(sequence: 1, previous: genesis.hash, type: .deviceAdd, signer: server.id.rawValue, time: 0,
                            body: record.keys.fields(name: "laptop"))
        add.sign(with: server.signing)
        let links = [genesis, add]
        fixture.transport.tamper(rewriting("/chain", as: ChainResponse.self) { chain in
            chain.links = links
            chain.head = links[1].hash
        })
        await expectRefusal("wrong_account") { _ = try await fixture.open("laptop") }
        fixture.transport.tamper(nil)
        _ = try await fixture.open("laptop")
    }
}

/// `audit` checks every box and every listing against the chain: a box whose signature
/// does not verify, a missing box of an active device, and a wrap listed under another
/// member than it names are each a finding.
@Test func auditReportsAForgedBoxAMissingBoxAndAWrapListedUnderAnotherMember() async throws {
    try await Fixture.run { fixture, laptop in
        let alice = try await laptop.addMember(name: "Alice")
        let bob = try await laptop.addMember(name: "Bob")
        #expect(try await laptop.audit().findings.isEmpty)
        let me = laptop.device.rawValue

        fixture.transport.tamper(rewriting("/boxes", as: [String: [KeyBox]].self) { answer in
            answer["boxes"] = answer["boxes"]!.map { var box = $0; box.signature = base64Encode([UInt8](repeating: 7, count: 64)); return box }
        })
        var findings = try await laptop.audit().findings
        #expect(!findings.isEmpty && findings.allSatisfy { $0.area == "boxes" && $0.message.contains("signature") }, "\(findings)")

        fixture.transport.tamper(rewriting("/boxes", as: [String: [KeyBox]].self) { answer in
            answer["boxes"] = answer["boxes"]!.filter { $0.recipient != me }
        })
        findings = try await laptop.audit().findings
        #expect(findings.map(\.area) == ["boxes"] && findings[0].message.contains("has no box of the current master key"), "\(findings)")

        fixture.transport.tamper(rewriting("member=\(alice.id)", as: [String: [MemberWrap]].self) { answer in
            answer["wraps"] = answer["wraps"]!.map { var wrap = $0; wrap.member = bob.id; return wrap }
        })
        findings = try await laptop.audit().findings
        #expect(findings.contains { $0.area == "wraps" && $0.message.contains("listed a wrap of member") }, "\(findings)")
    }
}

/// A revoked device stops when its chain says so, even if the server keeps answering
/// it (here the double serves it the account's real chain): `device_revoked`.
@Test func aRevokedDeviceStopsWhenTheChainSaysSoEvenIfTheServerAnswersIt() async throws {
    try await Fixture.run { fixture, laptop in
        let phone = try await Vault.enrollWithRecoveryCode(home: fixture.home("phone"), server: "test", transport: fixture.transport,
                                                            account: laptop.account, name: "phone", code: fixture.code)
        phone.home.unlock()
        try await laptop.sync()
        try await laptop.revoke(try laptop.device(matching: phone.device.rawValue))
        let body = Array(try JSONEncoder().encode(try await laptop.api.chain()))
        fixture.transport.answer { request in
            request.method == "GET" && request.target.contains("/chain") ? HTTPReply(status: 200, headers: [:], body: body) : nil
        }
        do {
            _ = try await fixture.open("phone")
            Issue.record("expected device_revoked")
        } catch let error as KeyVaultError {
            #expect(error.code == .deviceRevoked, "\(error)")
        }
    }
}

/// The server commits a recovery enrollment but its answer is lost (a crash, a cut
/// connection). Running the enrollment again finds this device already in the chain
/// and finishes with the keys it saved: one device, not a second one beside a ghost
/// whose keys were thrown away.
@Test func anEnrollmentWhoseAnswerWasLostFinishesWithTheSameDeviceWhenRunAgain() async throws {
    try await Fixture.run { fixture, laptop in
        fixture.transport.tamper { request, _ in
            if request.method == "POST", request.target.hasSuffix("/recovery/enroll") { throw URLError(.networkConnectionLost) }
        }
        await #expect(throws: (any Error).self) {
            _ = try await Vault.enrollWithRecoveryCode(home: fixture.home("phone"), server: "test", transport: fixture.transport,
                                                       account: laptop.account, name: "phone", code: fixture.code)
        }
        fixture.transport.tamper(nil)
        try await laptop.sync()
        let added = try await laptop.chain.devices.values.filter { $0.name == "phone" }.map(\.id)
        #expect(added.count == 1)
        let phone = try await Vault.enrollWithRecoveryCode(home: fixture.home("phone"), server: "test", transport: fixture.transport,
                                                           account: laptop.account, name: "phone", code: fixture.code)
        #expect(phone.device == added.first)
        try await laptop.sync()
        #expect(try await laptop.chain.devices.values.filter(\.isActive).map(\.name).sorted() == ["laptop", "phone"])
        let alice = try await laptop.addMember(name: "Alice")
        try await phone.sync()
        #expect(try await phone.members().map(\.id) == [alice.id])
    }
}

/// A server that answers an account's creation with another account (here the laptop's)
/// or another head says it did not store the genesis this device made. That answer is
/// refused, and no device is saved (without the check it went unnoticed: the device was
/// saved, and the recovery code set, for an account the server may not hold as made).
@Test func aCreationAnsweredWithAnotherAccountOrHeadIsRefusedAndNothingIsSaved() async throws {
    try await Fixture.run { fixture, laptop in
        let changes: [@Sendable (inout CreateAccountResponse) -> Void] = [
            { $0.account = laptop.account },
            { $0.head = String(repeating: "0", count: 64) },
        ]
        for (index, change) in changes.enumerated() {
            fixture.transport.tamper(rewriting("/v1/accounts", method: "POST", status: 201, as: CreateAccountResponse.self, change))
            let home = fixture.home("desk\(index)")
            await expectRefusal("wrong_account") {
                _ = try await Vault.createAccount(home: home, server: "test", transport: fixture.transport, name: "desk",
                                                  code: fixture.code, parameters: .interactive)
            }
            let saved = try home.exists
            #expect(!saved, "a device was saved for an account the server answered wrongly")
        }
    }
}

/// A server whose audit log pages in a circle (every page from the first entry again) is
/// refused at the first entry that goes back, not read ten thousand times over.
@Test func anAuditLogThatGoesBackIsRefusedAtOnce() async throws {
    try await Fixture.run { fixture, laptop in
        let first = Locked<[UInt8]?>(nil)
        let pages = Locked(0)
        fixture.transport.tamper { request, reply in
            guard request.method == "GET", request.target.contains("/audit"), reply.status == 200 else { return }
            pages.withLock { $0 += 1 }
            reply.body = first.withLock { saved in
                let page = saved ?? reply.body
                saved = page
                return page
            }
        }
        do {
            _ = try await laptop.api.audit()
            Issue.record("a log that goes back was read")
        } catch let error as KeyVaultError {
            #expect(error.code == .badResponse && error.message.contains("goes back"), "\(error.code): \(error.message)")
        }
        #expect(pages.withLock { $0 } == 2)
    }
}

/// A home whose device the chain lists with another box key (a home copied over with
/// other keys, or a box key swapped while the device was linked) is refused: what is
/// sealed to the chain's key would not open with the home's, and what the home seals
/// would not be the device's.
@Test func aHomeWhoseDeviceTheChainListsWithOtherKeysIsRefused() async throws {
    try await Fixture.run { fixture, laptop in
        // A copy of the laptop's home (the laptop's own is locked while its vault is open).
        var record = await laptop.record
        record.keys = DeviceKeys(signing: record.keys.signing)
        try fixture.home("copy").save(record)
        await expectRefusal("other keys for this device") {
            let again = try await fixture.open("copy")
            try await again.sync()
        }
    }
}

/// A server that serves an attachment under an address naming a key generation its
/// member does not have (7, the member being at 1) is refused for what it is
/// (`address_mismatch`), before a key of that generation is looked for.
@Test func anAttachmentWhoseAddressNamesAGenerationItsMemberDoesNotHaveIsRefused() async throws {
    try await Fixture.run { fixture, laptop in
        let emma = try await laptop.addMember(name: "Emma")
        let put = try await laptop.put(SystemRandom.bytes(count: 500), member: emma)
        let stored = try await laptop.api.attachment(member: emma.id, address: put.address, sharer: nil)
        let forged = try #require(ContentAddress("ca1.7.\(Hex.encode(put.address.mac))"))
        fixture.transport.answer { request in
            request.method == "GET" && request.target.hasSuffix("/attachments/\(forged)") ? HTTPReply(status: 200, body: stored) : nil
        }
        await expectRefusal("address_mismatch") { _ = try await laptop.get(forged, member: emma) }
    }
}

/// `audit` holds the server's device list to the chain: a device it leaves out, a device
/// it lists with the other status, and one the chain never added are each a finding.
@Test func auditReportsADeviceListThatDisagreesWithTheChain() async throws {
    try await Fixture.run { fixture, laptop in
        #expect(try await laptop.audit().findings.isEmpty)
        let changes: [(String, @Sendable (inout [DeviceInfo]) -> Void)] = [
            ("the server does not list device laptop", { $0.removeAll { $0.name == "laptop" } }),
            ("the server lists laptop as revoked", { $0 = $0.map { var device = $0; device.status = .revoked; return device } }),
            ("which the chain never added", { list in
                var ghost = list[0]
                ghost.id = DeviceKeys().id
                ghost.name = "ghost"
                list.append(ghost)
            }),
        ]
        for (expected, change) in changes {
            fixture.transport.tamper(rewriting("/devices", as: [String: [DeviceInfo]].self) { answer in change(&answer["devices", default: []]) })
            let findings = try await laptop.audit().findings
            #expect(findings.count == 1 && findings.contains { $0.area == "devices" && $0.message.contains(expected) }, "\(findings)")
        }
    }
}

/// A box of the current master key addressed to this device, signed by it at the right
/// link (every check of the box passes), that holds another key than the one this device
/// keeps: only opening it tells, and `audit` must.
@Test func auditReportsThisDevicesBoxThatHoldsAnotherKey() async throws {
    try await Fixture.run { fixture, laptop in
        #expect(try await laptop.audit().findings.isEmpty)
        let record = await laptop.record
        let account = laptop.account
        fixture.transport.tamper(rewriting("/boxes", as: [String: [KeyBox]].self) { answer in
            answer["boxes"] = try answer["boxes", default: []].map { box in
                guard box.recipient == record.keys.id.rawValue else { return box }
                var other = KeyBox(generation: box.generation, sequence: box.sequence, recipient: box.recipient,
                                   box: base64Encode(try record.keys.boxKey.publicKey.sealedBox(for: SymmetricKey())),
                                   signer: record.keys.id.rawValue, signature: "")
                other.sign(with: record.keys.signing, account: account)
                return other
            }
        })
        let findings = try await laptop.audit().findings
        #expect(findings.count == 1 && findings.contains { $0.area == "boxes" && $0.message.contains("does not hold the key this device has") },
                "\(findings)")
    }
}

/// A revocation whose master key rotation did not go through leaves the revoked device's
/// box of the current master key on the server: the key it holds is still in use, and
/// `audit` must say so (until the rotation is finished).
@Test func auditReportsARevokedDevicesBoxOfTheCurrentMasterKey() async throws {
    try await Fixture.run { fixture, laptop in
        _ = try await fixture.enroll("phone", in: laptop.account)
        try await laptop.sync()
        await revokeLosingTheRotation(fixture, laptop, "phone")
        let findings = try await laptop.audit().findings
        #expect(findings.count == 1 && findings.contains { $0.area == "boxes" && $0.message.contains("revoked device phone") }, "\(findings)")
        try await laptop.finishPendingRotations()
        #expect(try await laptop.audit().findings.isEmpty)
    }
}

/// A server that keeps back the recovery code's box of the current master key leaves the
/// code opening nothing: every other check passes, and `audit` must say so.
@Test func auditReportsARecoveryCodeWithoutABoxOfTheCurrentMasterKey() async throws {
    try await Fixture.run { fixture, laptop in
        #expect(try await laptop.audit().findings.isEmpty)
        fixture.transport.tamper(rewriting("/boxes", as: [String: [KeyBox]].self) { answer in
            answer["boxes", default: []].removeAll { $0.recipient == ChainLink.recoverySigner }
        })
        let findings = try await laptop.audit().findings
        #expect(findings.count == 1 && findings.contains { $0.area == "boxes" && $0.message.contains("the recovery code has no box") },
                "\(findings)")
    }
}

/// Member wraps the server keeps back or replaces: a generation with no wrap under the
/// current master key, and a wrap that opens for its member and generation but holds
/// another key than this device has (only comparing with the cached key tells).
@Test func auditReportsAMissingMemberWrapAndOneThatHoldsAnotherKey() async throws {
    try await Fixture.run { fixture, laptop in
        let alice = try await laptop.addMember(name: "Alice")
        _ = try await laptop.rotateMember(alice.id)
        _ = try await laptop.memberKey(alice.id, generation: 1)
        #expect(try await laptop.audit().findings.isEmpty)

        fixture.transport.tamper(rewriting("member=\(alice.id)", as: [String: [MemberWrap]].self) { answer in
            answer["wraps", default: []].removeAll { $0.memberGeneration == 1 }
        })
        var findings = try await laptop.audit().findings
        #expect(findings.count == 1 && findings.contains { $0.area == "wraps" && $0.message.contains("generation 1 has no wrap") },
                "\(findings)")

        let (master, g) = try await laptop.masterKey()
        let account = laptop.account
        let other = try MemberKeyWrap.seal(SymmetricKey(), account: account, member: alice.id, memberGeneration: 1,
                                           under: master, masterGeneration: g)
        fixture.transport.tamper(rewriting("member=\(alice.id)", as: [String: [MemberWrap]].self) { answer in
            answer["wraps"] = answer["wraps", default: []].map { $0.memberGeneration == 1 ? other : $0 }
        })
        findings = try await laptop.audit().findings
        #expect(findings.count == 1 && findings.contains { $0.area == "wraps" && $0.message.contains("holds another key") }, "\(findings)")
    }
}

/// An audit log that records a link of the chain under another type is a finding.
@Test func auditReportsALinkTheLogRecordsUnderAnotherType() async throws {
    try await Fixture.run { fixture, laptop in
        _ = try await laptop.addMember(name: "Alice")
        #expect(try await laptop.audit().findings.isEmpty)
        let added = try #require(await laptop.links.last?.sequence)
        fixture.transport.tamper(rewriting("/audit", as: [String: [AuditEntry]].self) { answer in
            answer["entries"] = answer["entries", default: []].map { var entry = $0; if entry.sequence == added { entry.event = "link.master.rotate" }; return entry }
        })
        let findings = try await laptop.audit().findings
        #expect(findings.count == 1 && findings.contains {
            $0.area == "audit log" && $0.message.contains("link \(added) is member.add in the chain but master.rotate")
        }, "\(findings)")
    }
}

/// The other half of the generation check: an attachment at an honest address whose key
/// part names a key generation its member does not have (7, the member being at 1) is
/// refused for what it is (`address_mismatch`), before a key of that generation is looked for.
@Test func anAttachmentWhoseKeyPartNamesAGenerationItsMemberDoesNotHaveIsRefused() async throws {
    try await Fixture.run { fixture, laptop in
        let emma = try await laptop.addMember(name: "Emma")
        let put = try await laptop.put(SystemRandom.bytes(count: 500), member: emma)
        // The key part is an envelope: its generation is bytes 18 to 21, big-endian.
        @Sendable func seven(_ key: inout [UInt8]) {
            key.replaceSubrange(18..<22, with: [0, 0, 0, 7])
            #expect((try? Envelope(bytes: key))?.generation == 7, "the tamper did not make the key part name generation 7")
        }
        fixture.transport.tamper { request, reply in
            guard request.method == "GET", reply.status == 200 else { return }
            if request.target.hasSuffix("/attachments/\(put.address)/key") {
                seven(&reply.body)
            } else if request.target.hasSuffix("/attachments/\(put.address)") {
                var object = try AttachmentObject(bytes: reply.body)
                seven(&object.key)
                reply.body = object.bytes
            }
        }
        await expectRefusal("address_mismatch") { _ = try await laptop.get(put.address, member: emma) }
    }
}
