import Foundation
import GRDB
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultPostgres
import KeyVaultTestSupport
import Testing
@testable import KeyVaultStore

private func hex(_ n: Int) -> String { String(format: "%032x", n) }

/// SQLite always, PostgreSQL when `KEYVAULT_TEST_DATABASE_URL` names one
/// (`bash Scripts/with-postgres.sh swift test`).
typealias Backend = StoreBackend

/// A stored account with one device, on a fresh store.
private struct StoreFixture {
    let database: any KeyVaultRepository
    let account = AccountID(unchecked: hex(1))
    let phone: StoredDevice

    init(_ database: any KeyVaultRepository) async throws {
        self.database = database
        phone = StoredDevice(id: DeviceID(unchecked: hex(2)), account: account, name: "phone", signingKey: [1], boxKey: [2], added: 0)
        try await database.createAccount(account, genesis: StoredLink(sequence: 0, hash: "h0", json: Data("{}".utf8)),
                                         device: phone, boxes: [], recovery: nil)
    }

    func write(_ sequence: UInt64, after head: String, event: LinkType = .masterRotate, hash: String? = nil) -> ChainWrite {
        ChainWrite(link: StoredLink(sequence: sequence, hash: hash ?? "h\(sequence)", json: Data("{\"n\":\(sequence)}".utf8)),
                   expectedHead: head, audit: (.link(event), phone.id.rawValue))
    }

    /// A second device, added by link 1 (head `h1`).
    func addTablet() async throws -> StoredDevice {
        let tablet = StoredDevice(id: DeviceID(unchecked: hex(3)), account: account, name: "tablet", signingKey: [3], boxKey: [4], added: 1)
        var add = write(1, after: "h0", event: .deviceAdd)
        add.newDevices = [tablet]
        try await database.append(account, add)
        return tablet
    }

    func linkRequest(_ code: String, expires: Int64, client: String = "192.0.2.1", perClient: Int = 5) async throws {
        let request = LinkRequestCreate(device: DeviceID(unchecked: hex(9)), name: "new", signingKey: "k", boxKey: "b", commitment: "c")
        try await database.createLinkRequest(account, code: code, expires: expires, request: request, client: client,
                                             perClient: perClient, total: 100, perAccountOverTotal: 3)
    }
}

/// Runs `body` with a fresh fixture on each backend.
private func withFixture(_ backend: Backend, _ body: (StoreFixture) async throws -> Void) async throws {
    try await backend.withStore { try await body(StoreFixture($0)) }
}

/// Issue 21, item 5: a replica keeps a copy of the key boxes its devices read, and answers
/// a device's read from it only when the head that request's nonce statement saw is the head
/// the copy was read at (boxes change only with the head). A rotation through another replica
/// is read by the next request; a read that saw no head goes to the store.
@Test func onPostgreSQLAReplicasCopyOfADevicesBoxesAnswersOnlyAtTheHeadItWasReadAt() async throws {
    guard case .postgres(let url)? = Backend.all.first(where: \.isShared) else { return }
    try await PostgresKeyVaultDatabase.withTwoReplicas(url) { first, second in
        let store = try await StoreFixture(first)
        let phone = store.phone.id
        func rotation(to generation: UInt32, after head: String) -> ChainWrite {
            var write = store.write(UInt64(generation), after: head)
            write.boxes = [KeyBox(generation: generation, sequence: UInt64(generation), recipient: phone.rawValue, box: "g\(generation)",
                                  signer: phone.rawValue, signature: "s")]
            write.dropsKeysBefore = generation
            return write
        }
        var nonces = 0
        func read(_ replica: PostgresKeyVaultDatabase, seeing: Bool = true) async throws -> [String] {
            nonces += 1
            let use = try await replica.useNonceReadingDevice("n\(nonces)", device: phone, timestamp: 1000, touchingAt: 1000, forgetBefore: 0)
            #expect(use.fresh && use.head != nil)
            return try await replica.deviceBoxesJSON(store.account, recipient: phone.rawValue, seen: seeing ? use.head : nil)
                .map { try JSONDecoder().decode(KeyBox.self, from: $0).box }
        }
        try await first.append(store.account, rotation(to: 1, after: "h0"))
        #expect(try await read(first) == ["g1"])
        #expect(try await read(first) == ["g1"])
        // A rotation through the other replica: the next request here gets the new boxes.
        try await second.append(store.account, rotation(to: 2, after: "h1"))
        #expect(try await read(first) == ["g2"])
        #expect(try await read(first) == ["g2"])
        // A read that saw no head is answered from the store.
        try await second.append(store.account, rotation(to: 3, after: "h2"))
        #expect(try await read(first, seeing: false) == ["g3"])
        #expect(try await read(second) == ["g3"])
    }
}

