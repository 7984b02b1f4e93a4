import Foundation
import GRDB
import KeyVaultModel

/// Why the store refused a write. The server maps each case to an HTTP answer.
public enum StoreError: Error, Sendable, Equatable {
    /// The chain head moved since the writer read it.
    case staleChain(currentHead: String)
    case accountExists
    case notFound
    /// Too many pending device-link requests from one client address, or on the whole server.
    case tooManyLinkRequests
    /// The link request is no longer pending (approved, refused or expired).
    case linkRequestClosed
    /// The link request is pending but not at the step this write needs (answered
    /// already, not answered yet, or not revealed yet).
    case linkRequestOutOfTurn
}

/// A device as the server keeps it: what signed requests are checked against.
public struct StoredDevice: Sendable, Equatable {
    public var id: DeviceID
    public var account: AccountID
    public var name: String
    public var signingKey: [UInt8]
    public var boxKey: [UInt8]
    public var added: UInt64
    public var revoked: UInt64?
    public var lastSeen: Int64?

    public init(id: DeviceID, account: AccountID, name: String, signingKey: [UInt8], boxKey: [UInt8],
                added: UInt64, revoked: UInt64? = nil, lastSeen: Int64? = nil) {
        self.id = id
        self.account = account
        self.name = name
        self.signingKey = signingKey
        self.boxKey = boxKey
        self.added = added
        self.revoked = revoked
        self.lastSeen = lastSeen
    }
}

/// One chain link as stored: its JSON, sequence and hash.
public struct StoredLink: Sendable, Equatable {
    public var sequence: UInt64
    public var hash: String
    public var json: Data
    public init(sequence: UInt64, hash: String, json: Data) {
        self.sequence = sequence
        self.hash = hash
        self.json = json
    }
}

/// Everything one chain append writes, in one transaction.
public struct ChainWrite: Sendable {
    public var link: StoredLink
    /// The head the writer saw; the write is refused if the head moved.
    public var expectedHead: String
    public var newDevices: [StoredDevice] = []
    public var revokedDevices: [DeviceID] = []
    public var boxes: [KeyBox] = []
    public var wraps: [MemberWrap] = []
    public var recovery: RecoverySlot?
    /// A pending link request this write approves (single use: it must still be pending).
    public var approvesLinkRequest: (code: String, approver: DeviceID)?
    public var audit: (event: String, device: String?, detail: String?)

    public init(link: StoredLink, expectedHead: String, audit: (event: String, device: String?, detail: String?)) {
        self.link = link
        self.expectedHead = expectedHead
        self.audit = audit
    }
}

/// The service's storage: SQLite through GRDB (WAL, foreign keys, append-only
/// migrations). Every method is one transaction. Statement arguments are never logged.
public struct KeyVaultDatabase: Sendable {
    private let writer: any DatabaseWriter
    private var syncChainWrites = true

    /// Opens (creating if needed) the database file at `path` and migrates it.
    ///
    /// - Parameter syncChainWrites: sync the chain writes' commits (`synchronous = FULL`);
    ///   false only to measure what that costs (keyvault-bench chain-appends).
    public static func open(path: String, syncChainWrites: Bool = true) throws -> KeyVaultDatabase {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            // WAL with NORMAL: a commit survives a crash of this process, and the file is
            // never corrupt; on power loss the last commits may be lost. Writes that are
            // acknowledged as durable (the chain) raise it to FULL: see `durableWrite`.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        let pool = try DatabasePool(path: path, configuration: configuration)
        var database = try KeyVaultDatabase(writer: pool)
        database.syncChainWrites = syncChainWrites
        return database
    }

