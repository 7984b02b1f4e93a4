import Foundation
import KeyVault
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultTestSupport
import KeyVaultVault
import Testing

// Each refusal the client owes a dishonest server (issue 4, "What must hold"), played
// by a tampering double in front of the real service. Every test also checks the
// honest path first, so that it cannot pass by refusing everything.

func expectRefusal(_ code: String, kind: KeyVaultError.Kind = .verification, sourceLocation: SourceLocation = #_sourceLocation,
                   _ body: () async throws -> Void) async {
    do {
        try await body()
        Issue.record("expected a refusal with \(code)", sourceLocation: sourceLocation)
    } catch let error as KeyVaultError {
        #expect(error.kind == kind, "\(error)", sourceLocation: sourceLocation)
        #expect(error.code.rawValue == code || error.message.contains(code), "\(error.code.rawValue): \(error.message)",
                sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected a KeyVaultError, got \(error)", sourceLocation: sourceLocation)
    }
}

/// Enrolls a phone with the recovery code, then revokes it from the laptop; returns the phone's keys.
func enrollAndRevokePhone(_ fixture: Fixture, _ laptop: Vault) async throws -> DeviceKeys {
    let phone = try await Vault.enrollWithRecoveryCode(home: fixture.home("phone"), server: "test", transport: fixture.transport,
                                                        account: laptop.account, name: "phone", code: fixture.code)
    try await laptop.sync()
    try await laptop.revoke(try laptop.device(matching: phone.device.rawValue))
    return await phone.record.keys
}

@Test func aChainThatGoesBackIsRefusedAndNothingChanges() async throws {
    try await Fixture.run { fixture, laptop in
        _ = try await laptop.addMember(name: "Alice")
        try await laptop.sync()
        let seen = await laptop.record.head
        fixture.transport.tamper(rewriting("/chain", as: ChainResponse.self) { chain in
            chain.links.removeLast()
            chain.head = chain.links.last!.hash
        })
        await expectRefusal("chain_rollback") { try await laptop.sync() }
        #expect(try fixture.home("laptop").load().head == seen)
    }
}

@Test func aChainThatForksIsRefused() async throws {
    try await Fixture.run { fixture, laptop in
        _ = try await laptop.addMember(name: "Alice")
        // Another link at the same place, validly signed (say, by a key the server
        // kept from an earlier answer): a fork.
        let keys = await laptop.record.keys
        fixture.transport.tamper(rewriting("/chain", as: ChainResponse.self) { chain in
            let last = chain.links.removeLast()
            var other = ChainLink(sequence: last.sequence, previous: last.previous, type: .memberAdd, signer: last.signer,
                                  time: last.time, body: ["member": String(repeating: "ab", count: 16), "memberGeneration": "1"])
            other.sign(with: keys.signing)
            chain.links.append(other)
            chain.head = other.hash
        })
        await expectRefusal("chain_fork") { try await laptop.sync() }
        fixture.transport.tamper(nil)
        try await laptop.sync()
    }
}

@Test func linksSignedByAnUnknownOrRevokedDeviceAreRefused() async throws {
    try await Fixture.run { fixture, laptop in
        let phoneKeys = try await enrollAndRevokePhone(fixture, laptop)
        #expect(try await laptop.chain.devices[phoneKeys.id]?.isActive == false)

        for (signer, expected) in [(DeviceKeys(), "unknown_signer"), (phoneKeys, "signer_revoked")] {
            fixture.transport.tamper(rewriting("/chain", as: ChainResponse.self) { chain in
                let last = chain.links.last!
                var forged = ChainLink(sequence: last.sequence + 1, previous: last.hash, type: .deviceAdd, signer: signer.id.rawValue,
                                       time: last.time, body: DeviceKeys().fields(name: "intruder"))
                forged.sign(with: signer.signing)
                chain.links.append(forged)
                chain.head = forged.hash
            })
            await expectRefusal(expected) { try await laptop.sync() }
        }
        fixture.transport.tamper(nil)
        try await laptop.sync()
        #expect(try await laptop.chain.devices.count == 2)
    }
}

