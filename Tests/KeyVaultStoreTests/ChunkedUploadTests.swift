import Foundation
import GRDB
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultPostgres
import KeyVaultTestSupport
import Testing
@testable import KeyVaultStore

// Issue 21: attachments uploaded in chunks, on both backends. Nothing is readable
// before the upload completes; a complete upload does not overwrite an attachment
// already there unless it replaces it; what goes leaves no chunk behind.

private func hex(_ n: Int) -> String { String(format: "%032x", n) }
private let account = AccountID(unchecked: hex(11))
private let member = MemberID(unchecked: hex(12))
private let phone = StoredDevice(id: DeviceID(unchecked: hex(13)), account: account, name: "phone", signingKey: [1], boxKey: [2], added: 0)

private func createAccount(_ database: any KeyVaultRepository) async throws {
    try await database.createAccount(account, genesis: StoredLink(sequence: 0, hash: "h0", json: Data("{}".utf8)),
                                     device: phone, boxes: [], recovery: nil)
}

@Test(arguments: Backend.all) func anUploadInChunksIsReadableOnlyOnceComplete(_ backend: Backend) async throws {
    try await backend.withStore { database in
        try await createAccount(database)
        let upload = hex(100), address = "ca1.1.a"
        try await database.beginUpload(account, member: member, address: address, upload: upload, startedBy: account, key: Data([7]), chunkShift: 10,
                                       size: 1500, chunks: 2)
        #expect(try await database.unfinishedUpload(account, member: member, address: address, upload: upload, startedBy: account)?.chunks == 2)
        // Another member's or address's path does not reach it.
        #expect(try await !database.putUploadChunk(account, member: MemberID(unchecked: hex(99)), address: address, upload: upload, startedBy: account,
                                                    index: 0, data: Data([1])))
        #expect(try await !database.putUploadChunk(account, member: member, address: "ca1.1.b", upload: upload, startedBy: account, index: 0, data: Data([1])))
        #expect(try await database.putUploadChunk(account, member: member, address: address, upload: upload, startedBy: account, index: 1, data: Data([2, 2])))
        #expect(try await database.completeUpload(account, member: member, address: address, upload: upload, startedBy: account, replace: false,
                                                  objectSize: 99, device: phone.id) == .incomplete(have: 1, need: 2))
        #expect(try await database.attachment(account, member: member, address: address) == nil)
        #expect(try await database.putUploadChunk(account, member: member, address: address, upload: upload, startedBy: account, index: 0, data: Data([1, 1])))
        guard case .stored(let info) = try await database.completeUpload(account, member: member, address: address, upload: upload, startedBy: account,
                                                                          replace: false, objectSize: 99, device: phone.id) else {
            Issue.record("not stored"); return
        }
        #expect(info.existed == false && info.size == 99)
        let stored = try #require(try await database.attachment(account, member: member, address: address))
        #expect(stored == StoredAttachment(key: Data([7]), data: Data([2, 10]), upload: upload, chunks: 2))
        // Its layout, read without its content.
        #expect(try await database.attachmentLayout(account, member: member, address: address) == AttachmentLayout(upload: upload, chunkShift: 10, chunks: 2))
        #expect(try await database.attachmentChunk(upload: upload, index: 0) == Data([1, 1]))
        #expect(try await database.attachmentChunk(upload: upload, index: 1) == Data([2, 2]))
        // Complete now: no more chunks, no second completion.
        #expect(try await !database.putUploadChunk(account, member: member, address: address, upload: upload, startedBy: account, index: 0, data: Data([9])))
        #expect(try await database.completeUpload(account, member: member, address: address, upload: upload, startedBy: account, replace: false,
                                                  objectSize: 99, device: phone.id) == .unknown)
        #expect(try await database.attachments(account, member: member).map(\.size) == [99])
        // One put whole has no chunk layout (its content is not read to say so); another address, no row.
        _ = try await database.putAttachment(account, member: member, address: "ca1.1.whole", key: Data([7]), data: Data(repeating: 2, count: 3 << 20), device: phone.id)
        #expect(try await database.attachmentLayout(account, member: member, address: "ca1.1.whole") == AttachmentLayout(upload: nil, chunkShift: nil, chunks: 0))
        #expect(try await database.attachmentLayout(account, member: member, address: "ca1.1.none") == nil)
    }
}