    /// The writer connection's `PRAGMA synchronous` (0 OFF, 1 NORMAL, 2 FULL) inside
    /// a chain write and inside any other write, for tests.
    func synchronousModes() async throws -> (chainWrite: Int, other: Int) {
        let chainWrite = try await durableWrite { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
        let other = try await writer.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
        return (chainWrite, other)
    }

    /// A write transaction that is on disk when it returns, power loss included:
    /// `synchronous = FULL` makes SQLite sync the WAL at this commit, not only at the
    /// next checkpoint. The pragma cannot change inside a transaction, so it is set
    /// around one, on the writer connection, and set back for the other writes
    /// (last-seen, nonces, audit rows), which stay cheap. BENCHMARKS.md has the cost.
    private func durableWrite<T: Sendable>(_ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let synced = syncChainWrites
        return try await writer.writeWithoutTransaction { db in
            if synced { try db.execute(sql: "PRAGMA synchronous = FULL") }
            defer { try? db.execute(sql: "PRAGMA synchronous = NORMAL") }
            var result: T?
            try db.inTransaction {
                result = try updates(db)
                return .commit
            }
            return result!
        }
    }

    /// An empty database in memory, for tests.
    public static func inMemory() throws -> KeyVaultDatabase {
        try KeyVaultDatabase(writer: DatabaseQueue())
    }

    init(writer: any DatabaseWriter) throws {
        self.writer = writer
        try Self.migrator.migrate(writer)
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        // Append-only: never edit a registered migration; add a new one.
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE accounts (
                    id TEXT PRIMARY KEY NOT NULL,
                    created INTEGER NOT NULL,
                    head TEXT NOT NULL,
                    sequence INTEGER NOT NULL
                ) STRICT;
                CREATE TABLE links (
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    sequence INTEGER NOT NULL,
                    hash TEXT NOT NULL,
                    json BLOB NOT NULL,
                    PRIMARY KEY (account, sequence)
                ) STRICT, WITHOUT ROWID;
                CREATE TABLE devices (
                    id TEXT PRIMARY KEY NOT NULL,
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    name TEXT NOT NULL,
                    signing_key BLOB NOT NULL,
                    box_key BLOB NOT NULL,
                    added INTEGER NOT NULL,
                    revoked INTEGER,
                    last_seen INTEGER
                ) STRICT;
                CREATE INDEX devices_account ON devices(account);
                CREATE TABLE recovery_slots (
                    account TEXT PRIMARY KEY NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    json BLOB NOT NULL
                ) STRICT;
                CREATE TABLE key_boxes (
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    generation INTEGER NOT NULL,
                    recipient TEXT NOT NULL,
                    json BLOB NOT NULL,
                    PRIMARY KEY (account, generation, recipient)
                ) STRICT, WITHOUT ROWID;
                CREATE TABLE member_wraps (
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    member TEXT NOT NULL,
                    member_generation INTEGER NOT NULL,
                    master_generation INTEGER NOT NULL,
                    envelope TEXT NOT NULL,
                    PRIMARY KEY (account, member, member_generation, master_generation)
                ) STRICT, WITHOUT ROWID;
                CREATE TABLE attachments (
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    member TEXT NOT NULL,
                    address TEXT NOT NULL,
                    size INTEGER NOT NULL,
                    created INTEGER NOT NULL,
                    data BLOB NOT NULL,
                    PRIMARY KEY (account, member, address)
                ) STRICT, WITHOUT ROWID;
                CREATE TABLE audit (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    time INTEGER NOT NULL,
                    event TEXT NOT NULL,
                    device TEXT,
                    detail TEXT
                ) STRICT;
                CREATE INDEX audit_account ON audit(account, id);
                """)
        }
        migrator.registerMigration("v2 link requests") { db in
            try db.execute(sql: """
                CREATE TABLE link_requests (
                    account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    code TEXT NOT NULL,
                    status TEXT NOT NULL,
                    expires INTEGER NOT NULL,
                    request BLOB NOT NULL,
                    approver TEXT,
                    PRIMARY KEY (account, code)
                ) STRICT, WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v3 attachment keys") { db in
            // The wrapped data key, apart from the content, so re-wrapping rewrites only it.
            try db.execute(sql: "ALTER TABLE attachments ADD COLUMN key BLOB NOT NULL DEFAULT x''")
        }
        migrator.registerMigration("v4 request nonces") { db in
            // Nonces of Ed25519-signed requests, kept while their timestamps are fresh, so
            // that a request captured before a restart is refused after it. No foreign key:
            // a deleted account's nonces still expire, and still refuse replays meanwhile.
            try db.execute(sql: """
                CREATE TABLE request_nonces (
                    device TEXT NOT NULL,
                    nonce TEXT NOT NULL,
                    time INTEGER NOT NULL,
                    PRIMARY KEY (device, nonce)
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX request_nonces_time ON request_nonces(time);
                """)
        }
        migrator.registerMigration("v5 link exchange") { db in
            // Device link version 2 (docs/formats/device-link.md): the approver's and the new
            // device's random values, and the client address that asked, for per-address limits.
            // Version 1 requests cannot finish under version 2; they are dropped.
            try db.execute(sql: """
                DELETE FROM link_requests;
                ALTER TABLE link_requests ADD COLUMN approver_nonce TEXT;
                ALTER TABLE link_requests ADD COLUMN device_nonce TEXT;
                ALTER TABLE link_requests ADD COLUMN client TEXT NOT NULL DEFAULT '';
                CREATE INDEX link_requests_client ON link_requests(client, status, expires);
                CREATE INDEX link_requests_expires ON link_requests(status, expires);
                """)
        }
        return migrator
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    // MARK: Accounts and the chain

    /// Creates an account from its genesis link, first device and boxes.
    ///
    /// - Throws: `StoreError.accountExists` when the account (or device) is already there.
    public func createAccount(_ account: AccountID, genesis: StoredLink, device: StoredDevice, boxes: [KeyBox],
                              recovery: RecoverySlot?) async throws {
        try await durableWrite { db in
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM accounts WHERE id = ?", arguments: [account.rawValue]) == true
                || Bool.fetchOne(db, sql: "SELECT 1 FROM devices WHERE id = ?", arguments: [device.id.rawValue]) == true {
                throw StoreError.accountExists
            }
            try db.execute(sql: "INSERT INTO accounts (id, created, head, sequence) VALUES (?, ?, ?, 0)",
                           arguments: [account.rawValue, Self.now(), genesis.hash])
            try Self.insert(genesis, account: account, db)
            try Self.insert(device, db)
            for box in boxes { try Self.insert(box, account: account, db) }
            if let recovery { try Self.upsert(recovery, account: account, db) }
            try Self.audit(db, account: account, event: "link.genesis", device: device.id.rawValue, detail: nil)
        }
    }

    /// Appends one link and everything that goes with it, if the head is still the expected one.
    ///
    /// - Throws: `StoreError.staleChain` (nothing written) when the head moved; `.notFound`.
    public func append(_ account: AccountID, _ write: ChainWrite) async throws {
        try await durableWrite { db in
            guard let head = try String.fetchOne(db, sql: "SELECT head FROM accounts WHERE id = ?", arguments: [account.rawValue]) else {
                throw StoreError.notFound
            }
            guard head == write.expectedHead else { throw StoreError.staleChain(currentHead: head) }
            if let (code, approver) = write.approvesLinkRequest {
                try db.execute(sql: """
                    UPDATE link_requests SET status = 'approved'
                    WHERE account = ? AND code = ? AND status = 'pending' AND expires >= ? AND approver = ?
                      AND device_nonce IS NOT NULL
                    """, arguments: [account.rawValue, code, Self.now(), approver.rawValue])
                guard db.changesCount == 1 else { throw StoreError.linkRequestClosed }
            }
            try db.execute(sql: "UPDATE accounts SET head = ?, sequence = ? WHERE id = ?",
                           arguments: [write.link.hash, write.link.sequence, account.rawValue])
            try Self.insert(write.link, account: account, db)
            for device in write.newDevices { try Self.insert(device, db) }
            for id in write.revokedDevices {
                try db.execute(sql: "UPDATE devices SET revoked = ? WHERE id = ? AND account = ?",
                               arguments: [write.link.sequence, id.rawValue, account.rawValue])
            }
            for box in write.boxes { try Self.insert(box, account: account, db) }
            for wrap in write.wraps {
                try db.execute(sql: """
                    INSERT OR REPLACE INTO member_wraps (account, member, member_generation, master_generation, envelope)
                    VALUES (?, ?, ?, ?, ?)
                    """, arguments: [account.rawValue, wrap.member.rawValue, wrap.memberGeneration, wrap.masterGeneration, wrap.envelope])
            }
            if let recovery = write.recovery { try Self.upsert(recovery, account: account, db) }
            try Self.audit(db, account: account, event: write.audit.event, device: write.audit.device, detail: write.audit.detail)
        }
    }

    /// The chain's links from `after` (exclusive), in order, and the head.
    public func links(_ account: AccountID, after: UInt64? = nil) async throws -> (links: [StoredLink], head: String)? {
        try await writer.read { db in
            guard let head = try String.fetchOne(db, sql: "SELECT head FROM accounts WHERE id = ?", arguments: [account.rawValue]) else {
                return nil
            }
            let rows = try Row.fetchAll(db, sql: """
                SELECT sequence, hash, json FROM links WHERE account = ? AND sequence > ? ORDER BY sequence
                """, arguments: [account.rawValue, after.map { Int64(clamping: $0) } ?? -1])  // a sequence past Int64.max matches nothing
            return (rows.map { StoredLink(sequence: UInt64($0["sequence"] as Int64), hash: $0["hash"], json: $0["json"]) }, head)
        }
    }

    /// Deletes the account and everything of it (links, devices, boxes, wraps,
    /// attachments, recovery slot, audit log) in one transaction.
    public func deleteAccount(_ account: AccountID) async throws {
        try await durableWrite { db in
            try db.execute(sql: "DELETE FROM accounts WHERE id = ?", arguments: [account.rawValue])
            guard db.changesCount > 0 else { throw StoreError.notFound }
        }
    }

    // MARK: Devices

    /// A point read on the request path: synchronous (no hop to another thread;
    /// SQLite answers in microseconds), one statement (atomic by itself, so no
    /// wrapping transaction), a cached prepared statement.
    public func device(_ id: DeviceID) throws -> StoredDevice? {
        try writer.unsafeReentrantRead { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM devices WHERE id = ?"), arguments: [id.rawValue]).map(Self.device)
        }
    }

    public func devices(_ account: AccountID) async throws -> [StoredDevice] {
        try await writer.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM devices WHERE account = ? ORDER BY added", arguments: [account.rawValue]).map(Self.device)
        }
    }