/// The copies of boxes are bounded in bytes, whatever the accounts: past the capacity some
/// are dropped, and a read larger than `largest` is not kept.
@Test func aReplicasCopiesOfBoxesStayWithinTheirBytes() {
    let copies = BoxCopies()
    let head = HeadSeen(sequence: 1, hash: "h1")
    let box = Data(repeating: 7, count: 1000)
    for account in 0..<(BoxCopies.capacity / 1000 + 100) {
        copies.keep([box], "\(account)", "d", at: head)
        #expect(copies.bytes <= BoxCopies.capacity)
    }
    #expect(copies.boxes("\(BoxCopies.capacity / 1000 + 99)", "d", at: head) == [box])
    copies.keep([box], "last", "d", at: head)
    copies.keep([box], "last", "d", at: head)  // kept again: counted once
    #expect(copies.bytes <= BoxCopies.capacity)
    copies.keep([Data(repeating: 7, count: BoxCopies.largest + 1)], "large", "d", at: head)
    #expect(copies.boxes("large", "d", at: head) == nil)
    #expect(copies.boxes("last", "d", at: HeadSeen(sequence: 2, hash: "h2")) == nil)
}

@Test(arguments: Backend.all) func appendedLinksAreReadBackInOrderAfterAGivenSequence(_ backend: Backend) async throws {
    try await withFixture(backend) { store in
        try await store.database.append(store.account, store.write(1, after: "h0"))
        try await store.database.append(store.account, store.write(2, after: "h1"))
        let all = try #require(try await store.database.links(store.account))
        #expect(all.links.map(\.sequence) == [0, 1, 2] && all.head == "h2")
        #expect(all.links[2].json == Data("{\"n\":2}".utf8))
        #expect(try await store.database.links(store.account, after: 1)?.links.map(\.sequence) == [2])
        #expect(try await store.database.links(AccountID(unchecked: hex(7))) == nil)
    }
}

@Test(arguments: Backend.all) func anAppendOnAStaleHeadWritesNothing(_ backend: Backend) async throws {
    try await withFixture(backend) { store in
        try await store.database.append(store.account, store.write(1, after: "h0"))
        await #expect(throws: StoreError.staleChain(currentHead: "h1")) {
            try await store.database.append(store.account, store.write(1, after: "h0"))
        }
        #expect(try await store.database.links(store.account)?.links.count == 2)
    }
}

@Test(arguments: Backend.all) func aDeviceGoesFromActiveToRevokedByTheLinkThatRevokedIt(_ backend: Backend) async throws {
    try await withFixture(backend) { store in
        let tablet = try await store.addTablet()
        #expect(try await store.database.device(tablet.id)?.status == .active)
        var revoke = store.write(2, after: "h1", event: .deviceRevoke)
        revoke.revokedDevices = [tablet.id]
        try await store.database.append(store.account, revoke)
        let stored = try #require(try await store.database.device(tablet.id))
        #expect(stored.status == .revoked && stored.revoked == 2)
        #expect(try await store.database.devices(store.account).map(\.status) == [.active, .revoked])
    }
}

