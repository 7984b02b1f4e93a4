import Foundation
import GRDB
import KeyVaultModel

extension KeyVaultDatabase {
    // MARK: Accounts and the chain

    /// Creates an account from its genesis link, first device and boxes.
    ///
    /// - Throws: `StoreError.accountExists` when the account (or device) is already there.
    package func createAccount(_ account: AccountID, genesis: StoredLink, device: StoredDevice, boxes: [KeyBox],
                              recovery: RecoverySlot?) async throws {
        try await durableWrite { db in
            try Self.createAccount(account, genesis: genesis, device: device, boxes: boxes, recovery: recovery, hashes: [genesis.hash], db)
        }
    }

    /// `hashes`: of every link the account is created with (the genesis, then an import's).
    private static func createAccount(_ account: AccountID, genesis: StoredLink, device: StoredDevice, boxes: [KeyBox],
                                      recovery: RecoverySlot?, hashes: [String], importedBy: DeviceID? = nil, _ db: Database) throws {
        if try Bool.fetchOne(db, sql: "SELECT 1 FROM accounts WHERE id = ?", arguments: [account.rawValue]) == true
            || Bool.fetchOne(db, sql: "SELECT 1 FROM devices WHERE id = ?", arguments: [device.id.rawValue]) == true {
            throw StoreError.accountExists
        }
        if let row = try Row.fetchOne(db, sql: "SELECT sequence, head, device FROM deleted_accounts WHERE id = ?", arguments: [account.rawValue]) {
            try StoreError.checkFoundingAgain(deletedAt: UInt64(row["sequence"] as Int64), head: row["head"], deleter: row["device"],
                                              hashes: hashes, importedBy: importedBy)
        }
        try db.execute(sql: "INSERT INTO accounts (id, created, head, sequence) VALUES (?, ?, ?, 0)",
                       arguments: [account.rawValue, Self.now(), genesis.hash])
        try Self.insert(genesis, account: account, db)
        try Self.insert(device, db)
        for box in boxes { try Self.insert(box, account: account, db) }
        if let recovery { try Self.upsert(recovery, account: account, db) }
        try Self.audit(db, account: account, event: .link(.genesis), device: device.id.rawValue, sequence: 0, detail: nil)
    }

    /// Appends one link and everything that goes with it, if the head is still the expected one.
    ///
    /// - Throws: `StoreError.staleChain` (nothing written) when the head moved; `.notFound`;
    ///   `.deviceExists` when a device the link adds is already in an account;
    ///   `.linkRequestClosed` when the link request it approves is no longer pending;
    ///   `.usedBefore` when the value it spends (``ChainWrite/spends``) was used before.
    package func append(_ account: AccountID, _ write: ChainWrite) async throws {
        try await durableWrite { db in try Self.append(account, write, db) }
    }

    /// An account brought from another server: created from its genesis when `create`
    /// is given, then each write appended, in one transaction (nothing of it is stored
    /// unless all of it is).
    package func importAccount(_ account: AccountID, create: AccountGenesis?, writes: [ChainWrite]) async throws {
        try await durableWrite { db in
            if let create {
                try Self.createAccount(account, genesis: create.genesis, device: create.device, boxes: create.boxes, recovery: nil,
                                       hashes: [create.genesis.hash] + writes.map(\.link.hash), importedBy: create.importedBy, db)
            }
            for write in writes { try Self.append(account, write, db) }
        }
    }