    /// Records the nonce of a signed request of `device`, with the request's
    /// timestamp; false when that device already used it. Rows with timestamps
    /// before `forgetBefore` go first: such requests are refused as stale anyway.
    public func useNonce(_ nonce: String, device: DeviceID, timestamp: Int64, forgetBefore: Int64) async throws -> Bool {
        try await writer.write { db in
            // The index on time makes this a short range delete, not a scan.
            try db.cachedStatement(sql: "DELETE FROM request_nonces WHERE time < ?").execute(arguments: [forgetBefore])
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO request_nonces (device, nonce, time) VALUES (?, ?, ?)")
                .execute(arguments: [device.rawValue, nonce, timestamp])
            return db.changesCount == 1
        }
    }

    /// Records that a device made a signed request (at most once a minute per device).
    public func touch(_ id: DeviceID, at time: Int64) async throws {
        try await writer.write { db in
            try db.execute(sql: "UPDATE devices SET last_seen = ? WHERE id = ? AND (last_seen IS NULL OR last_seen < ?)",
                           arguments: [time, id.rawValue, time - 60])
        }
    }

    // MARK: Boxes, wraps, recovery

    public func boxes(_ account: AccountID, recipient: String?, generation: UInt32?) throws -> [KeyBox] {
        try boxesJSON(account, recipient: recipient, generation: generation).map { try JSONDecoder().decode(KeyBox.self, from: $0) }
    }

