import Foundation
import GRDB
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
                   expectedHead: head, audit: (.link(event), phone.id.rawValue, nil))
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
        let tablet = StoredDevice(id: DeviceID(unchecked: hex(3)), account: store.account, name: "tablet", signingKey: [3], boxKey: [4], added: 1)
        var add = store.write(1, after: "h0", event: .deviceAdd)
        add.newDevices = [tablet]
        try await store.database.append(store.account, add)
        #expect(try await store.database.device(tablet.id)?.status == .active)
        var revoke = store.write(2, after: "h1", event: .deviceRevoke)
        revoke.revokedDevices = [tablet.id]
        try await store.database.append(store.account, revoke)
        let stored = try #require(try await store.database.device(tablet.id))
        #expect(stored.status == .revoked && stored.revoked == 2)
        #expect(try await store.database.devices(store.account).map(\.status) == [.active, .revoked])
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
