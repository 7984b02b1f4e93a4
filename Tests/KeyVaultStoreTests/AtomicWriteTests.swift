import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultPostgres
import Testing
import KeyVaultStore

// Every check-then-write holds when writers race (issue 10). SQLite has one writer, so
// these pass there by construction; on PostgreSQL each writer has its own connection
// from the pool and the database alone decides.

private func hex(_ n: Int) -> String { String(format: "%032x", n) }
private let account = AccountID(unchecked: hex(1))
private let phone = StoredDevice(id: DeviceID(unchecked: hex(2)), account: account, name: "phone", signingKey: [1], boxKey: [2], added: 0)

private func createAccount(_ database: any KeyVaultRepository) async throws {
    try await database.createAccount(account, genesis: StoredLink(sequence: 0, hash: "h0", json: Data("{}".utf8)),
                                     device: phone, boxes: [], recovery: nil)
}

/// Runs `count` copies of `body` at once; returns how many succeeded and the errors of the others.
private func race(_ count: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async -> (won: Int, errors: [any Error]) {
    await withTaskGroup(of: (any Error)?.self) { group in
        for i in 0..<count { group.addTask { do { try await body(i); return nil } catch { return error } } }
        var won = 0, errors: [any Error] = []
        for await error in group { if let error { errors.append(error) } else { won += 1 } }
        return (won, errors)
    }
}

@Test(arguments: Backend.all) func racingAppendsOnOneHeadLandExactlyOneLink(_ backend: Backend) async throws {
    try await backend.withStore { database in
        try await createAccount(database)
        let result = await race(8) { i in
            try await database.append(account, ChainWrite(
                link: StoredLink(sequence: 1, hash: "fork\(i)", json: Data("{}".utf8)), expectedHead: "h0",
                audit: (.link(.masterRotate), phone.id.rawValue)))
        }
        #expect(result.won == 1)
        #expect(result.errors.allSatisfy { if case StoreError.staleChain = $0 { true } else { false } }, "\(result.errors)")
        let stored = try #require(try await database.links(account))
        #expect(stored.links.map(\.sequence) == [0, 1])
        #expect(stored.head == stored.links[1].hash)
    }
}

@Test(arguments: Backend.all) func racingAccountCreationsMakeOneAccount(_ backend: Backend) async throws {
    try await backend.withStore { database in
        let result = await race(6) { _ in try await createAccount(database) }
        #expect(result.won == 1)
        #expect(result.errors.allSatisfy { ($0 as? StoreError) == .accountExists }, "\(result.errors)")
        let entries = try await database.audit(account)
        #expect(entries.count == 1)
    }
}

@Test(arguments: Backend.all) func racingUploadsOfOneAddressStoreItOnce(_ backend: Backend) async throws {
    try await backend.withStore { database in
        try await createAccount(database)
        let member = MemberID(unchecked: hex(5))
        let existed = Locked<[Bool]>([])
        let result = await race(6) { _ in
            let info = try await database.putAttachment(account, member: member, address: "ca1.1.x", key: Data([1]), data: Data([2, 3]),
                                                        device: phone.id)
            existed.withLock { $0.append(info.existed == true) }
        }
        #expect(result.won == 6, "\(result.errors)")
        #expect(existed.withLock { $0.filter { !$0 }.count } == 1)
        #expect(try await database.attachments(account, member: member).count == 1)
        #expect(try await database.audit(account).filter { $0.event == "attachment.put" }.count == 1)
    }
}

/// Issue 19, item 4: an account's own device replaces an object another party planted
/// at an address (the server cannot tell; the device found it does not open).
@Test(arguments: Backend.all) func aReplacedAttachmentHoldsTheNewObjectAndIsAudited(_ backend: Backend) async throws {
    try await backend.withStore { database in
        try await createAccount(database)
        let member = MemberID(unchecked: hex(6))
        _ = try await database.putAttachment(account, member: member, address: "ca1.1.y", key: Data([1]), data: Data([9, 9, 9]), device: phone.id)
        let info = try await database.replaceAttachment(account, member: member, address: "ca1.1.y", key: Data([2]), data: Data([4, 5]),
                                                        device: phone.id)
        #expect(info.existed == false && info.size == 2)
        let stored = try #require(try await database.attachment(account, member: member, address: "ca1.1.y"))
        #expect(stored.key == Data([2]) && stored.data == Data([4, 5]))
        #expect(try await database.attachments(account, member: member).map(\.size) == [2])
        #expect(try await database.audit(account).filter { $0.event == "attachment.replace" }.count == 1)
    }
}

@Test(arguments: Backend.all) func racingLinkRequestsFromOneAddressStopAtItsLimit(_ backend: Backend) async throws {
    try await backend.withStore { database in
        try await createAccount(database)
        let expires = Int64(Date().timeIntervalSince1970) + 600
        let result = await race(12) { i in
            let request = LinkRequestCreate(device: DeviceID(unchecked: hex(100 + i)), name: "new", signingKey: "k", boxKey: "b",
                                            commitment: "c")
            try await database.createLinkRequest(account, code: String(format: "CODE%06d", i), expires: expires, request: request,
                                                 client: "192.0.2.7", perClient: 3, total: 100, perAccountOverTotal: 3)
        }
        #expect(result.won == 3)
        #expect(result.errors.allSatisfy { ($0 as? StoreError) == .tooManyLinkRequests }, "\(result.errors)")
        #expect(try await database.pendingLinkRequests(account).count == 3)
    }
}

@Test(arguments: Backend.all) func aNonceIsTakenOnceWhoeverRaces(_ backend: Backend) async throws {
    try await backend.withStore { database in
        let taken = Locked(0)
        let result = await race(8) { _ in
            if try await database.useNonce("n1", device: phone.id, timestamp: 1000, forgetBefore: 0) { taken.withLock { $0 += 1 } }
        }
        #expect(result.won == 8, "\(result.errors)")
        #expect(taken.withLock { $0 } == 1)
        let another = try await database.useNonce("n2", device: phone.id, timestamp: 1000, forgetBefore: 0)
        #expect(another)
    }
}

@Test(arguments: Backend.all) func auditPagesReadEveryEntryOnceWhileWritersAppend(_ backend: Backend) async throws {
    try await backend.withStore { database in
        try await createAccount(database)
        async let writers = race(40) { i in try await database.recordAudit(account, event: .recoveryProven, device: nil, detail: "\(i)") }
        // Page while they write, then once more after: no id may be skipped.
        var seen: [Int64] = [], after: Int64 = 0
        for _ in 0..<200 {
            let page = try await database.audit(account, after: after, limit: 3)
            seen += page.map(\.id)
            after = page.last?.id ?? after
            if page.isEmpty { await Task.yield() }
        }
        #expect(await writers.won == 40)
        while true {
            let page = try await database.audit(account, after: after, limit: 3)
            if page.isEmpty { break }
            seen += page.map(\.id)
            after = page.last!.id
        }
        let all = try await database.audit(account, after: 0, limit: 1000).map(\.id)
        #expect(all.count == 41)
        #expect(seen == all)
    }
}

@Test(arguments: Backend.all) func deletingAnAccountRemovesItAndASecondDeleteIsNotFound(_ backend: Backend) async throws {
    try await backend.withStore { database in
        try await createAccount(database)
        try await database.deleteAccount(account)
        #expect(try await database.links(account) == nil)
        #expect(try await database.device(phone.id) == nil)
        await #expect(throws: StoreError.notFound) { try await database.deleteAccount(account) }
    }
}

@Test(arguments: Backend.all) func boxesAndWrapsAreFilteredAndOrderedAlike(_ backend: Backend) async throws {
    try await backend.withStore { database in
        let boxes = [KeyBox(generation: 1, sequence: 0, recipient: "b-device", box: "x", signer: "s", signature: "g"),
                     KeyBox(generation: 1, sequence: 0, recipient: "B-device", box: "x", signer: "s", signature: "g"),
                     KeyBox(generation: 2, sequence: 0, recipient: "a-device", box: "x", signer: "s", signature: "g")]
        try await database.createAccount(account, genesis: StoredLink(sequence: 0, hash: "h0", json: Data("{}".utf8)),
                                         device: phone, boxes: boxes, recovery: nil)
        #expect(try await database.boxes(account, recipient: nil, generation: nil).map(\.recipient) == ["B-device", "b-device", "a-device"])
        #expect(try await database.boxes(account, recipient: "a-device", generation: nil).map(\.generation) == [2])
        #expect(try await database.boxes(account, recipient: nil, generation: 1).count == 2)
        var write = ChainWrite(link: StoredLink(sequence: 1, hash: "h1", json: Data("{}".utf8)), expectedHead: "h0",
                               audit: (.link(.memberAdd), phone.id.rawValue))
        write.wraps = [MemberWrap(member: MemberID(unchecked: hex(6)), memberGeneration: 1, masterGeneration: 1, envelope: "e1"),
                       MemberWrap(member: MemberID(unchecked: hex(5)), memberGeneration: 1, masterGeneration: 1, envelope: "e2")]
        try await database.append(account, write)
        #expect(try await database.wraps(account, member: nil).map(\.envelope) == ["e2", "e1"])
        #expect(try await database.wraps(account, member: MemberID(unchecked: hex(6))).map(\.envelope) == ["e1"])
    }
}

/// Replicas that start at once on a new database migrate it once: the others wait on
/// the advisory lock, then find every migration applied (without it, their CREATE
/// TABLEs collide).
@Test func replicasStartingTogetherMigrateOnce() async throws {
    guard case .postgres(let url)? = StoreBackend.all.last else { return }
    try await PostgresKeyVaultDatabase.withEmptySchema(url) { schema in
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask { try await PostgresKeyVaultDatabase.migrate(url, schema: schema) }
            }
            try await group.waitForAll()
        }
        // And again, as a restart does.
        try await PostgresKeyVaultDatabase.migrate(url, schema: schema)
    }
}