@Test(arguments: Backend.all) func aSecondUploadOfAnAddressReplacesItOnlyWhenAskedAndLeavesNoChunkBehind(_ backend: Backend) async throws {
    try await backend.withStore { database in
        try await createAccount(database)
        let address = "ca1.1.c"
        func upload(_ id: String, _ byte: UInt8, replace: Bool) async throws -> UploadOutcome {
            try await database.beginUpload(account, member: member, address: address, upload: id, startedBy: account, key: Data([byte]), chunkShift: 10,
                                           size: 10, chunks: 1)
            _ = try await database.putUploadChunk(account, member: member, address: address, upload: id, startedBy: account, index: 0, data: Data([byte]))
            return try await database.completeUpload(account, member: member, address: address, upload: id, startedBy: account, replace: replace,
                                                     objectSize: 50, device: phone.id)
        }
        _ = try await upload(hex(1), 1, replace: false)
        guard case .stored(let again) = try await upload(hex(2), 2, replace: false) else { Issue.record("not answered"); return }
        #expect(again.existed == true)
        #expect(try await database.attachment(account, member: member, address: address)?.upload == hex(1), "the first stays")
        #expect(try await database.attachmentChunk(upload: hex(2), index: 0) == nil, "the dropped upload's chunk is gone")
        _ = try await upload(hex(3), 3, replace: true)
        #expect(try await database.attachment(account, member: member, address: address)?.upload == hex(3))
        #expect(try await database.attachmentChunk(upload: hex(1), index: 0) == nil, "the replaced upload's chunk is gone")
        // Replaced by a whole object: its chunks go too.
        _ = try await database.replaceAttachment(account, member: member, address: address, key: Data([4]), data: Data([4]), device: phone.id)
        #expect(try await database.attachment(account, member: member, address: address) == StoredAttachment(key: Data([4]), data: Data([4])))
        #expect(try await database.attachmentChunk(upload: hex(3), index: 0) == nil)
        // The account deleted: every upload and chunk with it.
        try await database.beginUpload(account, member: member, address: "ca1.1.d", upload: hex(4), startedBy: account, key: Data([5]), chunkShift: 10,
                                       size: 10, chunks: 1)
        _ = try await database.putUploadChunk(account, member: member, address: "ca1.1.d", upload: hex(4), startedBy: account, index: 0, data: Data([5]))
        try await database.deleteAccount(account)
        #expect(try await database.attachmentChunk(upload: hex(4), index: 0) == nil)
    }
}

/// What one account's abandoned uploads hold of the server is bounded: at most
/// `maxUnfinishedUploads` begun and not complete at once, counted alike by replicas
/// that begin them together; a completed one makes room.
@Test(arguments: Backend.all) func anAccountBeginsAtMostSoManyUploadsNotCompleteAtOnce(_ backend: Backend) async throws {
    try await backend.withStore { database in
        try await createAccount(database)
        let limit = KeyVaultDatabase.maxUnfinishedUploads
        func begin(_ i: Int, upload: Int? = nil) async throws {
            try await database.beginUpload(account, member: member, address: "ca1.1.\(i)", upload: hex(upload ?? 200 + i), startedBy: account, key: Data([7]),
                                           chunkShift: 10, size: 10, chunks: 1)
        }
        for i in 0..<(limit - 4) { try await begin(i) }
        // Eight more at once: four fit.
        let refused = Locked(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in (limit - 4)..<(limit + 4) {
                group.addTask {
                    do { try await begin(i) } catch StoreError.tooManyUploads { refused.withLock { $0 += 1 } }
                }
            }
            try await group.waitForAll()
        }
        #expect(refused.withLock { $0 } == 4)
        await #expect(throws: StoreError.tooManyUploads) { try await begin(99) }
        // An upload of content already begun replaces that one (given up on): no room is taken.
        try await begin(0, upload: 300)
        #expect(try await database.unfinishedUpload(account, member: member, address: "ca1.1.0", upload: hex(200), startedBy: account) == nil)
        #expect(try await database.unfinishedUpload(account, member: member, address: "ca1.1.0", upload: hex(300), startedBy: account) != nil)
        // One completes: room for one more.
        #expect(try await database.putUploadChunk(account, member: member, address: "ca1.1.1", upload: hex(201), startedBy: account, index: 0, data: Data(count: 26)))
        _ = try await database.completeUpload(account, member: member, address: "ca1.1.1", upload: hex(201), startedBy: account, replace: false,
                                              objectSize: 40, device: phone.id)
        try await begin(99)
    }
}