    /// The stored JSON of each box, as this server encoded it when the box was
    /// written: the hot read path splices it into the response without decoding.
    public func boxesJSON(_ account: AccountID, recipient: String?, generation: UInt32?) throws -> [Data] {
        try writer.unsafeReentrantRead { db in  // one statement: atomic without a transaction
            var sql = "SELECT json FROM key_boxes WHERE account = ?"
            var arguments: StatementArguments = [account.rawValue]
            if let recipient { sql += " AND recipient = ?"; arguments += [recipient] }
            if let generation { sql += " AND generation = ?"; arguments += [generation] }
            sql += " ORDER BY generation, recipient"
            return try Data.fetchAll(db.cachedStatement(sql: sql), arguments: arguments)
        }
    }

    public func wraps(_ account: AccountID, member: MemberID?) async throws -> [MemberWrap] {
        try await writer.read { db in
            var sql = "SELECT member, member_generation, master_generation, envelope FROM member_wraps WHERE account = ?"
            var arguments: StatementArguments = [account.rawValue]
            if let member { sql += " AND member = ?"; arguments += [member.rawValue] }
            sql += " ORDER BY member, member_generation, master_generation"
            return try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
                MemberWrap(member: MemberID(unchecked: row["member"]), memberGeneration: UInt32(row["member_generation"] as Int64),
                           masterGeneration: UInt32(row["master_generation"] as Int64), envelope: row["envelope"])
            }
        }
    }

    public func recoverySlot(_ account: AccountID) async throws -> RecoverySlot? {
        try await writer.read { db in
            try Data.fetchOne(db, sql: "SELECT json FROM recovery_slots WHERE account = ?", arguments: [account.rawValue])
                .map { try JSONDecoder().decode(RecoverySlot.self, from: $0) }
        }
    }

    // MARK: Attachments

    /// Stores an attachment unless its address is already there for this member.
    ///
    /// - Returns: the stored attachment and whether it already existed.
    public func putAttachment(_ account: AccountID, member: MemberID, address: String, key: Data, data: Data,
                              device: DeviceID) async throws -> AttachmentInfo {
        try await writer.write { db in
            if let row = try Row.fetchOne(db, sql: "SELECT size, created FROM attachments WHERE account = ? AND member = ? AND address = ?",
                                          arguments: [account.rawValue, member.rawValue, address]) {
                return AttachmentInfo(address: address, size: Int(row["size"] as Int64), created: row["created"], existed: true)
            }
            let now = Self.now()
            try db.execute(sql: "INSERT INTO attachments (account, member, address, size, created, key, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
                           arguments: [account.rawValue, member.rawValue, address, data.count, now, key, data])
            try Self.audit(db, account: account, event: "attachment.put", device: device.rawValue, detail: "\(member.rawValue) \(address)")
            return AttachmentInfo(address: address, size: data.count, created: now, existed: false)
        }
    }

    /// The wrapped data key and the sealed content of an attachment.
    public func attachment(_ account: AccountID, member: MemberID, address: String) async throws -> (key: Data, data: Data)? {
        try await writer.read { db in
            try Row.fetchOne(db, sql: "SELECT key, data FROM attachments WHERE account = ? AND member = ? AND address = ?",
                             arguments: [account.rawValue, member.rawValue, address]).map { ($0["key"], $0["data"]) }
        }
    }

    /// The wrapped data key of an attachment alone.
    public func attachmentKey(_ account: AccountID, member: MemberID, address: String) async throws -> Data? {
        try await writer.read { db in
            try Data.fetchOne(db, sql: "SELECT key FROM attachments WHERE account = ? AND member = ? AND address = ?",
                              arguments: [account.rawValue, member.rawValue, address])
        }
    }

    /// Replaces the wrapped data key of an attachment (re-wrapping under a newer member key).
    ///
    /// - Returns: false when there is no such attachment.
    public func replaceAttachmentKey(_ account: AccountID, member: MemberID, address: String, key: Data,
                                     device: DeviceID) async throws -> Bool {
        try await writer.write { db in
            try db.execute(sql: "UPDATE attachments SET key = ? WHERE account = ? AND member = ? AND address = ?",
                           arguments: [key, account.rawValue, member.rawValue, address])
            guard db.changesCount == 1 else { return false }
            try Self.audit(db, account: account, event: "attachment.rewrap", device: device.rawValue, detail: "\(member.rawValue) \(address)")
            return true
        }
    }

    public func attachments(_ account: AccountID, member: MemberID) async throws -> [AttachmentInfo] {
        try await writer.read { db in
            try Row.fetchAll(db, sql: "SELECT address, size, created FROM attachments WHERE account = ? AND member = ? ORDER BY created, address",
                             arguments: [account.rawValue, member.rawValue]).map {
                AttachmentInfo(address: $0["address"], size: Int($0["size"] as Int64), created: $0["created"])
            }
        }
    }

    // MARK: Device-link requests

    /// Stores a new pending request, unless `client` already has `perClient` pending
    /// requests (on any account), or the server has `total` and this account already
    /// has `perAccountOverTotal`: a flood spread over many addresses can fill the
    /// server's share, but not stop an account that is not itself flooded, and rows
    /// stay bounded (`total`, plus a few per account). Counts use an index; long-expired
    /// requests are swept on the way.
    public func createLinkRequest(_ account: AccountID, code: String, expires: Int64, request: LinkRequestCreate,
                                  client: String, perClient: Int, total: Int, perAccountOverTotal: Int) async throws {
        try await writer.write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM accounts WHERE id = ?", arguments: [account.rawValue]) == true else {
                throw StoreError.notFound
            }
            let now = Self.now()
            func pending(_ filter: String, _ arguments: StatementArguments, limit: Int) throws -> Int {
                try Int.fetchOne(db, sql: """
                    SELECT COUNT(*) FROM (SELECT 1 FROM link_requests WHERE \(filter) AND status = 'pending' AND expires >= ? LIMIT ?)
                    """, arguments: arguments + [now, limit]) ?? 0
            }
            guard try pending("client = ?", [client], limit: perClient) < perClient else { throw StoreError.tooManyLinkRequests }
            if try pending("1", [], limit: total) >= total {
                guard try pending("account = ?", [account.rawValue], limit: perAccountOverTotal) < perAccountOverTotal else {
                    throw StoreError.tooManyLinkRequests
                }
            }
            try db.execute(sql: "DELETE FROM link_requests WHERE status IN ('pending', 'approved', 'refused') AND expires < ?", arguments: [now - 86400])
            // No audit row: anyone may ask, and a stranger must not grow an account's log.
            // The approval (a chain link) and the refusal are logged.
            try db.execute(sql: "INSERT INTO link_requests (account, code, status, expires, request, client) VALUES (?, ?, 'pending', ?, ?, ?)",
                           arguments: [account.rawValue, code, expires, try JSONEncoder().encode(request), client])
        }
    }

    /// Records the approver's random value: once per request, while it is pending.
    public func respondToLinkRequest(_ account: AccountID, code: String, nonce: String, by device: DeviceID) async throws {
        try await writer.write { db in
            try db.execute(sql: """
                UPDATE link_requests SET approver_nonce = ?, approver = ?
                WHERE account = ? AND code = ? AND status = 'pending' AND expires >= ? AND approver_nonce IS NULL
                """, arguments: [nonce, device.rawValue, account.rawValue, code, Self.now()])
            guard db.changesCount == 1 else { throw try Self.linkRequestRefusal(db, account, code) }
        }
    }

    /// Records the new device's revealed value: once, after the approver answered.
    /// The caller has checked that it opens the request's commitment.
    public func revealLinkRequest(_ account: AccountID, code: String, nonce: String) async throws {
        try await writer.write { db in
            try db.execute(sql: """
                UPDATE link_requests SET device_nonce = ?
                WHERE account = ? AND code = ? AND status = 'pending' AND expires >= ?
                  AND approver_nonce IS NOT NULL AND device_nonce IS NULL
                """, arguments: [nonce, account.rawValue, code, Self.now()])
            guard db.changesCount == 1 else { throw try Self.linkRequestRefusal(db, account, code) }
        }
    }

    /// Why a step of a link request did not apply.
    private static func linkRequestRefusal(_ db: Database, _ account: AccountID, _ code: String) throws -> StoreError {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM link_requests WHERE account = ? AND code = ?",
                                         arguments: [account.rawValue, code]) else { return .notFound }
        return try linkRequest(row).status == .pending ? .linkRequestOutOfTurn : .linkRequestClosed
    }

    public func linkRequest(_ account: AccountID, code: String) async throws -> LinkRequestInfo? {
        try await writer.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM link_requests WHERE account = ? AND code = ?", arguments: [account.rawValue, code])
                .map(Self.linkRequest)
        }
    }

    public func pendingLinkRequests(_ account: AccountID) async throws -> [LinkRequestInfo] {
        try await writer.read { db in
            // Bounded: strangers can post requests to any account (each address only a few).
            try Row.fetchAll(db, sql: "SELECT * FROM link_requests WHERE account = ? AND status = 'pending' AND expires >= ? ORDER BY expires LIMIT 100",
                             arguments: [account.rawValue, Self.now()]).map(Self.linkRequest)
        }
    }

    /// Refuses a pending request; it cannot be approved afterwards.
    public func refuseLinkRequest(_ account: AccountID, code: String, by device: DeviceID) async throws {
        try await writer.write { db in
            try db.execute(sql: "UPDATE link_requests SET status = 'refused', approver = ? WHERE account = ? AND code = ? AND status = 'pending'",
                           arguments: [device.rawValue, account.rawValue, code])
            guard db.changesCount == 1 else { throw StoreError.linkRequestClosed }
            try Self.audit(db, account: account, event: "link_request.refused", device: device.rawValue, detail: nil)
        }
    }

    private static func linkRequest(_ row: Row) throws -> LinkRequestInfo {
        var status = LinkRequestInfo.Status(rawValue: row["status"]) ?? .expired
        let expires: Int64 = row["expires"]
        if status == .pending, expires < now() { status = .expired }
        return LinkRequestInfo(code: row["code"], status: status, expires: expires,
                               request: try JSONDecoder().decode(LinkRequestCreate.self, from: row["request"] as Data),
                               approverNonce: row["approver_nonce"], deviceNonce: row["device_nonce"],
                               approver: (row["approver"] as String?).map(DeviceID.init(unchecked:)))
    }

    // MARK: Audit

    public func recordAudit(_ account: AccountID, event: String, device: String?, detail: String?) async throws {
        try await writer.write { db in try Self.audit(db, account: account, event: event, device: device, detail: detail) }
    }

    /// Entries per page of the audit log: a client reads on with `after` the last id until a page is empty.
    public static let auditPageSize = 1000

    /// One page of the audit log, oldest first, after entry `after`.
    public func audit(_ account: AccountID, after: Int64 = 0, limit: Int = auditPageSize) async throws -> [AuditEntry] {
        try await writer.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM audit WHERE account = ? AND id > ? ORDER BY id LIMIT ?",
                             arguments: [account.rawValue, after, limit]).map {
                AuditEntry(id: $0["id"], time: $0["time"], event: $0["event"], device: $0["device"], detail: $0["detail"])
            }
        }
    }

    // MARK: Rows

    private static func insert(_ link: StoredLink, account: AccountID, _ db: Database) throws {
        try db.execute(sql: "INSERT INTO links (account, sequence, hash, json) VALUES (?, ?, ?, ?)",
                       arguments: [account.rawValue, link.sequence, link.hash, link.json])
    }

    private static func insert(_ device: StoredDevice, _ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO devices (id, account, name, signing_key, box_key, added, revoked) VALUES (?, ?, ?, ?, ?, ?, ?)
            """, arguments: [device.id.rawValue, device.account.rawValue, device.name, Data(device.signingKey),
                             Data(device.boxKey), device.added, device.revoked])
    }

    private static func insert(_ box: KeyBox, account: AccountID, _ db: Database) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO key_boxes (account, generation, recipient, json) VALUES (?, ?, ?, ?)",
                       arguments: [account.rawValue, box.generation, box.recipient, try JSONEncoder().encode(box)])
    }

    private static func upsert(_ slot: RecoverySlot, account: AccountID, _ db: Database) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO recovery_slots (account, json) VALUES (?, ?)",
                       arguments: [account.rawValue, try JSONEncoder().encode(slot)])
    }

    private static func audit(_ db: Database, account: AccountID, event: String, device: String?, detail: String?) throws {
        try db.execute(sql: "INSERT INTO audit (account, time, event, device, detail) VALUES (?, ?, ?, ?, ?)",
                       arguments: [account.rawValue, now(), event, device, detail])
    }

    private static func device(_ row: Row) -> StoredDevice {
        StoredDevice(id: DeviceID(unchecked: row["id"]), account: AccountID(unchecked: row["account"]), name: row["name"],
                     signingKey: [UInt8](row["signing_key"] as Data), boxKey: [UInt8](row["box_key"] as Data),
                     added: UInt64(row["added"] as Int64), revoked: (row["revoked"] as Int64?).map(UInt64.init),
                     lastSeen: row["last_seen"])
    }
}