/// Issue 21, item 5: a replica's request takes its nonce and reads its device in one
/// round trip; the device read is the one stored after the nonce, a revocation committed
/// before it included, and a nonce is still taken once. The same statement sets an active
/// device's last-seen time when a fresh nonce of its is taken and it is a minute old, and
/// never for a replay or a revoked device.
@Test(arguments: Backend.all) func aNonceTakenWithItsDeviceReadsTheDeviceAsStoredThenAndIsTakenOnce(_ backend: Backend) async throws {
    try await withFixture(backend) { store in
        let tablet = try await store.addTablet()
        func lastSeen() async throws -> Int64? { try await store.database.device(tablet.id)?.lastSeen }
        var taken = try await store.database.useNonceReadingDevice("n1", device: tablet.id, timestamp: 1000, touchingAt: 5000, forgetBefore: 0)
        #expect(taken.fresh && taken.device?.status == .active && taken.device?.lastSeen == 5000)
        #expect(try await lastSeen() == 5000)
        taken = try await store.database.useNonceReadingDevice("n1", device: tablet.id, timestamp: 1000, touchingAt: 9000, forgetBefore: 0)
        #expect(!taken.fresh, "a nonce taken twice")
        #expect(try await lastSeen() == 5000, "a replay does not count as seen")
        taken = try await store.database.useNonceReadingDevice("n4", device: tablet.id, timestamp: 1000, touchingAt: 5059, forgetBefore: 0)
        #expect(taken.fresh && taken.device?.lastSeen == 5000)
        #expect(try await lastSeen() == 5000, "seen less than a minute before")
        var revoke = store.write(2, after: "h1", event: .deviceRevoke)
        revoke.revokedDevices = [tablet.id]
        try await store.database.append(store.account, revoke)
        taken = try await store.database.useNonceReadingDevice("n2", device: tablet.id, timestamp: 1000, touchingAt: 9000, forgetBefore: 0)
        #expect(taken.fresh && taken.device?.revoked == 2, "\(String(describing: taken.device))")
        #expect(try await lastSeen() == 5000, "a revoked device is not seen")
        let unknown = try await store.database.useNonceReadingDevice("n3", device: DeviceID(unchecked: hex(9)), timestamp: 1000,
                                                                     touchingAt: 9000, forgetBefore: 0)
        #expect(unknown.device == nil)
    }
}

/// The same for requests that arrive together (PostgreSQL sends their nonces in batches):
/// of many requests with one nonce, exactly one takes it, whether or not they share a batch;
/// every distinct nonce is taken; a device that does not exist is read as none, and its
/// neighbours in the batch still get their own answers.
@Test(arguments: Backend.all) func noncesTakenAtOnceAreEachTakenOnceAndAnsweredWithTheirOwnDevice(_ backend: Backend) async throws {
    try await withFixture(backend) { store in
        let tablet = try await store.addTablet()
        let unknown = DeviceID(unchecked: hex(9)), database = store.database
        for round in 0..<5 {
            let answers = try await withThrowingTaskGroup(of: (Int, Bool, DeviceID?).self) { group in
                for i in 0..<60 {
                    // A third the same nonce, a third their own, a third of a device that does not exist.
                    let device = i % 3 == 2 ? unknown : tablet.id
                    let nonce = i % 3 == 0 ? "same-\(round)" : "own-\(round)-\(i)"
                    group.addTask {
                        let taken = try await database.useNonceReadingDevice(nonce, device: device, timestamp: 1000, touchingAt: 1000, forgetBefore: 0)
                        return (i, taken.fresh, taken.device?.id)
                    }
                }
                return try await group.reduce(into: [:]) { $0[$1.0] = ($1.1, $1.2) }
            }
            #expect(answers.count == 60)
            #expect(answers.filter { $0.key % 3 == 0 && $0.value.0 }.count == 1, "one nonce taken once, round \(round)")
            #expect(answers.filter { $0.key % 3 == 1 }.allSatisfy { $0.value.0 && $0.value.1 == tablet.id })
            #expect(answers.filter { $0.key % 3 == 0 }.allSatisfy { $0.value.1 == tablet.id })
            #expect(answers.filter { $0.key % 3 == 2 }.allSatisfy { $0.value.1 == nil })
        }
    }
}

