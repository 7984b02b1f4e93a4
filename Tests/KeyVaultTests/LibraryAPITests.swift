import Foundation
import KeyVault
import KeyVaultCrypto
import KeyVaultMnemonic
import KeyVaultModel
import Testing

/// A storage whose document cannot be read (a locked Keychain, a file this user
/// may not read): that is not an empty storage.
final class UnreadableStorage: DeviceStorage {
    let writes = Locked(0)
    var location: String { "unreadable" }
    func read() throws -> [UInt8]? { throw KeyVaultError(.home, "the keychain is locked") }
    func write(_ document: [UInt8]) throws { writes.withLock { $0 += 1 } }
    func erase() throws {}
}

/// The public entry points through the in-process service.
@Suite struct LibraryAPITests {
    static let server = URL(string: "http://127.0.0.1:1")!  // the fixture's transport answers; nothing listens there

    @Test func aStorageThatCannotBeReadIsNeverTakenForAnEmptyOne() async throws {
        try await Fixture.run { fixture, laptop in
            let storage = UnreadableStorage()
            await expectRefusal("home", kind: .home) {
                _ = try await Vault.create(server: Self.server, deviceName: "tablet", recoveryCode: try RecoveryCode.generate(),
                                           storage: storage, transport: fixture.transport)
            }
            await expectRefusal("home", kind: .home) {
                _ = try await Vault.enroll(server: Self.server, account: laptop.account, deviceName: "tablet",
                                           recoveryCode: RecoveryCode(fixture.code), storage: storage, transport: fixture.transport)
            }
            #expect(storage.writes.withLock { $0 } == 0, "nothing was written over the device that is there")
        }
    }