@Test func aBoxNotSignedByAnActiveDeviceIsRefused() async throws {
    try await Fixture.run { fixture, laptop in
        let phoneKeys = try await enrollAndRevokePhone(fixture, laptop)
        laptop.home.unlock()
        // The honest box opens.
        _ = try await fixture.open("laptop", forgetKeys: true).masterKey()

        let account = laptop.account
        let me = await laptop.record.keys
        let chosen = SymmetricKey()  // a key the server would like the device to use
        for (signer, expected) in [(DeviceKeys(), "unknown_signer"), (phoneKeys, "signer_revoked"), (me, "bad_signature")] {
            fixture.transport.tamper(rewriting("/boxes", as: [String: [KeyBox]].self) { answer in
                answer["boxes"] = try answer["boxes"]!.map { box in
                    var forged = KeyBox(generation: box.generation, sequence: box.sequence, recipient: box.recipient,
                                        box: base64Encode(try me.boxKey.publicKey.sealedBox(for: chosen)),
                                        signer: signer.id.rawValue, signature: box.signature)
                    if signer.id != me.id { forged.sign(with: signer.signing, account: account) }  // else: the old signature, over another box
                    return forged
                }
            })
            let vault = try await fixture.open("laptop", forgetKeys: true)
            await expectRefusal(expected) { _ = try await vault.masterKey() }
            vault.home.unlock()
        }
    }
}

@Test func aWrapMovedToAnotherMemberOrGenerationIsRefused() async throws {
    try await Fixture.run { fixture, laptop in
        let alice = try await laptop.addMember(name: "Alice")
        let bob = try await laptop.addMember(name: "Bob")
        try await laptop.rotateMember(alice.id)
        laptop.home.unlock()
        var vault = try await fixture.open("laptop", forgetKeys: true)
        _ = try await vault.memberKey(alice.id, generation: 2)  // honest: opens
        vault.home.unlock()

        // Bob's wrap served as Alice's.
        let bobWraps = try await vault.api.wraps(member: bob.id)
        fixture.transport.tamper(rewriting("member=\(alice.id)", as: [String: [MemberWrap]].self) { answer in
            answer["wraps"] = bobWraps.map { var w = $0; w.member = alice.id; return w }
        })
        vault = try await fixture.open("laptop", forgetKeys: true)
        await expectRefusal("wrap_mismatch") { _ = try await vault.memberKey(alice.id, generation: 1) }
        vault.home.unlock()

        // Alice's generation 1 served as her generation 2.
        fixture.transport.tamper(rewriting("member=\(alice.id)", as: [String: [MemberWrap]].self) { answer in
            let first = answer["wraps"]!.first { $0.memberGeneration == 1 }!
            answer["wraps"] = answer["wraps"]!.map { $0.memberGeneration == 2 ? MemberWrap(member: alice.id, memberGeneration: 2,
                                                                                        masterGeneration: first.masterGeneration,
                                                                                        envelope: first.envelope) : $0 }
        })
        vault = try await fixture.open("laptop", forgetKeys: true)
        await expectRefusal("wrap_mismatch") { _ = try await vault.memberKey(alice.id, generation: 2) }
    }
}

@Test func recoveryParametersBelowTheFloorAreRefused() async throws {
    try await Fixture.run { fixture, laptop in
        fixture.transport.tamper(rewriting("/recovery", as: RecoverySlot.self) { slot in
            slot.iterations = 1
            slot.memoryKiB = 8
        })
        await expectRefusal("weak_kdf") {
            _ = try await Vault.enrollWithRecoveryCode(home: fixture.home("phone"), server: "test", transport: fixture.transport,
                                                       account: laptop.account, name: "phone", code: fixture.code)
        }
        fixture.transport.tamper(nil)
        _ = try await Vault.enrollWithRecoveryCode(home: fixture.home("phone"), server: "test", transport: fixture.transport,
                                                   account: laptop.account, name: "phone", code: fixture.code)
    }
}