/// The nonce statement never waits for a device row another transaction holds (a revocation
/// or a deletion in progress, which could be waiting for it in turn): it takes the nonce and
/// reads the device without touching it, and the request path touches it on its own later.
@Test(arguments: Backend.all.filter(\.isShared)) func aNonceIsTakenWithoutWaitingForALockedDeviceRow(_ backend: Backend) async throws {
    try await withFixture(backend) { store in
        let tablet = try await store.addTablet()
        let database = try #require(store.database as? PostgresKeyVaultDatabase)
        // Polled for, so that a regression fails instead of hanging: a statement that waited for
        // the row would wait for this transaction, which would wait for it.
        let answered = Locked<(fresh: Bool, device: StoredDevice?, head: HeadSeen?)?>(nil)
        let call = try await database.holdingDeviceRow(tablet.id) {
            let call = Task {
                let taken = try await database.useNonceReadingDevice("n1", device: tablet.id, timestamp: 1000, touchingAt: 5000, forgetBefore: 0)
                answered.withLock { $0 = taken }
            }
            for _ in 0..<200 where answered.withLock({ $0 == nil }) { try await Task.sleep(for: .milliseconds(100)) }
            return call
        }
        let whileHeld = answered.withLock { $0 }
        try await call.value
        let answer = try #require(whileHeld, "the nonce statement waited for the locked device row")
        #expect(answer.fresh && answer.device?.lastSeen == nil)
        #expect(try await database.device(tablet.id)?.lastSeen == nil)
    }
}