    @Test func anOpenThatFailsReleasesTheStoragesLock() async throws {
        try await Fixture.run { fixture, laptop in
            laptop.home.unlock()
            let directory = fixture.root.appendingPathComponent("laptop").path
            let storage = FileDeviceStorage(directory: directory)
            fixture.transport.answer { _ in HTTPReply(status: 503, body: Array(#"{"error":{"code":"unavailable","message":"down"}}"#.utf8)) }
            await #expect(throws: KeyVaultError.self) { _ = try await Vault.open(storage: storage, transport: fixture.transport) }
            fixture.transport.answer(nil)
            // The app keeps its storage; another process (another storage) may open the device now.
            let vault = try await Vault.open(storage: FileDeviceStorage(directory: directory), transport: fixture.transport)
            #expect(vault.account == laptop.account)
            withExtendedLifetime(storage) {}
        }
    }

    @Test func aRecoveryCodeHasTwentyFourWords() async throws {
        try await Fixture.run { _, laptop in
            await expectRefusal("invalid_input", kind: .input) {
                try await laptop.setRecoveryCode(RecoveryCode(try Mnemonic.generate(wordCount: 12)), parameters: .interactive)
            }
            // An app cannot even make one: reading a 12-word code back is refused by position-free kind.
            let twelve = try Mnemonic.generate(wordCount: 12).phrase
            #expect(throws: RecoveryCode.Problem(.wordCount, position: nil)) { try RecoveryCode(phrase: twelve) }
        }
    }

    @Test func theFamilyStoryWorksOnMemoryStorage() async throws {
        try await Fixture.run { fixture, laptop in
            let storage = MemoryDeviceStorage()
            let tablet = try await Vault.enroll(server: Self.server, account: laptop.account, deviceName: "tablet",
                                                recoveryCode: RecoveryCode(fixture.code), storage: storage, transport: fixture.transport)
            let emma = try await tablet.addMember(name: "Emma")
            let upload = try await tablet.put(Array("card".utf8), member: emma)
            try await laptop.sync()
            let opened = try await laptop.get(upload.address, member: try await laptop.member(named: "Emma"))
            #expect(opened.withUnsafeBytes { Array($0) } == Array("card".utf8))
            #expect(try await tablet.status().members == 1)
            #expect(try storage.read() != nil)
        }
    }
}

extension LibraryAPITests {
    /// Issue 19, item 4: a device kept under a key the app supplies (a keychain key,
    /// say): the storage underneath holds ciphertext only, the device opens with the
    /// key, and with another key it is refused, not read.
    @Test func aDeviceSealedUnderTheAppsKeyOpensOnlyWithThatKey() async throws {
        try await Fixture.run { fixture, laptop in
            let base = MemoryDeviceStorage()
            let key = SystemRandom.bytes(count: 32)
            let tablet = try await Vault.enroll(server: Self.server, account: laptop.account, deviceName: "tablet",
                                                recoveryCode: RecoveryCode(fixture.code), storage: try SealedDeviceStorage(base, key: key),
                                                transport: fixture.transport)
            let device = tablet.device
            tablet.home.unlock()
            let stored = try #require(try base.read())
            let text = String(decoding: stored, as: UTF8.self)
            #expect(!text.contains(device.rawValue) && !text.contains(laptop.account.rawValue), "the sealed document shows the device or account")
            let again = try await Vault.open(storage: try SealedDeviceStorage(base, key: key), transport: fixture.transport)
            #expect(again.device == device)
            again.home.unlock()
            await expectRefusal("bad_box", kind: .verification) {
                _ = try await Vault.open(storage: try SealedDeviceStorage(base, key: SystemRandom.bytes(count: 32)), transport: fixture.transport)
            }
            await expectRefusal("invalid_input", kind: .input) { _ = try SealedDeviceStorage(base, key: [1, 2, 3]) }
        }
    }

    /// A second Vault on the same storage instance is refused, and its failure does not
    /// release the lock the first one holds.
    @Test func aSecondVaultOnOneStorageIsRefusedAndTheFirstKeepsItsLock() async throws {
        try await Fixture.run { fixture, laptop in
            laptop.home.unlock()
            let directory = fixture.root.appendingPathComponent("laptop").path
            let storage = FileDeviceStorage(directory: directory)
            let first = try await Vault.open(storage: storage, transport: fixture.transport)
            await expectRefusal("device_busy", kind: .home) { _ = try await Vault.open(storage: storage, transport: fixture.transport) }
            #expect(throws: KeyVaultError.self) { try FileDeviceStorage(directory: directory).lock() }
            #expect(first.account == laptop.account)
        }
    }

    /// A lock released a moment later is waited for, not refused. Another thread that
    /// starts a process while a Vault is open hands the child a copy of the lock file's
    /// descriptor until the child execs: closing the Vault's own copy then leaves the
    /// lock held for that moment (the CI flake of stop 23: "another process is using the
    /// device" right after the device was closed).
    @Test func aLockReleasedAMomentLaterIsWaitedFor() async throws {
        try await Fixture.run { fixture, laptop in
            laptop.home.unlock()
            let directory = fixture.root.appendingPathComponent("laptop").path
            let holder = FileDeviceStorage(directory: directory)
            try holder.lock()
            let release = Task { try await Task.sleep(for: .milliseconds(150)); holder.unlock() }
            let vault = try await Vault.open(storage: FileDeviceStorage(directory: directory), transport: fixture.transport)
            #expect(vault.account == laptop.account)
            try await release.value
        }
    }
}

extension LibraryAPITests {
    /// Issue 20, item 5: a `Member` an app kept from before a rotation still reads what
    /// was put after it (no false "server not trusted").
    @Test func aMemberKeptAcrossARotationStillReadsNewUploads() async throws {
        try await Fixture.run { fixture, laptop in
            let kept = try await laptop.addMember(name: "Emma")
            #expect(try await laptop.rotateMember(kept.id) == 2)
            let upload = try await laptop.put(Array("after the rotation".utf8), member: kept)
            #expect(upload.address.generation == 2)
            let opened = try await laptop.get(upload.address, member: kept)
            #expect(opened.withUnsafeBytes { Array($0) } == Array("after the rotation".utf8))
        }
    }
}

extension LibraryAPITests {
    /// Issue 20, item 5: progress is typed values an app puts in its own words, not
    /// English lines. A revocation reports the device, then each rotation step of one count.
    @Test func aRevocationReportsTypedProgress() async throws {
        try await Fixture.run { fixture, laptop in
            let emma = try await laptop.addMember(name: "Emma")
            let phone = try await Vault.enrollWithRecoveryCode(home: fixture.home("phone"), server: "test", transport: fixture.transport,
                                                               account: laptop.account, name: "phone", code: fixture.code)
            phone.home.unlock()
            laptop.home.unlock()
            let seen = Locked<[Vault.Progress]>([])
            let watched = try await Vault.open(home: fixture.home("laptop"), transport: { _ in fixture.transport },
                                               progress: { event in seen.withLock { $0.append(event) } })
            try await watched.revoke(try await watched.device(matching: "phone"))
            let events = seen.withLock { $0 }
            #expect(events.first == .revokingDevice(name: "phone", id: phone.device), "\(events)")
            #expect(events.contains(.rotatingMasterKey(step: 1, of: 2)), "\(events)")
            #expect(events.contains(.rotatingMemberKey(emma.id, step: 2, of: 2)), "\(events)")
        }
    }
}

extension LibraryAPITests {
    /// Issue 20, item 5: a vault opens offline from the chain this device kept, and
    /// reads what it has cached (members and their names, devices, status); what needs
    /// the server still fails as a network error. A device that never verified a chain
    /// has nothing to open offline.
    @Test func aVaultOpensOfflineAndReadsWhatItCached() async throws {
        try await Fixture.run { fixture, laptop in
            let emma = try await laptop.addMember(name: "Emma")
            laptop.home.unlock()
            struct Unreachable: HTTPTransport {
                func send(_ exchange: HTTPExchange) async throws -> HTTPReply { throw KeyVaultError(.network, "no network here") }
            }
            let offline = try await Vault.open(home: fixture.home("laptop"), transport: { _ in Unreachable() }, offline: true)
            #expect(try await offline.members().map(\.name) == ["Emma"])
            #expect(try await offline.member(named: "Emma").id == emma.id)
            #expect(try await offline.devices().map(\.name) == ["laptop"])
            #expect(try await offline.status() == laptop.status())
            await expectRefusal("network", kind: .network) { _ = try await offline.addMember(name: "Liam") }
            await expectRefusal("network", kind: .network) { try await offline.sync() }
            #expect(try await offline.members().count == 1, "a failed write changes nothing")
            offline.home.unlock()

            // A kept copy shorter than the head this device verified (a rolled-back file) is refused as a server's would be.
            let rolledBack = fixture.home("rolled-back")
            var record = try fixture.home("laptop").load()
            record.chain.removeLast()
            try rolledBack.save(record)
            await expectRefusal("chain_rollback", kind: .verification) {
                _ = try await Vault.open(home: rolledBack, transport: { _ in Unreachable() }, offline: true)
            }

            let fresh = fixture.home("fresh")
            record.chain = []
            try fresh.save(record)
            await expectRefusal("invalid_input", kind: .input) {
                _ = try await Vault.open(home: fresh, transport: { _ in Unreachable() }, offline: true)
            }
        }
    }
}

extension LibraryAPITests {
    /// Issue 20, item 2: the recovery code is the library's own type. A typed code's
    /// problem names a position and never a candidate word; printing a code shows no word.
    @Test func aRecoveryCodeReportsProblemsByPositionOnlyAndPrintsNoWord() throws {
        let code = try RecoveryCode.generate()
        #expect(code.words.count == 24 && code.language == .english)
        #expect(try RecoveryCode(phrase: code.phrase.uppercased()).words == code.words)
        // Exactly these: a substring check against the words would flake ("redacted" holds "act").
        #expect(String(describing: code) == "RecoveryCode(24 english words, redacted)")
        #expect(String(reflecting: code) == "RecoveryCode(24 english words, redacted)")
        #expect(Mirror(reflecting: code).children.isEmpty)
        var words = code.words
        words[4] = "qqqq"
        #expect(throws: RecoveryCode.Problem(.unknownWord, position: 5)) { try RecoveryCode(phrase: words.joined(separator: " ")) }
        words = code.words
        words.swapAt(0, 23)
        if words != code.words, (try? RecoveryCode(phrase: words.joined(separator: " "))) == nil {
            #expect(throws: RecoveryCode.Problem(.checksum, position: nil)) { try RecoveryCode(phrase: words.joined(separator: " ")) }
        }
        #expect(code.isWord(code.words[6], at: 7) && !code.isWord(code.words[6], at: 8) || code.words[6] == code.words[7])
    }
}

extension LibraryAPITests {
    /// Issue 20, item 2: an attachment is the library's own value (a content address and
    /// a date); a listed address that does not parse is the server's fault, refused.
    @Test func attachmentsAreListedAsAddressesAndDatesAndAMalformedOneIsRefused() async throws {
        try await Fixture.run { fixture, laptop in
            let emma = try await laptop.addMember(name: "Emma")
            let put = try await laptop.put(Array("x-ray".utf8), member: emma)
            let listed = try await laptop.attachments(member: emma)
            #expect(listed.map(\.address) == [put.address])
            #expect(abs(listed[0].stored.timeIntervalSinceNow) < 3600)
            fixture.transport.tamper { request, reply in
                guard request.method == "GET", request.target.contains("/attachments"), reply.status == 200 else { return }
                reply.body = Array(#"{"attachments":[{"address":"not an address","size":1,"created":1}]}"#.utf8)
            }
            await expectRefusal("bad_response", kind: .network) { _ = try await laptop.attachments(member: emma) }
        }
    }
}

extension LibraryAPITests {
    /// Issue 20, item 2: the library's error codes are its own closed enum, and each raw
    /// value is the snake_case wire string (the service's codes among them, unchanged).
    @Test func everyErrorCodeIsItsSnakeCaseWireString() {
        for code in KeyVaultError.Code.allCases {
            #expect(code.rawValue.allSatisfy { $0.isLowercase || $0 == "_" }, "\(code)")
        }
        for wire in ErrorCode.wireCodes {
            #expect(KeyVaultError.Code(wire) != .unrecognized, "\(wire) is not a code of the library")
        }
        #expect(KeyVaultError.Code(ErrorCode(rawValue: "from_a_newer_server")) == .unrecognized)
    }
}

extension LibraryAPITests {
    /// A server that answers with one of the client's own codes (`home_damaged`,
    /// `wrong_passphrase`) borrows neither its kind nor the advice that goes with it:
    /// only the service's codes pass, anything else is `unrecognized`.
    @Test func aServerCannotSpeakWithTheClientsOwnCodes() async throws {
        try await Fixture.run { fixture, laptop in
            for code in ["home_damaged", "wrong_passphrase", "chain_fork"] {
                fixture.transport.answer { _ in
                    HTTPReply(status: 400, headers: [:], body: Array(#"{"error":{"code":"\#(code)","message":"move your keys away"}}"#.utf8))
                }
                await expectRefusal("unrecognized", kind: .server) { _ = try await laptop.api.audit() }
            }
        }
    }

    /// The kept chain is a cache: one that does not decode (a newer version's link
    /// type, a hand edit) leaves the home readable, with no copy to open offline.
    @Test func aKeptChainThatDoesNotDecodeIsNoCopyNotADamagedHome() async throws {
        try await Fixture.run { fixture, laptop in
            laptop.home.unlock()
            let file = fixture.root.appendingPathComponent("laptop/device.json")
            var json = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as! [String: Any]
            #expect((json["chain"] as? [Any])?.isEmpty == false)
            json["chain"] = [["type": "from.a.newer.version"]]
            try JSONSerialization.data(withJSONObject: json).write(to: file)
            #expect(try fixture.home("laptop").load().chain.isEmpty)
            let online = try await Vault.open(home: fixture.home("laptop"), transport: { _ in fixture.transport })
            #expect(online.account == laptop.account)
        }
    }
}

extension LibraryAPITests {
    /// A device sealed under a passphrase through the public API: an enrollment cut
    /// off after the keys were kept is finished by running it again, the passphrase
    /// asked for (as keyctl asks on a terminal), and the device opens only with it.
    @Test func anEnrollmentSealedUnderAPassphraseResumesAndOpensWithIt() async throws {
        try await Fixture.run { fixture, laptop in
            let storage = MemoryDeviceStorage()
            let passphrase = SecureBytes(copying: Array("correct horse battery".utf8))
            fixture.transport.answer { request in
                request.target.hasSuffix("/recovery/enroll")
                    ? HTTPReply(status: 503, body: Array(#"{"error":{"code":"unavailable","message":"down"}}"#.utf8)) : nil
            }
            await #expect(throws: KeyVaultError.self) {
                _ = try await Vault.enroll(server: Self.server, account: laptop.account, deviceName: "tablet",
                                           recoveryCode: RecoveryCode(fixture.code), storage: storage, transport: fixture.transport,
                                           passphrase: passphrase)
            }
            fixture.transport.answer(nil)
            #expect(try storage.holdsDevice)
            #expect(!String(decoding: try #require(try storage.read()), as: UTF8.self).contains("\"secrets\""), "the kept keys are sealed")
            // Again without the passphrase to ask for: the sealed keys are not read.
            await expectRefusal("passphrase_required", kind: .home) {
                _ = try await Vault.enroll(server: Self.server, account: laptop.account, deviceName: "tablet",
                                           recoveryCode: RecoveryCode(fixture.code), storage: storage, transport: fixture.transport)
            }
            let tablet = try await Vault.enroll(server: Self.server, account: laptop.account, deviceName: "tablet",
                                                recoveryCode: RecoveryCode(fixture.code), storage: storage, transport: fixture.transport,
                                                askPassphrase: { passphrase })
            let device = tablet.device
            tablet.home.unlock()
            await expectRefusal("wrong_passphrase", kind: .rejected) {
                _ = try await Vault.open(storage: storage, passphrase: { SecureBytes(copying: Array("not the passphrase".utf8)) },
                                         transportFor: { _ in fixture.transport })
            }
            let again = try await Vault.open(storage: storage, passphrase: { passphrase }, transportFor: { _ in fixture.transport })
            #expect(again.device == device)
            again.home.unlock()
            await expectRefusal("invalid_input", kind: .input) {
                _ = try await Vault.enroll(server: Self.server, account: laptop.account, deviceName: "phone",
                                           recoveryCode: RecoveryCode(fixture.code), storage: MemoryDeviceStorage(),
                                           transport: fixture.transport, passphrase: SecureBytes(copying: Array("short".utf8)))
            }
        }
    }
}