/// An upload is its starter's: a grantee uploading through the relay (its own
/// account as the starter) neither cancels, nor reaches, nor completes an upload the
/// account's own devices began at the same address, nor the other way round; and its
/// unfinished uploads count in an allowance of its own, not in the account's.
@Test(arguments: Backend.all) func anUploadIsItsStartersAloneAndCountsInItsStartersAllowance(_ backend: Backend) async throws {
    try await backend.withStore { database in
        try await createAccount(database)
        let grantee = AccountID(unchecked: hex(77)), address = "ca1.1.e"
        func begin(_ id: String, by starter: AccountID, at address: String = address) async throws {
            try await database.beginUpload(account, member: member, address: address, upload: id, startedBy: starter, key: Data([7]),
                                           chunkShift: 10, size: 10, chunks: 1)
        }
        try await begin(hex(500), by: account)
        try await begin(hex(501), by: grantee)
        #expect(try await database.unfinishedUpload(account, member: member, address: address, upload: hex(500), startedBy: account) != nil,
                "the grantee's upload of the same address did not cancel the account's own")
        for (id, other) in [(hex(500), grantee), (hex(501), account)] {
            #expect(try await database.unfinishedUpload(account, member: member, address: address, upload: id, startedBy: other) == nil)
            #expect(try await !database.putUploadChunk(account, member: member, address: address, upload: id, startedBy: other, index: 0,
                                                       data: Data(count: 26)))
            #expect(try await database.completeUpload(account, member: member, address: address, upload: id, startedBy: other, replace: false,
                                                      objectSize: 40, device: phone.id) == .unknown)
        }
        // Nor the other way round: the account's own begun after the grantee's.
        try await begin(hex(502), by: account, at: "ca1.1.f")
        try await begin(hex(503), by: grantee, at: "ca1.1.f")
        try await begin(hex(504), by: account, at: "ca1.1.f")
        #expect(try await database.unfinishedUpload(account, member: member, address: "ca1.1.f", upload: hex(503), startedBy: grantee) != nil)
        // The grantee's allowance full: the account's own devices still begin theirs.
        for i in 2..<KeyVaultDatabase.maxUnfinishedUploads { try await begin(hex(600 + i), by: grantee, at: "ca1.1.g\(i)") }
        await #expect(throws: StoreError.tooManyUploads) { try await begin(hex(700), by: grantee, at: "ca1.1.h") }
        try await begin(hex(701), by: account, at: "ca1.1.h")
    }
}

/// A grantee's account deleted: its uploads in flight in other accounts go with it
/// (they could never complete: no device of it signs any more).
@Test(arguments: Backend.all) func aDeletedAccountsUploadsInOtherAccountsGoWithIt(_ backend: Backend) async throws {
    try await backend.withStore { database in
        try await createAccount(database)
        let grantee = AccountID(unchecked: hex(78))
        try await database.createAccount(grantee, genesis: StoredLink(sequence: 0, hash: "g0", json: Data("{}".utf8)),
                                         device: StoredDevice(id: DeviceID(unchecked: hex(79)), account: grantee, name: "g", signingKey: [5],
                                                              boxKey: [6], added: 0),
                                         boxes: [], recovery: nil)
        try await database.beginUpload(account, member: member, address: "ca1.1.k", upload: hex(800), startedBy: grantee, key: Data([7]),
                                       chunkShift: 10, size: 10, chunks: 1)
        try await database.beginUpload(account, member: member, address: "ca1.1.k", upload: hex(801), startedBy: account, key: Data([7]),
                                       chunkShift: 10, size: 10, chunks: 1)
        try await database.deleteAccount(grantee)
        #expect(try await database.unfinishedUpload(account, member: member, address: "ca1.1.k", upload: hex(800), startedBy: grantee) == nil)
        #expect(try await database.unfinishedUpload(account, member: member, address: "ca1.1.k", upload: hex(801), startedBy: account) != nil)
    }
}