/// Reads of one recipient's boxes that arrive together (PostgreSQL sends them in one
/// statement) each get their own boxes, in generation order, whatever order they were
/// stored in; a device with none gets none; and `recovery`, a recipient in every account,
/// gets its own account's boxes only.
@Test(arguments: Backend.all) func boxReadsAtOnceEachGetTheirOwnBoxesInOrder(_ backend: Backend) async throws {
    try await withFixture(backend) { store in
        func box(_ generation: UInt32, _ recipient: String, tag: String = "a") -> KeyBox {
            KeyBox(generation: generation, sequence: 1, recipient: recipient, box: "\(tag)\(generation)", signer: "s", signature: "t")
        }
        let devices = (3..<8).map { hex($0) }
        var write = store.write(1, after: "h0")
        // Device i has boxes of generations 1 to min(i, 3); stored newest first.
        write.boxes = [UInt32(3), 2, 1].flatMap { generation in
            devices.enumerated().filter { UInt32($0.offset) >= generation }.map { box(generation, $0.element) }
        } + [box(1, "recovery")]
        try await store.database.append(store.account, write)
        let other = AccountID(unchecked: hex(20))
        try await store.database.createAccount(
            other, genesis: StoredLink(sequence: 0, hash: "o0", json: Data("{}".utf8)),
            device: StoredDevice(id: DeviceID(unchecked: hex(21)), account: other, name: "other", signingKey: [9], boxKey: [9], added: 0),
            boxes: [box(2, "recovery", tag: "o"), box(1, "recovery", tag: "o")], recovery: nil)
        let database = store.database, account = store.account
        let read = try await withThrowingTaskGroup(of: (Int, [KeyBox]).self) { group in
            for i in 0..<120 {
                group.addTask {
                    switch i % 7 {
                    case 5: (i, try await database.boxes(account, recipient: "recovery", generation: nil))
                    case 6: (i, try await database.boxes(other, recipient: "recovery", generation: nil))
                    default: (i, try await database.boxes(account, recipient: devices[i % 7], generation: nil))
                    }
                }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        #expect(read.count == 120)
        for (i, boxes) in read {
            let expected: [KeyBox] = switch i % 7 {
            case 5: [box(1, "recovery")]
            case 6: [box(1, "recovery", tag: "o"), box(2, "recovery", tag: "o")]
            default: (0..<min(i % 7, 3)).map { box(UInt32($0 + 1), devices[i % 7]) }
            }
            #expect(boxes == expected, "\(i): \(boxes.map { "\($0.recipient) \($0.box)" })")
        }
    }
}

@Test(arguments: Backend.all) func aLinkRequestPastItsExpiryReadsAsExpiredAndIsNotPending(_ backend: Backend) async throws {
    try await withFixture(backend) { store in
        let now = Int64(Date().timeIntervalSince1970)
        try await store.linkRequest("AAAAAAAAAA", expires: now + 600)
        try await store.linkRequest("BBBBBBBBBB", expires: now - 1)
        #expect(try await store.database.linkRequest(store.account, code: "AAAAAAAAAA")?.status == .pending)
        #expect(try await store.database.linkRequest(store.account, code: "BBBBBBBBBB")?.status == .expired)
        #expect(try await store.database.pendingLinkRequests(store.account).map(\.code) == ["AAAAAAAAAA"])
        // The stored strings stay what existing databases hold.
        if let sqlite = store.database as? KeyVaultDatabase {
            let stored = try await sqlite.writer.read { db in
                try String.fetchAll(db, sql: "SELECT status FROM link_requests ORDER BY code")
            }
            #expect(stored == ["pending", "pending"])
        }
    }
}

@Test(arguments: Backend.all) func aRefusedLinkRequestStaysRefusedAndIsAudited(_ backend: Backend) async throws {
    try await withFixture(backend) { store in
        try await store.linkRequest("CCCCCCCCCC", expires: Int64(Date().timeIntervalSince1970) + 600)
        try await store.database.refuseLinkRequest(store.account, code: "CCCCCCCCCC", by: store.phone.id)
        #expect(try await store.database.linkRequest(store.account, code: "CCCCCCCCCC")?.status == .refused)
        await #expect(throws: StoreError.linkRequestClosed) {
            try await store.database.refuseLinkRequest(store.account, code: "CCCCCCCCCC", by: store.phone.id)
        }
        #expect(try await store.database.audit(store.account).map(\.event) == ["link.genesis", "link_request.refused"])
    }
}

@Test func auditEventsAreStoredAsTheirDocumentedStrings() {
    #expect(AuditEvent.link(.deviceAdd).rawValue == "link.device.add")
    #expect(AuditEvent.refused(.badSignature).rawValue == "refused.bad_signature")
    #expect(AuditEvent.refusedRecoveryProof.rawValue == "refused.recovery_proof")
}

/// A database file keeps working when it is opened again: the migrations are not run twice.
@Test func aDatabaseFileOpensAgainWithItsData() async throws {
    let directory = try TemporaryDirectory("kv-store")
    let path = directory.path("keyvault.sqlite")  // its -wal and -shm go with the directory
    let account = AccountID(unchecked: hex(1))
    do {
        let database = try KeyVaultDatabase.open(path: path)
        try await database.createAccount(account, genesis: StoredLink(sequence: 0, hash: "h0", json: Data("{}".utf8)),
                                         device: StoredDevice(id: DeviceID(unchecked: hex(2)), account: account, name: "phone",
                                                              signingKey: [1], boxKey: [2], added: 0),
                                         boxes: [], recovery: nil)
    }
    let reopened = try KeyVaultDatabase.open(path: path)
    #expect(try await reopened.links(account)?.head == "h0")
}

/// Recovery challenges and tokens are used once across every replica (the store
/// decides, as for nonces), per kind; an entry is forgotten once it expired.
@Test(arguments: Backend.all) func aValueIsUsedOncePerKindUntilItExpires(_ backend: Backend) async throws {
    try await backend.withStore { store async throws in
        #expect(try await store.useOnce("c1", kind: "challenge", expires: 200, forgetBefore: 100))
        #expect(try await store.useOnce("c1", kind: "challenge", expires: 200, forgetBefore: 150) == false)
        #expect(try await store.useOnce("c1", kind: "token", expires: 200, forgetBefore: 150))  // another kind
        async let racing = [store.useOnce("c2", kind: "challenge", expires: 200, forgetBefore: 100),
                            store.useOnce("c2", kind: "challenge", expires: 200, forgetBefore: 100)]
        #expect(try await racing.filter { $0 }.count == 1)
        // Until the caller lets it go (the value itself is refused as expired before it gets here).
        #expect(try await store.useOnce("c1", kind: "challenge", expires: 400, forgetBefore: 200) == false)
        #expect(try await store.useOnce("c1", kind: "challenge", expires: 400, forgetBefore: 201))
    }
}

/// Failed proofs are counted per key, up to a limit per key and a cap in all, and
/// forgotten once older than the window; at the limit nothing more is counted.
@Test(arguments: Backend.all) func failuresAreCountedUpToTheLimitAndForgottenAfterTheWindow(_ backend: Backend) async throws {
    try await backend.withStore { store async throws in
        func record(_ keys: [String], at time: Int64, limit: Int = 2, cap: Int = 100) async throws -> (Bool, FailureCounts) {
            let (counted, before) = try await store.recordFailure(keys, at: time, since: time - 100, limit: limit, cap: cap)
            return (counted, before)
        }
        var (counted, before) = try await record(["a", "x"], at: 100)
        #expect(counted && before == FailureCounts(total: 0, byKey: [:]))
        (counted, before) = try await record(["a", "y"], at: 110)
        #expect(counted && before == FailureCounts(total: 2, byKey: ["a": .init(count: 1, oldest: 100)]))
        (counted, before) = try await record(["a", "z"], at: 120)  // a is at its limit: nothing counted
        #expect(!counted && before.byKey == ["a": .init(count: 2, oldest: 100)])
        (counted, before) = try await record(["b"], at: 130, cap: 4)  // 4 rows in all: the cap
        #expect(!counted && before == FailureCounts(total: 4, byKey: [:]))
        (counted, before) = try await record(["a"], at: 205)  // the row at 100 is past the window
        #expect(counted && before.byKey == ["a": .init(count: 1, oldest: 110)])
        // Failures sent at once never count past the limit.
        async let racing = [record(["r"], at: 300, limit: 3), record(["r"], at: 300, limit: 3), record(["r"], at: 300, limit: 3),
                            record(["r"], at: 300, limit: 3), record(["r"], at: 300, limit: 3), record(["r"], at: 300, limit: 3)]
        #expect(try await racing.filter(\.0).count == 3)
    }
}

// MARK: Sharing relay

extension StoreFixture {
    /// A second account (a grantee, a contact), with a device of its own.
    func otherAccount(_ n: Int) async throws -> AccountID {
        let other = AccountID(unchecked: hex(n))
        try await database.createAccount(other, genesis: StoredLink(sequence: 0, hash: "g\(n)", json: Data("{}".utf8)),
                                         device: StoredDevice(id: DeviceID(unchecked: hex(n + 100)), account: other, name: "phone",
                                                              signingKey: [1], boxKey: [2], added: 0),
                                         boxes: [], recovery: nil)
        return other
    }

    func contactRequest(_ id: Int, to: AccountID, from: AccountID? = nil, expires: Int64? = nil,
                        maxOpen: Int = 10) async throws -> ContactRequestInfo {
        let info = ContactRequestInfo(id: hex(id), from: from ?? account, to: to, expires: expires ?? Int64(Date().timeIntervalSince1970) + 600,
                                      identity: IdentityKeys(generation: 1, signingKey: "s", boxKey: "b"), commitment: "c")
        try await database.createContactRequest(info, maxOpenPerAccount: maxOpen)
        return info
    }
}

/// Identity wraps and share boxes go in with their link (and not with a refused one),
/// one per key (a second replaces the first), and go with the accounts they belong to:
/// the sharer's, and the grantee's for the boxes naming it.
@Test(arguments: Backend.all) func identityWrapsAndShareBoxesAreWrittenWithTheirLinkAndGoWithTheAccounts(_ backend: Backend) async throws {
    try await withFixture(backend) { store in
        let grantee = try await store.otherAccount(3), other = try await store.otherAccount(5)
        let member = MemberID(unchecked: hex(4))
        func box(_ generation: UInt32, _ grantee: AccountID, signature: String = "s") -> ShareBox {
            ShareBox(member: member, memberGeneration: generation, grantee: grantee, granteeIdentityGeneration: 1, grant: 1, box: "b",
                     signature: signature)
        }
        var stale = store.write(1, after: "h-other")
        stale.identityWraps = [IdentityWrap(identityGeneration: 1, masterGeneration: 1, envelope: "e0")]
        stale.shareBoxes = [box(1, grantee)]
        await #expect(throws: StoreError.staleChain(currentHead: "h0")) { try await store.database.append(store.account, stale) }
        #expect(try await store.database.identityWraps(store.account).isEmpty)
        #expect(try await store.database.shareBoxes(grantee: grantee, from: store.account).isEmpty)

        var first = store.write(1, after: "h0")
        first.identityWraps = [IdentityWrap(identityGeneration: 1, masterGeneration: 2, envelope: "e1"),
                               IdentityWrap(identityGeneration: 1, masterGeneration: 1, envelope: "e0")]
        first.shareBoxes = [box(2, grantee), box(1, grantee), box(1, other)]
        try await store.database.append(store.account, first)
        var second = store.write(2, after: "h1")
        second.identityWraps = [IdentityWrap(identityGeneration: 1, masterGeneration: 2, envelope: "e2")]
        second.shareBoxes = [box(2, grantee, signature: "t")]
        try await store.database.append(store.account, second)

        #expect(try await store.database.identityWraps(store.account) == [IdentityWrap(identityGeneration: 1, masterGeneration: 1, envelope: "e0"),
                                                                           IdentityWrap(identityGeneration: 1, masterGeneration: 2, envelope: "e2")])
        #expect(try await store.database.shareBoxes(grantee: grantee, from: store.account) == [box(1, grantee), box(2, grantee, signature: "t")])
        #expect(try await store.database.shareBoxes(grantee: grantee, from: other).isEmpty)
        #expect(try await store.database.identityWraps(grantee).isEmpty)

        try await store.database.deleteAccount(grantee)
        #expect(try await store.database.shareBoxes(grantee: grantee, from: store.account).isEmpty)
        #expect(try await store.database.shareBoxes(grantee: other, from: store.account) == [box(1, other)])
        try await store.database.deleteAccount(store.account)
        #expect(try await store.database.identityWraps(store.account).isEmpty)
        #expect(try await store.database.shareBoxes(grantee: other, from: store.account).isEmpty)
    }
}