@Test func aRecoverySlotFromAnotherAccountOrAnotherCodeIsRefused() async throws {
    try await Fixture.run { fixture, laptop in
        await expectRefusal("wrong_recovery_code", kind: .rejected) {
            _ = try await Vault.enrollWithRecoveryCode(home: fixture.home("phone"), server: "test", transport: fixture.transport,
                                                       account: laptop.account, name: "phone",
                                                       code: try .generate(wordCount: 24, language: .english))
        }
        let devices = try await laptop.chain.devices.count
        #expect(devices == 1)
    }
}

@Test func anAttachmentThatDoesNotMatchItsAddressIsRefused() async throws {
    try await Fixture.run { fixture, laptop in
        let alice = try await laptop.addMember(name: "Alice")
        let files = try (0..<2).map { i in
            let url = fixture.root.appendingPathComponent("file\(i)")
            try Data(SystemRandom.bytes(count: 5000 + i)).write(to: url)
            return url.path
        }
        let first = try await laptop.put(fileAt: files[0], member: alice)
        let second = try await laptop.put(fileAt: files[1], member: alice)
        #expect(try await laptop.get(first.address, member: alice).unprotectedCopy() == [UInt8](try Data(contentsOf: URL(fileURLWithPath: files[0]))))

        // Read in chunks: another attachment's chunk, an altered one, a cut one.
        let other = try await laptop.api.attachmentChunk(member: alice.id, address: second.address, index: 0)
        let chunk = "/attachments/\(first.address)/chunks/0"
        fixture.transport.tamper { request, reply in
            if request.target.hasSuffix(chunk) { reply.body = other }
        }
        await expectRefusal("address_mismatch") { _ = try await laptop.get(first.address, member: alice) }
        fixture.transport.tamper { request, reply in
            if request.target.hasSuffix(chunk) { reply.body[reply.body.count - 20] ^= 1 }
        }
        await expectRefusal("address_mismatch") { _ = try await laptop.get(first.address, member: alice) }
        fixture.transport.tamper { request, reply in
            if request.target.hasSuffix(chunk) { reply.body = Array(reply.body.prefix(40)) }
        }
        await expectRefusal("address_mismatch") { _ = try await laptop.get(first.address, member: alice) }
        // Read whole (a server that keeps it so): the same, and a cut object is malformed.
        fixture.transport.answer { request in
            request.target.hasSuffix("/attachments/\(first.address)/chunks")
                ? HTTPReply(status: 400, body: Array(#"{"error":{"code":"bad_request","message":"stored whole"}}"#.utf8)) : nil
        }
        let whole = try await laptop.api.attachment(member: alice.id, address: second.address)
        fixture.transport.tamper { request, reply in
            if request.target.hasSuffix(first.address.description) { reply.body = whole }
        }
        await expectRefusal("address_mismatch") { _ = try await laptop.get(first.address, member: alice) }
        fixture.transport.tamper { request, reply in
            if request.target.hasSuffix(first.address.description) { reply.body = Array(reply.body.prefix(40)) }
        }
        await expectRefusal("malformed_attachment") { _ = try await laptop.get(first.address, member: alice) }
    }
}

@Test func aCorruptOrMissingHomeGivesAClearErrorWithAWayOut() async throws {
    let scratch = try TemporaryDirectory("kv-home")
    let directory = scratch.url("home")  // made by the first save
    let home = DeviceHome(directory: directory.path)
    do {
        _ = try home.load()
        Issue.record("expected not_initialized")
    } catch let error as KeyVaultError {
        #expect(error.code == .notInitialized && !error.message.contains("keyctl"))  // what to run is keyctl's to say (Hints)
    }
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    for garbage in ["", "{", #"{"format":1}"#, #"{"format":9,"server":"","account":"","device":"","name":"","head":"","sequence":0,"enrolled":true}"#] {
        try Data(garbage.utf8).write(to: directory.appendingPathComponent("device.json"))
        do {
            _ = try home.load()
            Issue.record("expected a refusal of \(garbage)")
        } catch let error as KeyVaultError {
            #expect(error.kind == .home && error.message.contains("damaged"), "\(error)")
        }
    }
}

@Test func aSealedHomeOpensOnlyWithItsPassphrase() async throws {
    let scratch = try TemporaryDirectory("kv-home")
    let directory = scratch.url("home")  // made by the first save
    let home = DeviceHome(directory: directory.path)
    home.passphrase = SecureBytes(copying: Array("correct horse".utf8))
    let record = newDeviceRecord()
    try home.save(record)
    let text = try String(contentsOfFile: directory.path + "/device.json", encoding: .utf8)
    #expect(text.contains("sealed") && !text.contains(Hex.encode(record.keys.signing.seed.unprotectedCopy())))

    let reader = DeviceHome(directory: directory.path)
    reader.passphrase = SecureBytes(copying: Array("wrong horse".utf8))
    #expect { try reader.load() } throws: { ($0 as? KeyVaultError)?.code == .wrongPassphrase }
    reader.passphrase = SecureBytes(copying: Array("correct horse".utf8))
    let loaded = try reader.load()
    #expect(loaded.device == record.device && loaded.masterKeys[1] == record.masterKeys[1])
}

/// Saves a device in `directory`, sealed under "correct horse".
/// An enrolled device's record with new keys, for the device-home tests.
private func newDeviceRecord() -> DeviceRecord {
    DeviceRecord(server: "http://x", account: AccountID(unchecked: String(repeating: "a", count: 32)), name: "laptop",
                 head: "", sequence: 0, enrolled: true, keys: DeviceKeys(), masterKeys: [1: SymmetricKey()])
}

private func saveSealedHome(in directory: URL) throws {
    let home = DeviceHome(directory: directory.path)
    home.passphrase = SecureBytes(copying: Array("correct horse".utf8))
    try home.save(newDeviceRecord())
}

/// A sealed home whose salt is not 16 bytes is damaged, said so before any key is
/// derived (it was Argon2id's own `invalid_parameter`).
@Test func aSealedHomeWithASaltOfAnotherLengthIsDamaged() throws {
    let scratch = try TemporaryDirectory("kv-home")
    let directory = scratch.url("home")
    try saveSealedHome(in: directory)
    let file = directory.appendingPathComponent("device.json")
    let text = try String(contentsOf: file, encoding: .utf8)
    let salt = try #require(text.range(of: #""salt" : "[0-9a-f]{32}""#, options: .regularExpression))
    try text.replacingCharacters(in: salt, with: #""salt" : "00112233445566778899""#).write(to: file, atomically: true, encoding: .utf8)
    let reader = DeviceHome(directory: directory.path)
    reader.passphrase = SecureBytes(copying: Array("correct horse".utf8))
    #expect { try reader.load() } throws: { ($0 as? KeyVaultError)?.code == .homeDamaged }
}

/// A sealed home derives its key from the passphrase once (Argon2id takes a fraction of
/// a second, and every change to the device is a save): later saves seal under the same
/// key and salt, each with a fresh nonce, and a new passphrase derives a new key.
@Test func aSealedHomeDerivesItsKeyOnceAndSealsEachSaveAfresh() throws {
    let scratch = try TemporaryDirectory("kv-home")
    let directory = scratch.url("home")
    func sealed() throws -> (salt: String, envelope: String) {
        let file = try JSONSerialization.jsonObject(with: Data(contentsOf: directory.appendingPathComponent("device.json"))) as? [String: Any]
        let sealed = try #require(file?["sealed"] as? [String: Any])
        return (try #require(sealed["salt"] as? String), try #require(sealed["envelope"] as? String))
    }
    let home = DeviceHome(directory: directory.path)
    home.passphrase = SecureBytes(copying: Array("correct horse".utf8))
    let record = newDeviceRecord()
    try home.save(record)
    let first = try sealed()
    try home.save(record)
    let second = try sealed()
    #expect(second.salt == first.salt && second.envelope != first.envelope)

    // Opened elsewhere, the home keeps the key it opened with.
    let reader = DeviceHome(directory: directory.path)
    reader.passphrase = SecureBytes(copying: Array("correct horse".utf8))
    _ = try reader.load()
    try reader.save(record)
    #expect(try sealed().salt == first.salt)

    // A new passphrase: a new salt and key; only it opens the file.
    reader.passphrase = SecureBytes(copying: Array("battery staple".utf8))
    try reader.save(record)
    #expect(try sealed().salt != first.salt)
    let old = DeviceHome(directory: directory.path)
    old.passphrase = SecureBytes(copying: Array("correct horse".utf8))
    #expect { try old.load() } throws: { ($0 as? KeyVaultError)?.code == .wrongPassphrase }
    let new = DeviceHome(directory: directory.path)
    new.passphrase = SecureBytes(copying: Array("battery staple".utf8))
    #expect(try new.load().device == record.device)

    // A file at other parameters than today's (here the floor) is sealed afresh at today's by its next save.
    let file = directory.appendingPathComponent("device.json")
    var document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
    let current = try JSONDecoder().decode(SealedSecrets.self, from: JSONSerialization.data(withJSONObject: try #require(document["sealed"])))
    let staple = SecureBytes(copying: Array("battery staple".utf8))
    let plain = try current.open(passphrase: staple).plain
    let weak = try SealedSecrets.seal(plain, under: SealingKey(passphrase: staple, salt: SystemRandom.bytes(count: Argon2id.saltByteCount),
                                                                parameters: .floor))
    document["sealed"] = try JSONSerialization.jsonObject(with: JSONEncoder().encode(weak))
    try JSONSerialization.data(withJSONObject: document).write(to: file)
    let upgraded = DeviceHome(directory: directory.path)
    upgraded.passphrase = staple
    _ = try upgraded.load()
    try upgraded.save(record)
    let resealed = try #require((try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])?["sealed"] as? [String: Any])
    #expect(resealed["memoryKiB"] as? Int == Int(Argon2id.Parameters.interactive.memoryKiB) && resealed["salt"] as? String != weak.salt)
}

/// Opening a sealed device reads its file and derives its key (Argon2id) on a thread of
/// its own, and asks for the passphrase there: the caller's executor stays free. The
/// prompt here notes the thread it was asked on, then refuses.
@Test func openingASealedDeviceLeavesTheCallersThreadFree() async throws {
    let scratch = try TemporaryDirectory("kv-home")
    let directory = scratch.url("home")
    try saveSealedHome(in: directory)
    let threads = Locked<(caller: pthread_t?, asked: pthread_t?)>((nil, nil))
    await withTaskExecutorPreference(OneThreadExecutor()) {
        // A child task: it starts on the preferred executor (the body itself goes on
        // where it was until it first suspends).
        async let opened: Void = {
            threads.withLock { $0.caller = pthread_self() }
            _ = try? await Vault.open(storage: FileDeviceStorage(directory: directory.path), offline: true, passphrase: {
                threads.withLock { $0.asked = pthread_self() }
                throw KeyVaultError(.passphraseRequired, "refused by the test")
            }, transportFor: { _ in throw KeyVaultError(.invalidInput, "offline") })
        }()
        await opened
    }
    let (caller, asked) = threads.withLock { $0 }
    let askedOn = try #require(asked, "the passphrase was never asked for")
    #expect(pthread_equal(try #require(caller), askedOn) == 0, "the file was opened on the caller's thread")
}

/// Setting a passphrase derives its key (Argon2id) on a thread of its own, as opening
/// does: the caller's executor runs its other work meanwhile. The watcher, on the same
/// one thread, must get 16 turns while it runs (`watcherTurns`): a key derived on that
/// thread leaves it the hops only (two, here).
@Test(.timeLimit(.minutes(10)))  // the account it needs first took 98 s beside the whole suite
func settingAPassphraseLeavesTheCallersThreadFree() async throws {
    try await Fixture.run { _, laptop in
        let (_, turns) = try await watcherTurns(upTo: 16) {
            try await laptop.setPassphrase(SecureBytes(copying: Array("correct horse battery".utf8)))
        }
        #expect(turns == 16, "the other task ran only once the key had been derived")
    }
}

/// Creating an account in a home that holds a sealed device is refused, naming the
/// device's account (in the clear in the file) without opening its keys: no passphrase
/// is asked for or derived to say so.
@Test func creatingWhereASealedDeviceIsNamesItsAccountWithoutOpeningIt() async throws {
    try await Fixture.run { fixture, laptop in
        try await laptop.setPassphrase(SecureBytes(copying: Array("correct horse battery".utf8)))
        let account = try await laptop.status().account
        // A copy of the sealed file (the laptop's vault holds its home's lock).
        let copy = fixture.home("copy").directory
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: fixture.home("laptop").directory + "/device.json", toPath: copy + "/device.json")
        do {
            _ = try await Vault.create(server: URL(string: "http://test")!, deviceName: "again", recoveryCode: RecoveryCode.generate(),
                                       storage: FileDeviceStorage(directory: copy),
                                       transport: fixture.transport, passphrase: SecureBytes(copying: Array("another passphrase".utf8)))
            Issue.record("a second account was created over a sealed device")
        } catch let error as KeyVaultError {
            #expect(error.code == .alreadyInitialized)
            #expect(error.message.contains(account.rawValue), "\(error.message)")
        }
    }
}

/// Two passphrase changes land in the order they were made: a vault's calls run one at
/// a time in the order they came, and the second's save is the one that stays. Both run
/// on one thread here, so the first is sure to reach the vault first; it then waits for
/// its Argon2id, and the second (no passphrase: nothing to derive) must wait for it.
@Test(.timeLimit(.minutes(10)))  // the account it needs first took 98 s beside the whole suite
func passphraseChangesLandInTheOrderTheyWereMade() async throws {
    try await Fixture.run { fixture, laptop in
        try await withTaskExecutorPreference(OneThreadExecutor()) {
            async let first: Void = laptop.setPassphrase(SecureBytes(copying: Array("correct horse battery".utf8)))
            async let second: Void = laptop.setPassphrase(nil)
            _ = try await (first, second)
        }
        #expect(try fixture.home("laptop").load().device == (try await laptop.status()).device,
                "the file is sealed under the first passphrase, set after the second")
    }
}

/// A passphrase set on an open vault seals every save after it, not only the one that
/// set it: a change made later in the same session is sealed under it, and the
/// passphrase before (here: none) opens nothing.
@Test func aChangeAfterANewPassphraseIsSealedUnderIt() async throws {
    try await Fixture.run { fixture, laptop in
        let passphrase = SecureBytes(copying: Array("correct horse battery".utf8))
        try await laptop.setPassphrase(passphrase)
        _ = try await laptop.addMember(name: "Emma")
        let reader = fixture.home("laptop")
        #expect { try reader.load() } throws: { ($0 as? KeyVaultError)?.code == .passphraseRequired }
        reader.passphrase = passphrase
        #expect(try reader.load().memberKeys.count == 1)
    }
}

/// A new device's passphrase (create, enroll, link) has its key before the first save,
/// and that save seals under it (the key was derived on a thread of its own; the save
/// derives nothing).
@Test func aNewDevicesFirstSaveSealsUnderTheKeyDerivedBeforeIt() async throws {
    let storage = MemoryDeviceStorage()
    let home = try await Vault.home(storage, sealedUnder: SecureBytes(copying: Array("correct horse battery".utf8)))
    let kept = try #require(home.keptSalt)
    try home.save(newDeviceRecord())
    let bytes = try #require(try storage.read())
    let document = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    #expect((document["sealed"] as? [String: Any])?["salt"] as? String == Hex.encode(kept))
    #expect(home.keptSalt == kept)
}

@Test func serverTextCannotDriveTheTerminal() async throws {
    #expect("a\u{1B}[2Jb\u{7}\nc".printable == "a?[2Jb??c")
    #expect(String(repeating: "x", count: 2000).printable.count == 500)
    try await Fixture.run { fixture, laptop in
        fixture.transport.tamper { _, reply in
            reply.status = 400
            reply.body = Array(#"{"error":{"code":"bad\u001b[31m","message":"\u001b]0;pwned\u0007 clear screen \u001b[2J"}}"#.utf8)
        }
        do {
            _ = try await laptop.api.devices()
            Issue.record("expected a refusal")
        } catch let error as KeyVaultError {
            #expect(!error.message.unicodeScalars.contains { $0.properties.generalCategory == .control }, "\(error.message)")
            #expect(error.kind == .server)
        }
    }
}

@Test func aMalformedLinkRequestIsRefusedNotTrustedOrFatal() async throws {
    try await Fixture.run { fixture, laptop in
        let tablet = DeviceKeys()
        let signing = tablet.signing.publicKey.rawRepresentation, box = tablet.boxKey.publicKey.rawRepresentation
        let commitment = LinkCommitment.compute(account: laptop.account, device: tablet.id, signingKey: signing, boxKey: box,
                                                name: "tablet", nonce: SystemRandom.bytes(count: 32))
        let request = LinkRequestCreate(device: tablet.id, name: "tablet", signingKey: Hex.encode(signing), boxKey: Hex.encode(box),
                                        commitment: Hex.encode(commitment))
        let info = try await ServerAPI(transport: fixture.transport, account: laptop.account).createLinkRequest(request)
        let honest = try await laptop.linkCandidate(code: info.code)
        #expect(honest.request == request)
        fixture.transport.tamper(rewriting("/link-requests", as: LinkRequestInfo.self) { answer in
            answer.request.name = String(repeating: "x", count: 70_000)
        })
        do {
            _ = try await laptop.linkCandidate(code: info.code)
            Issue.record("expected a refusal")
        } catch let error as KeyVaultError {
            #expect(error.code == .badResponse)
        }
    }
}

@Test func aServerThatAlwaysSaysStaleChainStopsTheRetriesAndChangesNothingHere() async throws {
    try await Fixture.run { fixture, laptop in
        let before = try await laptop.chain.head
        fixture.transport.answer { request in
            guard request.method == "POST", request.target.hasSuffix("/chain") else { return nil }
            return HTTPReply(status: 409, body: Array(#"{"error":{"code":"stale_chain","message":"someone else wrote first"}}"#.utf8))
        }
        await expectRefusal("too_many_conflicts", kind: .server) { try await laptop.rotateMaster() }
        let seen = await laptop.record.head
        #expect(try await laptop.chain.head == before && seen == before)
        #expect(try await laptop.chain.masterGeneration == 1)
    }
}

/// Second review, F6: link codes and attachment addresses are printed as they come
/// (they are not free text), so one that is not a code or an address could write
/// lines of its own into `keyctl status` or `attachment list`. Such a list is refused.
@Test func aListWithAMalformedCodeOrAddressIsRefused() async throws {
    try await Fixture.run { fixture, laptop in
        let alice = try await laptop.addMember(name: "Alice")
        let tablet = DeviceKeys()
        let signing = tablet.signing.publicKey.rawRepresentation, box = tablet.boxKey.publicKey.rawRepresentation
        let commitment = LinkCommitment.compute(account: laptop.account, device: tablet.id, signingKey: signing, boxKey: box,
                                                name: "tablet", nonce: SystemRandom.bytes(count: 32))
        _ = try await ServerAPI(transport: fixture.transport, account: laptop.account).createLinkRequest(
            LinkRequestCreate(device: tablet.id, name: "tablet", signingKey: Hex.encode(signing), boxKey: Hex.encode(box),
                              commitment: Hex.encode(commitment)))
        #expect(try await laptop.api.pendingLinkRequests().count == 1)
        fixture.transport.tamper(rewriting("/link-requests", as: [String: [LinkRequestInfo]].self) { answer in
            answer["requests"] = answer["requests"]!.map { var r = $0; r.code = "ABC\nrecovery  generation 9"; return r }
        })
        await expectRefusal("bad_response", kind: .network) { _ = try await laptop.api.pendingLinkRequests() }
        fixture.transport.tamper(rewriting("/attachments", as: [String: [KeyVaultModel.AttachmentInfo]].self) { answer in
            answer["attachments"] = [AttachmentInfo(address: "ca1.1.\nfake line", size: 1, created: 0)]
        })
        await expectRefusal("bad_response", kind: .network) { _ = try await laptop.api.attachments(member: alice.id) }
    }
}