/// Uploads begun before the starter was kept are the account's own after the migration.
@Test func theUploadStarterMigrationMakesEarlierUploadsTheAccountsOwn() throws {
    let directory = try TemporaryDirectory("kv-migrate")
    let queue = try database(in: directory, migratedUpTo: "v12 deleted accounts")
    try queue.write { db in
        try db.execute(sql: """
            INSERT INTO attachment_uploads (upload, account, member, address, key, chunk_shift, size, chunks, created)
            VALUES ('u', 'a', 'm', 'ca1.1.x', x'07', 10, 10, 1, 1)
            """)
    }
    try KeyVaultDatabase.migrator.migrate(queue)
    #expect(try queue.read { db in try String.fetchAll(db, sql: "SELECT started_by FROM attachment_uploads") } == ["a"])
}

/// On PostgreSQL, a replica not upgraded yet inserts uploads without a starter while an
/// upgraded one serves the same account: they are the account's own.
@Test(.enabled(if: Backend.all.contains(where: \.isShared), "needs KEYVAULT_TEST_DATABASE_URL"))
func onPostgreSQLAnUploadAnOlderReplicaBeganIsTheAccountsOwn() async throws {
    guard case .postgres(let url)? = Backend.all.first(where: \.isShared) else { return }
    try await PostgresKeyVaultDatabase.withTemporarySchema(url) { database in
        try await createAccount(database)
        try await database.beginUploadAsAnOlderReplica(account, member: member, address: "ca1.1.o", upload: hex(900))
        #expect(try await database.unfinishedUpload(account, member: member, address: "ca1.1.o", upload: hex(900), startedBy: account) != nil)
    }
}

/// Every write takes its row locks in one order, the upload's before the attachment's,
/// and the audit lock last: a write never deadlocks with a completion, which takes them
/// in that order. Three writes that once broke it, each racing a completion of an upload
/// that holds its row: a link ending the grant of the upload's grantee; an import of two
/// links whose second ends it (the audit lock of the first link held); a link removing the
/// member of an address already stored (its attachment row taken before the upload's).
@Test(.enabled(if: Backend.all.contains(where: \.isShared), "needs KEYVAULT_TEST_DATABASE_URL"))
func onPostgreSQLNoChainWriteDeadlocksWithACompletion() async throws {
    guard case .postgres(let url)? = Backend.all.first(where: \.isShared) else { return }
    try await PostgresKeyVaultDatabase.withTemporarySchema(url) { database in
        try await createAccount(database)
        let grantee = AccountID(unchecked: hex(81))
        var head = "h0", sequence: UInt64 = 0
        func link(_ type: LinkType) -> ChainWrite {
            sequence += 1
            defer { head = "h\(sequence)" }
            return ChainWrite(link: StoredLink(sequence: sequence, hash: "h\(sequence)", json: Data("{}".utf8)), expectedHead: head,
                              audit: (.link(type), phone.id.rawValue))
        }
        func race(_ upload: String, at address: String, _ write: @escaping @Sendable () async throws -> Void) async throws {
            let writing = Task { try await write() }
            try await database.completingUpload(upload, account: account, member: member, address: address) {
                try await Task.sleep(for: .milliseconds(300))  // the write is under way, waiting for the upload's row
            }
            try await writing.value
        }
        func begin(_ upload: String, at address: String, by starter: AccountID) async throws {
            try await database.beginUpload(account, member: member, address: address, upload: upload, startedBy: starter, key: Data([7]),
                                           chunkShift: 10, size: 10, chunks: 1)
        }

        try await begin(hex(810), at: "ca1.1.l", by: grantee)
        var revoke = link(.shareRevoke)
        revoke.endedGrants = [(member, grantee)]
        try await race(hex(810), at: "ca1.1.l") { [revoke] in try await database.append(account, revoke) }

        try await begin(hex(811), at: "ca1.1.m", by: grantee)
        let first = link(.masterRotate)
        var second = link(.shareRevoke)
        second.endedGrants = [(member, grantee)]
        try await race(hex(811), at: "ca1.1.m") { [first, second] in try await database.importAccount(account, create: nil, writes: [first, second]) }

        _ = try await database.putAttachment(account, member: member, address: "ca1.1.n", key: Data([1]), data: Data([2]), device: phone.id)
        try await begin(hex(812), at: "ca1.1.n", by: account)
        var remove = link(.memberRemove)
        remove.removedMembers = [member]
        try await race(hex(812), at: "ca1.1.n") { [remove] in try await database.append(account, remove) }
        #expect(try await database.attachments(account, member: member).isEmpty)
        // A deadlock's victim would have been run again, and succeeded: none was.
        #expect(database.transactionsRunAgain == 0)
    }
}