/// A contact request is answered once by the account it is to, then revealed once by
/// the one it is from; out of turn, twice, by another account or after expiry it is refused.
@Test(arguments: Backend.all) func aContactRequestIsAnsweredOnceThenRevealedOnceByItsTwoAccounts(_ backend: Backend) async throws {
    try await withFixture(backend) { store in
        let db = store.database
        let bob = try await store.otherAccount(3), carol = try await store.otherAccount(5)
        let request = try await store.contactRequest(10, to: bob)
        #expect(try await db.contactRequest(id: request.id) == request)
        #expect(try await db.contactRequest(id: hex(99)) == nil)
        #expect(try await db.contactRequests(of: store.account) == [request])
        #expect(try await db.contactRequests(of: bob) == [request])
        #expect(try await db.contactRequests(of: carol).isEmpty)

        let response = ContactResponse(identity: IdentityKeys(generation: 1, signingKey: "s2", boxKey: "b2"), nonce: "n2")
        await #expect(throws: StoreError.linkRequestOutOfTurn) { try await db.revealContactRequest(id: request.id, from: store.account, nonce: "n1") }
        await #expect(throws: StoreError.notFound) { try await db.respondToContactRequest(id: request.id, to: carol, response: response) }
        await #expect(throws: StoreError.notFound) { try await db.respondToContactRequest(id: hex(99), to: bob, response: response) }
        try await db.respondToContactRequest(id: request.id, to: bob, response: response)
        await #expect(throws: StoreError.linkRequestClosed) { try await db.respondToContactRequest(id: request.id, to: bob, response: response) }
        await #expect(throws: StoreError.notFound) { try await db.revealContactRequest(id: request.id, from: bob, nonce: "n1") }
        try await db.revealContactRequest(id: request.id, from: store.account, nonce: "n1")
        await #expect(throws: StoreError.linkRequestClosed) { try await db.revealContactRequest(id: request.id, from: store.account, nonce: "n1") }
        var done = request
        done.response = response
        done.reveal = "n1"
        #expect(try await db.contactRequest(id: request.id) == done)

        // Expired: readable, no longer listed, no step taken.
        let expired = try await store.contactRequest(11, to: bob, expires: Int64(Date().timeIntervalSince1970) - 1)
        #expect(try await db.contactRequest(id: expired.id) == expired)
        #expect(try await db.contactRequests(of: bob) == [done])
        await #expect(throws: StoreError.linkRequestClosed) { try await db.respondToContactRequest(id: expired.id, to: bob, response: response) }
        await #expect(throws: StoreError.linkRequestClosed) { try await db.revealContactRequest(id: expired.id, from: store.account, nonce: "n1") }

        // Unexpired ones count against the asking account only; no request to a missing account.
        _ = try await store.contactRequest(12, to: carol, maxOpen: 3)
        await #expect(throws: StoreError.tooManyLinkRequests) { _ = try await store.contactRequest(13, to: carol, maxOpen: 2) }
        _ = try await store.contactRequest(14, to: store.account, from: carol, maxOpen: 2)
        await #expect(throws: StoreError.notFound) { _ = try await store.contactRequest(15, to: AccountID(unchecked: hex(77))) }

        // Deleting an account deletes the requests from and to it.
        try await db.deleteAccount(carol)
        #expect(try await db.contactRequest(id: hex(12)) == nil)
        #expect(try await db.contactRequest(id: hex(14)) == nil)
        #expect(try await db.contactRequest(id: request.id) != nil)
        try await db.deleteAccount(bob)
        #expect(try await db.contactRequests(of: store.account).isEmpty)
        #expect(try await db.contactRequest(id: request.id) == nil)
    }
}