    private static func append(_ account: AccountID, _ write: ChainWrite, _ db: Database) throws {
        guard let head = try String.fetchOne(db, sql: "SELECT head FROM accounts WHERE id = ?", arguments: [account.rawValue]) else {
            throw StoreError.notFound
        }
        guard head == write.expectedHead else { throw StoreError.staleChain(currentHead: head) }
        if let (code, approver) = write.approvesLinkRequest {
            try db.execute(sql: """
                UPDATE link_requests SET status = ?
                WHERE account = ? AND code = ? AND status = ? AND expires >= ? AND approver = ?
                  AND device_nonce IS NOT NULL
                """, arguments: [LinkRequestStatus.approved, account.rawValue, code, LinkRequestStatus.pending, Self.now(),
                                 approver.rawValue])
            guard db.changesCount == 1 else { throw StoreError.linkRequestClosed }
        }
        if let use = write.spends, try !spend(use, db) { throw StoreError.usedBefore }
        try db.execute(sql: "UPDATE accounts SET head = ?, sequence = ? WHERE id = ?",
                       arguments: [write.link.hash, write.link.sequence, account.rawValue])
        try Self.insert(write.link, account: account, db)
        for device in write.newDevices {
            // Checked, not left to the unique key: a constraint error would be a 500.
            guard try !Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM devices WHERE id = ?)", arguments: [device.id.rawValue])! else {
                throw StoreError.deviceExists
            }
            try Self.insert(device, db)
        }
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
        try Self.insertSharing(write, account: account, db)
        for member in write.removedMembers {
            // Chunks go with their uploads (foreign key); nothing of the member is left.
            // Uploads before attachments, in PostgreSQL's order (there, a completion locks them so).
            for table in ["member_wraps", "attachment_uploads", "attachments", "share_boxes"] {
                try db.execute(sql: "DELETE FROM \(table) WHERE account = ? AND member = ?", arguments: [account.rawValue, member.rawValue])
            }
        }
        for (member, grantee) in write.endedGrants {
            try db.execute(sql: "DELETE FROM attachment_uploads WHERE account = ? AND member = ? AND started_by = ? AND complete = 0",
                           arguments: [account.rawValue, member.rawValue, grantee.rawValue])
        }
        if let generation = write.dropsKeysBefore {
            try db.execute(sql: "DELETE FROM key_boxes WHERE account = ? AND generation < ?", arguments: [account.rawValue, generation])
            try db.execute(sql: "DELETE FROM identity_wraps WHERE account = ?", arguments: [account.rawValue])
            try db.execute(sql: "DELETE FROM share_boxes WHERE account = ?", arguments: [account.rawValue])
            // Exchanges in flight carry what the reset ended: the retired identity, a device to add.
            try db.execute(sql: "DELETE FROM contact_requests WHERE from_account = ? OR to_account = ?", arguments: [account.rawValue, account.rawValue])
            try db.execute(sql: "DELETE FROM link_requests WHERE account = ?", arguments: [account.rawValue])
        }
        if let recovery = write.recovery { try Self.upsert(recovery, account: account, db) }
        try Self.audit(db, account: account, event: write.audit.event, device: write.audit.device, sequence: write.link.sequence,
                       detail: nil)
    }

    /// The chain's links from `after` (exclusive), in order, and the head.
    package func links(_ account: AccountID, after: UInt64?) async throws -> (links: [StoredLink], head: String)? {
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
    /// attachments, recovery slot, audit log, identity wraps, the share boxes it stored,
    /// contact requests from or to it: by their foreign keys) in one transaction, and
    /// the share boxes naming it as grantee (which have none: a grantee may be deleted
    /// while the sharer's grant stands).
    package func deleteAccount(_ account: AccountID, expectedHead: String?, by device: DeviceID?) async throws {
        try await durableWrite { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT sequence, head FROM accounts WHERE id = ?", arguments: [account.rawValue]) else {
                throw StoreError.notFound
            }
            let sequence: Int64 = row["sequence"], head: String = row["head"]
            if let expectedHead, head != expectedHead { throw StoreError.staleChain(currentHead: head) }
            try db.execute(sql: "DELETE FROM accounts WHERE id = ?", arguments: [account.rawValue])
            // Its uploads in flight through a sharer's relay, in the sharer's account (before the
            // share boxes naming it: the order a sharer's reset takes them in).
            try db.execute(sql: "DELETE FROM attachment_uploads WHERE started_by = ? AND complete = 0", arguments: [account.rawValue])
            try db.execute(sql: "DELETE FROM share_boxes WHERE grantee = ?", arguments: [account.rawValue])
            try db.execute(sql: "INSERT OR REPLACE INTO deleted_accounts (id, sequence, head, device, deleted) VALUES (?, ?, ?, ?, ?)",
                           arguments: [account.rawValue, sequence, head, device?.rawValue, Self.now()])
        }
    }

    // MARK: Boxes, wraps, recovery

    /// The stored JSON of each box, as this server encoded it when the box was
    /// written: the hot read path splices it into the response without decoding.
    package func boxesJSON(_ account: AccountID, recipient: String?, generation: UInt32?) throws -> [Data] {
        try pointReader.unsafeReentrantRead { db in  // one statement: atomic without a transaction
            var sql = "SELECT json FROM key_boxes WHERE account = ?"
            var arguments: StatementArguments = [account.rawValue]
            if let recipient { sql += " AND recipient = ?"; arguments += [recipient] }
            if let generation { sql += " AND generation = ?"; arguments += [generation] }
            sql += " ORDER BY generation, recipient"
            return try Data.fetchAll(db.cachedStatement(sql: sql), arguments: arguments)
        }
    }

    package func wraps(_ account: AccountID, member: MemberID?) async throws -> [MemberWrap] {
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

    package func recoverySlot(_ account: AccountID) async throws -> RecoverySlot? {
        try await writer.read { db in
            try Data.fetchOne(db, sql: "SELECT json FROM recovery_slots WHERE account = ?", arguments: [account.rawValue])
                .map { try JSONDecoder().decode(RecoverySlot.self, from: $0) }
        }
    }

    private static func insert(_ link: StoredLink, account: AccountID, _ db: Database) throws {
        try db.execute(sql: "INSERT INTO links (account, sequence, hash, json) VALUES (?, ?, ?, ?)",
                       arguments: [account.rawValue, link.sequence, link.hash, link.json])
    }
    private static func insert(_ box: KeyBox, account: AccountID, _ db: Database) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO key_boxes (account, generation, recipient, json) VALUES (?, ?, ?, ?)",
                       arguments: [account.rawValue, box.generation, box.recipient, try JSONEncoder().encode(box)])
    }
    private static func upsert(_ slot: RecoverySlot, account: AccountID, _ db: Database) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO recovery_slots (account, json) VALUES (?, ?)",
                       arguments: [account.rawValue, try JSONEncoder().encode(slot)])
    }
}