/// An attachment's content is the last column of a table with rowids: kept out of the
/// key's B-tree, and after every column a read or an update of the row names. In a
/// table WITHOUT ROWID (as attachments were until v15) the whole row is the key's
/// B-tree cell, and each comparison on the way down to a row whose content spills
/// onto overflow pages read all of them: a 64 KiB upload cost the service about 1.5
/// times the CPU (BENCHMARKS.md, "Attachments out of their key's B-tree"). A column
/// added after the content (as key, upload and meta were) is read by walking every
/// overflow page of it.
@Test func anAttachmentsContentIsTheLastColumnOfATableWithRowids() throws {
    let queue = try DatabaseQueue()
    try KeyVaultDatabase.migrator.migrate(queue)
    try queue.read { db in
        let schema = try #require(try String.fetchOne(db, sql: "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'attachments'"))
        #expect(!schema.uppercased().contains("WITHOUT ROWID"), "\(schema)")
        let columns = try Row.fetchAll(db, sql: "PRAGMA table_info(attachments)").map { $0["name"] as String }
        #expect(columns.last == "data", "\(columns)")
        #expect(Set(columns) == ["account", "member", "address", "size", "created", "key", "upload", "meta", "data"])
        // (account, member, address) is still unique.
        let unique = try Row.fetchAll(db, sql: "PRAGMA index_list(attachments)").filter { $0["unique"] as Bool }
        #expect(try unique.contains { index in
            try Row.fetchAll(db, sql: "PRAGMA index_info(\(index["name"] as String))").map { $0["name"] as String } == ["account", "member", "address"]
        })
    }
}

/// A table's columns (name, type, NOT NULL, default; in name order), foreign keys and strictness.
private func shape(of table: String, in db: Database) throws -> (columns: [String], foreignKeys: [String], strict: Bool) {
    let columns = try Row.fetchAll(db, sql: "PRAGMA table_xinfo(\(table))").map { row in
        "\(row["name"] as String) \(row["type"] as String) notnull=\(row["notnull"] as Int) default=\(row["dflt_value"] as String? ?? "none")"
    }.sorted()
    let foreignKeys = try Row.fetchAll(db, sql: "PRAGMA foreign_key_list(\(table))").map { row in
        "\(row["from"] as String) -> \(row["table"] as String)(\(row["to"] as String)) ON DELETE \(row["on_delete"] as String)"
    }
    let strict = try Int.fetchOne(db, sql: "SELECT strict FROM pragma_table_list WHERE name = ?", arguments: [table]) == 1
    return (columns, foreignKeys, strict)
}