/// A database file in `directory` migrated up to `migration`, without foreign keys (a
/// migration test writes rows of accounts it does not make).
func database(in directory: TemporaryDirectory, migratedUpTo migration: String) throws -> DatabaseQueue {
    var configuration = Configuration()
    configuration.foreignKeysEnabled = false
    let queue = try DatabaseQueue(path: directory.path("old.sqlite"), configuration: configuration)
    try KeyVaultDatabase.migrator.migrate(queue, upTo: migration)
    return queue
}

/// A database audited before the typed sequence keeps its links' sequences: migration
/// v9 moves "sequence N" out of the detail into the number, and leaves other details.
@Test func theAuditSequenceMigrationKeepsEveryLoggedLink() throws {
    let directory = try TemporaryDirectory("kv-migrate")
    let queue = try database(in: directory, migratedUpTo: "v8 head statements")
    try queue.write { db in
        for (event, detail) in [("link.genesis", nil), ("link.member.add", "sequence 1"), ("attachment.put", "m a"), ("link.master.rotate", "sequence 12")] {
            try db.execute(sql: "INSERT INTO audit (account, time, event, device, detail) VALUES ('a', 1, ?, 'd', ?)", arguments: [event, detail])
        }
    }
    try KeyVaultDatabase.migrator.migrate(queue)
    let rows = try queue.read { db in try Row.fetchAll(db, sql: "SELECT sequence, detail FROM audit ORDER BY id") }
    #expect(rows.map { $0["sequence"] as Int64? } == [0, 1, nil, 12])
    #expect(rows.map { $0["detail"] as String? } == [nil, nil, "m a", nil])
}