/// Contact requests racing past one account's limit stop at it, and of answers (or
/// reveals) racing on one request exactly one is taken.
@Test(arguments: Backend.all) func racingContactRequestStepsTakeEachStepOnce(_ backend: Backend) async throws {
    try await backend.withStore { database in
        try await createAccount(database)
        let other = AccountID(unchecked: hex(3))
        try await database.createAccount(other, genesis: StoredLink(sequence: 0, hash: "g3", json: Data("{}".utf8)),
                                         device: StoredDevice(id: DeviceID(unchecked: hex(4)), account: other, name: "phone",
                                                              signingKey: [1], boxKey: [2], added: 0),
                                         boxes: [], recovery: nil)
        let identity = IdentityKeys(generation: 1, signingKey: "s", boxKey: "b")
        let expires = Int64(Date().timeIntervalSince1970) + 600
        let created = await race(12) { i in
            try await database.createContactRequest(ContactRequestInfo(id: hex(100 + i), from: account, to: other, expires: expires,
                                                                       identity: identity, commitment: "c"), maxOpenPerAccount: 3)
        }
        #expect(created.won == 3)
        #expect(created.errors.allSatisfy { ($0 as? StoreError) == .tooManyLinkRequests }, "\(created.errors)")
        let id = try #require(try await database.contactRequests(of: account).first?.id)

        let answered = await race(8) { i in
            try await database.respondToContactRequest(id: id, to: other, response: ContactResponse(identity: identity, nonce: "n\(i)"))
        }
        #expect(answered.won == 1)
        #expect(answered.errors.allSatisfy { ($0 as? StoreError) == .linkRequestClosed }, "\(answered.errors)")
        let revealed = await race(8) { i in try await database.revealContactRequest(id: id, from: account, nonce: "r\(i)") }
        #expect(revealed.won == 1)
        #expect(revealed.errors.allSatisfy { ($0 as? StoreError) == .linkRequestClosed }, "\(revealed.errors)")
        let info = try #require(try await database.contactRequest(id: id))
        #expect(info.response != nil && info.reveal != nil)
    }
}

/// A link's audit entry carries the link's sequence as a number (issue 20, item 3: it
/// was a "sequence N" string the client parsed back): the genesis 0, the next link 1.
@Test(arguments: Backend.all) func aLinksAuditEntryCarriesItsSequenceAsANumber(_ backend: Backend) async throws {
    try await backend.withStore { database in
        try await createAccount(database)
        try await database.append(account, ChainWrite(
            link: StoredLink(sequence: 1, hash: "h1", json: Data("{}".utf8)), expectedHead: "h0",
            audit: (.link(.masterRotate), phone.id.rawValue)))
        let entries = try await database.audit(account)
        #expect(entries.map(\.event) == ["link.genesis", "link.master.rotate"])
        #expect(entries.map(\.sequence) == [0, 1])
        #expect(entries.allSatisfy { $0.detail == nil })
    }
}