/// Migration v15 moves every attachment, whole or uploaded in chunks, named or not,
/// into the new table with all of its columns.
@Test func theAttachmentsTableMigrationKeepsEveryAttachment() throws {
    let directory = try TemporaryDirectory("kv-migrate")
    let queue = try database(in: directory, migratedUpTo: "v14 unfinished uploads by starter")
    let whole = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
    try queue.write { db in
        try db.execute(sql: """
            INSERT INTO attachments (account, member, address, size, created, data, key, upload, meta)
            VALUES ('a', 'm', 'ca1.1.w', 70000, 5, ?, x'0102', NULL, x'0304'),
                   ('a', 'm', 'ca1.1.c', 2048, 6, x'', x'05', 'u', NULL)
            """, arguments: [whole])
    }
    try KeyVaultDatabase.migrator.migrate(queue)
    let rows = try queue.read { db in
        try Row.fetchAll(db, sql: "SELECT account, member, address, size, created, data, key, upload, meta FROM attachments ORDER BY created")
    }
    #expect(rows.count == 2)
    #expect(rows.map { $0["address"] as String } == ["ca1.1.w", "ca1.1.c"])
    #expect(rows.map { $0["size"] as Int } == [70000, 2048])
    #expect(rows.map { $0["data"] as Data } == [whole, Data()])
    #expect(rows.map { $0["key"] as Data } == [Data([1, 2]), Data([5])])
    #expect(rows.map { $0["upload"] as String? } == [nil, "u"])
    #expect(rows.map { $0["meta"] as Data? } == [Data([3, 4]), nil])
    // Every column keeps its type, NOT NULL and default, the table stays STRICT, and the
    // account's deletion still takes its attachments (the foreign key's cascade).
    let after = try queue.read { db in try shape(of: "attachments", in: db) }
    let reference = try DatabaseQueue()
    try KeyVaultDatabase.migrator.migrate(reference, upTo: "v14 unfinished uploads by starter")
    let before = try reference.read { db in try shape(of: "attachments", in: db) }
    #expect(after.columns == before.columns)
    #expect(after.foreignKeys == before.foreignKeys && after.foreignKeys == ["account -> accounts(id) ON DELETE CASCADE"])
    #expect(after.strict && before.strict)
    // And (account, member, address) stays unique.
    #expect(throws: DatabaseError.self) {
        try queue.write { db in
            try db.execute(sql: "INSERT INTO attachments (account, member, address, size, created, data, key) VALUES ('a', 'm', 'ca1.1.w', 1, 1, x'', x'')")
        }
    }
}

/// The store lets go of an attachment's content once it is written: on SQLite a
/// statement kept in GRDB's cache held its last arguments until it ran again (up to
/// 64 MiB of a whole object, as much again for a replace, a chunk of up to 4 MiB),
/// memory a service keeps while idle. Each content here tells when it is freed.
@Test(arguments: Backend.all) func theStoreLetsGoOfTheContentItWrote(_ backend: Backend) async throws {
    let freed = Locked(0)
    func content(_ count: Int) -> Data {
        let bytes = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 16)
        bytes.initializeMemory(as: UInt8.self, repeating: 7, count: count)
        return Data(bytesNoCopy: bytes, count: count, deallocator: .custom { bytes, _ in
            bytes.deallocate()
            freed.withLock { $0 += 1 }
        })
    }
    try await backend.withStore { database in
        try await createAccount(database)
        _ = try await database.putAttachment(account, member: member, address: "ca1.1.p", key: Data([1]), data: content(70_000), device: phone.id)
        #expect(freed.withLock { $0 } == 1, "the put's content is still held")
        _ = try await database.replaceAttachment(account, member: member, address: "ca1.1.p", key: Data([1]), data: content(70_000), device: phone.id)
        #expect(freed.withLock { $0 } == 2, "the replace's content is still held")
        try await database.beginUpload(account, member: member, address: "ca1.1.q", upload: hex(700), startedBy: account, key: Data([7]),
                                       chunkShift: 10, size: 1500, chunks: 2)
        #expect(try await database.putUploadChunk(account, member: member, address: "ca1.1.q", upload: hex(700), startedBy: account,
                                                  index: 0, data: content(1024)))
        #expect(freed.withLock { $0 } == 3, "the chunk is still held")
    }
}