/// Issue 21, item 5: on PostgreSQL every write a crash must not take back once it was
/// acknowledged (the chain: an account made, a link appended, an account deleted; and
/// recovery's single-use values and failure counts) commits waiting for its WAL flush,
/// and the writes SQLite keeps at NORMAL (nonces, attachments) do not. Read inside each
/// writing transaction by a trigger, through the store's own functions: a chain write
/// moved out of its durable transaction fails here.
@Test(.enabled(if: Backend.all.contains(where: \.isShared), "needs KEYVAULT_TEST_DATABASE_URL"))
func onPostgreSQLEveryChainWriteCommitsDurablyAndNoncesAndAttachmentsDoNot() async throws {
    guard case .postgres(let url)? = Backend.all.first(where: \.isShared) else { return }
    try await PostgresKeyVaultDatabase.withTemporarySchema(url) { database in
        try await database.recordCommitModes(of: ["links", "deleted_accounts", "used_once", "failures", "request_nonces", "attachments"])
        let store = try await StoreFixture(database)
        try await database.append(store.account, store.write(1, after: "h0"))
        #expect(try await database.useOnce("token", kind: "test", expires: KeyVaultDatabase.now() + 60, forgetBefore: 0))
        _ = try await database.recordFailure(["key"], at: KeyVaultDatabase.now(), since: 0, limit: 5, cap: 10)
        #expect(try await database.useNonce(hex(50), device: store.phone.id, timestamp: KeyVaultDatabase.now(), forgetBefore: 0))
        _ = try await database.putAttachment(store.account, member: MemberID(unchecked: hex(60)), address: "ca1.1.a", key: Data([1]),
                                             data: Data([2]), device: store.phone.id)
        let modes = try await database.commitModes()
        #expect(modes == ["links": ["on"], "used_once": ["on"], "failures": ["on"], "request_nonces": ["off"], "attachments": ["off"]],
                "\(modes)")
        // The deletion (its attachments go with it, in its transaction).
        try await database.deleteAccount(store.account, expectedHead: "h1", by: store.phone.id)
        #expect(try await database.commitModes()["deleted_accounts"] == ["on"])
    }
}
