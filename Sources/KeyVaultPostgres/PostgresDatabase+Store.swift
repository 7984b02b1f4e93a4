import Foundation
import Logging
import PostgresNIO
import KeyVaultModel
import KeyVaultStore

// The methods of `KeyVaultRepository`, each one statement or one transaction. Under
// READ COMMITTED a conditional UPDATE re-checks its condition on the row as committed
// by whoever held it first, which is what makes the compare-and-swaps hold.
extension PostgresKeyVaultDatabase {
    // MARK: Accounts and the chain

    package func createAccount(_ account: AccountID, genesis: StoredLink, device: StoredDevice, boxes: [KeyBox],
                              recovery: RecoverySlot?) async throws {
        try await durableTransaction { db in
            try await createAccount(account, genesis: genesis, device: device, boxes: boxes, recovery: recovery, hashes: [genesis.hash], db)
            try await insertAudit(db, account: account, event: .link(.genesis), device: device.id.rawValue, sequence: 0, detail: nil)
        }
    }

    /// `hashes`: of every link the account is created with (the genesis, then an import's).
    /// Its audit row is the caller's, last (``insertAudit(_:account:event:device:sequence:detail:)``).
    private func createAccount(_ account: AccountID, genesis: StoredLink, device: StoredDevice, boxes: [KeyBox],
                               recovery: RecoverySlot?, hashes: [String], importedBy: DeviceID? = nil, _ db: LeasedConnection) async throws {
        // ON CONFLICT DO NOTHING waits for a concurrent insert of the same key to commit
        // or roll back, so of two creations exactly one inserts.
        guard try await db.query("""
            INSERT INTO accounts (id, created, head, sequence) VALUES (\(account.rawValue), \(KeyVaultDatabase.now()), \(genesis.hash), 0)
            ON CONFLICT (id) DO NOTHING RETURNING 1
            """, logger: logger).collect().count == 1 else { throw StoreError.accountExists }
        if let row = try await db.query("SELECT sequence, head, device FROM deleted_accounts WHERE id = \(account.rawValue)", logger: logger).collect().first {
            let (sequence, head, deleter) = try row.decode((Int64, String, String?).self)
            try StoreError.checkFoundingAgain(deletedAt: UInt64(sequence), head: head, deleter: deleter, hashes: hashes, importedBy: importedBy)
        }
        guard try await insert(device, db, onConflictNothing: true) else { throw StoreError.accountExists }
        try await insert(genesis, account: account, db)
        for box in boxes { try await insert(box, account: account, db) }
        if let recovery { try await upsert(recovery, account: account, db) }
    }

    /// Durable as every chain write, by the swap's own statement (``append(_:_:_:)``).
    package func append(_ account: AccountID, _ write: ChainWrite) async throws {
        // A member's removal, a reset or a grant's end deletes what it ended (attachments, a
        // grantee's unfinished uploads): it may take long.
        let heavy = !write.removedMembers.isEmpty || write.dropsKeysBefore != nil || !write.endedGrants.isEmpty
        try await transaction(deadline: heavy ? WatchedPool.longDeadline : nil) { db in
            try await append(account, write, db)
            try await insertAudit(db, account: account, of: write)
        }
    }

    package func importAccount(_ account: AccountID, create: AccountGenesis?, writes: [ChainWrite]) async throws {
        try await durableTransaction(deadline: WatchedPool.longDeadline) { db in
            if let create {
                try await createAccount(account, genesis: create.genesis, device: create.device, boxes: create.boxes, recovery: nil,
                                        hashes: [create.genesis.hash] + writes.map(\.link.hash), importedBy: create.importedBy, db)
            }
            for write in writes { try await append(account, write, db) }
            // The audit rows last, in the chain's order: the audit lock after every row lock.
            if let create {
                try await insertAudit(db, account: account, event: .link(.genesis), device: create.device.id.rawValue, sequence: 0, detail: nil)
            }
            for write in writes { try await insertAudit(db, account: account, of: write) }
        }
    }

    private func append(_ account: AccountID, _ write: ChainWrite, _ db: LeasedConnection) async throws {
        // The compare-and-swap, the link and the durable commit: one prepared statement (``SwapLink``).
        let link = write.link
        var swapped = false
        for try await _ in try await db.execute(SwapLink(account: account, link: link, expectedHead: write.expectedHead), logger: logger) {
            swapped = true
        }
        guard swapped else {
            let rows = try await db.query("SELECT head FROM accounts WHERE id = \(account.rawValue)", logger: logger).collect()
            guard let row = rows.first else { throw StoreError.notFound }
            throw StoreError.staleChain(currentHead: try row.decode(String.self))
        }
        if let (code, approver) = write.approvesLinkRequest {
            guard try await db.query("""
                UPDATE link_requests SET status = \(LinkRequestStatus.approved.rawValue)
                WHERE account = \(account.rawValue) AND code = \(code) AND status = \(LinkRequestStatus.pending.rawValue)
                  AND expires >= \(KeyVaultDatabase.now()) AND approver = \(approver.rawValue) AND device_nonce IS NOT NULL
                RETURNING 1
                """, logger: logger).collect().count == 1 else { throw StoreError.linkRequestClosed }
        }
        if let use = write.spends, try await !spend(use, db) { throw StoreError.usedBefore }
        for device in write.newDevices {
            // The transaction rolls back: nothing of the link is written.
            guard try await insert(device, db, onConflictNothing: true) else { throw StoreError.deviceExists }
        }
        for id in write.revokedDevices {
            try await db.query("""
                UPDATE devices SET revoked = \(Int64(write.link.sequence)) WHERE id = \(id.rawValue) AND account = \(account.rawValue)
                """, logger: logger)
        }
        for box in write.boxes { try await insert(box, account: account, db) }
        for wrap in write.wraps {
            try await db.query("""
                INSERT INTO member_wraps (account, member, member_generation, master_generation, envelope)
                VALUES (\(account.rawValue), \(wrap.member.rawValue), \(Int64(wrap.memberGeneration)), \(Int64(wrap.masterGeneration)),
                        \(wrap.envelope))
                ON CONFLICT (account, member, member_generation, master_generation) DO UPDATE SET envelope = EXCLUDED.envelope
                """, logger: logger)
        }
        try await insertSharing(write, account: account, db)
        for member in write.removedMembers {
            // Chunks go with their uploads (foreign key); nothing of the member is left.
            // Uploads before attachments: a completion locks them in that order.
            for table in ["member_wraps", "attachment_uploads", "attachments", "share_boxes"] {
                _ = try await db.query("DELETE FROM \(unescaped: table) WHERE account = \(account.rawValue) AND member = \(member.rawValue)",
                                   logger: logger).collect()
            }
        }
        for (member, grantee) in write.endedGrants {
            _ = try await db.query("""
                DELETE FROM attachment_uploads
                WHERE account = \(account.rawValue) AND member = \(member.rawValue) AND started_by = \(grantee.rawValue) AND NOT complete
                """, logger: logger).collect()
        }
        if let generation = write.dropsKeysBefore {
            _ = try await db.query("DELETE FROM key_boxes WHERE account = \(account.rawValue) AND generation < \(Int64(generation))", logger: logger).collect()
            _ = try await db.query("DELETE FROM identity_wraps WHERE account = \(account.rawValue)", logger: logger).collect()
            _ = try await db.query("DELETE FROM share_boxes WHERE account = \(account.rawValue)", logger: logger).collect()
            // Exchanges in flight carry what the reset ended: the retired identity, a device to add.
            _ = try await db.query("DELETE FROM contact_requests WHERE from_account = \(account.rawValue) OR to_account = \(account.rawValue)",
                               logger: logger).collect()
            _ = try await db.query("DELETE FROM link_requests WHERE account = \(account.rawValue)", logger: logger).collect()
        }
        if let recovery = write.recovery { try await upsert(recovery, account: account, db) }
        // Its audit row is the caller's, last.
    }

    /// An append's compare-and-swap: the row lock makes a second writer wait for the
    /// first, then find the head moved; (account, sequence) is also the links' primary
    /// key. In the same statement, one round trip, and only if the swap happened: the link,
    /// and the commit made durable (`synchronous_commit` on for this transaction, as
    /// ``durableTransaction(_:)`` sets it: the WHERE evaluates it for the one row). The
    /// link's audit row comes last in the append, as in every write: its lock after the
    /// rows the write touches (``insertAudit(_:account:event:device:sequence:detail:)``).
    /// Prepared, as the request path's reads: PostgreSQL plans it once per connection.
    struct SwapLink: PostgresPreparedStatement {
        static let name = "keyvault_swap_link"
        static let sql = """
            WITH swapped AS (
                UPDATE accounts SET head = $2, sequence = $3 WHERE id = $1 AND head = $4 RETURNING 1)
            INSERT INTO links (account, sequence, hash, json)
            SELECT $1, $3, $2, $5 FROM swapped WHERE set_config('synchronous_commit', 'on', true) = 'on'
            RETURNING true
            """
        typealias Row = Bool
        let account: AccountID, link: StoredLink, expectedHead: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(account.rawValue)
            bindings.append(link.hash)
            bindings.append(Int64(link.sequence))
            bindings.append(expectedHead)
            try bindings.append(link.json)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Bool.self) }
    }

    package func links(_ account: AccountID, after: UInt64?) async throws -> (links: [StoredLink], head: String)? {
        var head: String?
        var links: [StoredLink] = []
        for try await (rowHead, sequence, hash, json)
            in try await client.execute(LinksAfter(account: account.rawValue, after: after.map { Int64(clamping: $0) } ?? -1), logger: logger) {
            head = rowHead
            if let sequence, let hash, let json { links.append(StoredLink(sequence: UInt64(sequence), hash: hash, json: json)) }
        }
        return head.map { (links, $0) }
    }

    /// The head and the links after one, from one snapshot (one statement): what a
    /// replica's chain cache reads, prepared.
    struct LinksAfter: PostgresPreparedStatement {
        static let name = "keyvault_links_after"
        static let sql = """
            SELECT a.head, l.sequence, l.hash, l.json FROM accounts a
            LEFT JOIN links l ON l.account = a.id AND l.sequence > $2
            WHERE a.id = $1 ORDER BY l.sequence
            """
        typealias Row = (String, Int64?, String?, Data?)
        let account: String, after: Int64

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(account)
            bindings.append(after)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// Everything of the account goes by its foreign keys, but the share boxes naming
    /// it as grantee, which have none (a grantee may be deleted while the grant stands).
    package func deleteAccount(_ account: AccountID, expectedHead: String?, by device: DeviceID?) async throws {
        try await durableTransaction(deadline: WatchedPool.longDeadline) { db in
            // Locked to the end of the transaction: an append waits, then finds no account.
            let rows = try await db.query("SELECT sequence, head FROM accounts WHERE id = \(account.rawValue) FOR UPDATE", logger: logger).collect()
            guard let row = rows.first else { throw StoreError.notFound }
            let (sequence, head) = try row.decode((Int64, String).self)
            if let expectedHead, head != expectedHead { throw StoreError.staleChain(currentHead: head) }
            try await db.query("DELETE FROM accounts WHERE id = \(account.rawValue)", logger: logger)
            // Its uploads in flight through a sharer's relay, in the sharer's account (before the
            // share boxes naming it: the order a sharer's reset or member removal takes them in).
            try await db.query("DELETE FROM attachment_uploads WHERE started_by = \(account.rawValue) AND NOT complete", logger: logger)
            try await db.query("DELETE FROM share_boxes WHERE grantee = \(account.rawValue)", logger: logger)
            try await db.query("""
                INSERT INTO deleted_accounts (id, sequence, head, device, deleted)
                VALUES (\(account.rawValue), \(sequence), \(head), \(device?.rawValue), \(KeyVaultDatabase.now()))
                ON CONFLICT (id) DO UPDATE SET sequence = EXCLUDED.sequence, head = EXCLUDED.head, device = EXCLUDED.device, deleted = EXCLUDED.deleted
                """, logger: logger)
        }
    }

    // MARK: Boxes, wraps, recovery

    package func boxesJSON(_ account: AccountID, recipient: String?, generation: UInt32?) async throws -> [Data] {
        if let recipient, generation == nil {  // a device's (or recovery's) read of its boxes, batched
            return try await boxBatches.use(.init(account: account.rawValue, recipient: recipient)).boxes
        }
        // NULL parameters match everything: one statement whatever the filters.
        let rows = try await client.query("""
            SELECT json FROM key_boxes WHERE account = \(account.rawValue)
              AND (\(recipient)::TEXT IS NULL OR recipient = \(recipient))
              AND (\(generation.map(Int64.init))::BIGINT IS NULL OR generation = \(generation.map(Int64.init)))
            ORDER BY generation, recipient
            """, logger: logger)
        return try await collect(rows, as: Data.self)
    }

    package func wraps(_ account: AccountID, member: MemberID?) async throws -> [MemberWrap] {
        let rows = try await client.query("""
            SELECT member, member_generation, master_generation, envelope FROM member_wraps
            WHERE account = \(account.rawValue) AND (\(member?.rawValue)::TEXT IS NULL OR member = \(member?.rawValue))
            ORDER BY member, member_generation, master_generation
            """, logger: logger)
        var wraps: [MemberWrap] = []
        for try await (member, memberGeneration, masterGeneration, envelope) in rows.decode((String, Int64, Int64, String).self) {
            wraps.append(MemberWrap(member: MemberID(unchecked: member), memberGeneration: UInt32(memberGeneration),
                                    masterGeneration: UInt32(masterGeneration), envelope: envelope))
        }
        return wraps
    }

    package func recoverySlot(_ account: AccountID) async throws -> RecoverySlot? {
        let rows = try await client.query("SELECT json FROM recovery_slots WHERE account = \(account.rawValue)", logger: logger)
        return try await collect(rows, as: Data.self).first.map { try JSONDecoder().decode(RecoverySlot.self, from: $0) }
    }

    // MARK: Devices and nonces

    package func device(_ id: DeviceID) async throws -> StoredDevice? {
        for try await row in try await client.execute(DeviceByID(id: id.rawValue), logger: logger) { return Self.device(row) }
        return nil
    }

    /// A device by its id: the request path's read when the cache has no copy, prepared.
    struct DeviceByID: PostgresPreparedStatement {
        static let name = "keyvault_device_by_id"
        static let sql = PostgresKeyVaultDatabase.deviceColumns + " WHERE id = $1"
        typealias Row = DeviceRow
        let id: String

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(id)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    package func devices(_ account: AccountID) async throws -> [StoredDevice] {
        try await devices(client.query("\(unescaped: Self.deviceColumns) WHERE account = \(account.rawValue) ORDER BY added",
                                       logger: logger))
    }

    package func useNonce(_ nonce: String, device: DeviceID, timestamp: Int64, forgetBefore: Int64) async throws -> Bool {
        try await sweepNonces(before: forgetBefore)
        return try await client.query("""
            INSERT INTO request_nonces (device, nonce, time) VALUES (\(device.rawValue), \(nonce), \(timestamp))
            ON CONFLICT (device, nonce) DO NOTHING RETURNING 1
            """, logger: logger).collect().count == 1
    }

    /// Expired nonces go once a minute per process, not per request.
    private func sweepNonces(before forgetBefore: Int64) async throws {
        if sweeps.due("request_nonces", at: forgetBefore) {
            try await client.query("DELETE FROM request_nonces WHERE time < \(forgetBefore)", logger: logger)
        }
    }

    /// One statement, one round trip, shared with the requests that arrive together
    /// (``NonceBatches``): the nonce's insert and the device's row, read in the statement's
    /// snapshot, so after everything committed before the statement began (a revocation
    /// through another replica included). The primary key decides across replicas: one
    /// insert of a (device, nonce) wins. Committed without waiting for the WAL flush
    /// (`synchronous_commit = off`, as every write outside the chain): a power cut may forget
    /// the nonces of the last moments, as SQLite's `NORMAL` may. No device when there is no
    /// such device (then the nonce is not reported fresh). The touch goes in the same statement.
    package func useNonceReadingDevice(_ nonce: String, device id: DeviceID, timestamp: Int64, touchingAt now: Int64,
                                       forgetBefore: Int64) async throws -> (fresh: Bool, device: StoredDevice?, head: HeadSeen?) {
        try await sweepNonces(before: forgetBefore)
        return try await nonceBatches.use(.init(device: id.rawValue, nonce: nonce, time: timestamp, now: now))
    }

    /// A device's read of its own boxes on the request path: from this replica's copy when
    /// the copy was read at the head this request's nonce statement saw (``BoxCopies``),
    /// else from the store, in the batch's statement, which reads the head too.
    package func deviceBoxesJSON(_ account: AccountID, recipient: String, seen: HeadSeen?) async throws -> [Data] {
        if let seen, let boxes = boxCopies.boxes(account.rawValue, recipient, at: seen) { return boxes }
        let read = try await boxBatches.use(.init(account: account.rawValue, recipient: recipient))
        if let head = read.head { boxCopies.keep(read.boxes, account.rawValue, recipient, at: head) }
        return read.boxes
    }

    /// Reads of one recipient's key boxes in one account (a device's own, or `recovery`'s:
    /// ``boxesJSON(_:recipient:generation:)``), the request path's other statement, for a batch
    /// (``StatementBatches``), prepared: PostgreSQL parses and plans it once per connection.
    /// Each box comes with the position of the read it answers, and the account's head in the
    /// same snapshot (no head: no such account). The account is in the key and the join:
    /// `recovery` is a recipient in every account.
    struct RecipientBoxes: PostgresPreparedStatement {
        struct Request: Sendable {
            let account: String, recipient: String
        }
        typealias Answer = (boxes: [Data], head: HeadSeen?)

        /// The same read twice in one batch gets the same boxes.
        static func batches(client: WatchedPool, logger: Logger) -> StatementBatches<Request, [String], Answer> {
            StatementBatches(key: { [$0.account, $0.recipient] }, repeated: { $0 }) { requests in
                var answers = [Answer](repeating: ([], nil), count: requests.count)
                for try await (position, sequence, head, box) in try await client.execute(RecipientBoxes(requests), logger: logger) {
                    let index = try StatementBatches<Request, [String], Answer>.index(position, among: requests.count)
                    answers[index].head = HeadSeen(sequence, head)
                    if let box { answers[index].boxes.append(box) }
                }
                return answers
            }
        }
        static let name = "keyvault_recipient_boxes_at_head"
        static let sql = """
            SELECT input.position, a.sequence, a.head, k.json
            FROM unnest($1::TEXT[], $2::TEXT[]) WITH ORDINALITY AS input(account, recipient, position)
            LEFT JOIN accounts a ON a.id = input.account
            LEFT JOIN key_boxes k ON k.account = input.account AND k.recipient = input.recipient
            ORDER BY input.position, k.generation
            """
        typealias Row = (Int64, Int64?, String?, Data?)
        let requests: [Request]
        init(_ requests: [Request]) { self.requests = requests }

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(requests.map(\.account))
            bindings.append(requests.map(\.recipient))
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// Synced, as the chain (recovery only, so rare): a token a crash forgot could be used again.
    package func useOnce(_ value: String, kind: String, expires: Int64, forgetBefore: Int64) async throws -> Bool {
        try await durableTransaction { db in
            try await db.query("DELETE FROM used_once WHERE expires < \(forgetBefore)", logger: logger)
            return try await spend(SingleUse(kind: kind, value: value, expires: expires), db)
        }
    }

    /// Records `use` as used, in `db`'s transaction: false if it already was. (What expired
    /// is forgotten by ``useOnce(_:kind:expires:forgetBefore:)``, not here: a chain write
    /// that spends one holds its account's row meanwhile, and waits on no other deletion.)
    private func spend(_ use: SingleUse, _ db: LeasedConnection) async throws -> Bool {
        // The primary key decides across replicas: one insert of a (kind, value) wins.
        return try await db.query("""
            INSERT INTO used_once (kind, value, expires) VALUES (\(use.kind), \(use.value), \(use.expires))
            ON CONFLICT (kind, value) DO NOTHING RETURNING 1
            """, logger: logger).collect().count == 1
    }

    /// Synced, as the chain: failures a crash forgot would be recovery guesses given back.
    package func recordFailure(_ keys: [String], at time: Int64, since: Int64, limit: Int, cap: Int) async throws -> (counted: Bool, before: FailureCounts) {
        try await durableTransaction { db in
            // A lock per key (taken in one order, so two transactions never wait on each
            // other crosswise) makes the count and the insert one step across replicas.
            for key in keys.sorted() {
                _ = try await db.query("SELECT pg_advisory_xact_lock(hashtextextended(\(key), \(LockKey.failures)))", logger: logger).collect()
            }
            try await db.query("DELETE FROM failures WHERE time < \(since)", logger: logger)
            var counts = FailureCounts(total: 0, byKey: [:])
            for key in keys {
                let rows = try await db.query("""
                    SELECT COUNT(*), MIN(time) FROM failures WHERE key = \(key) AND time >= \(since)
                    """, logger: logger).decode((Int64, Int64?).self)
                for try await (count, oldest) in rows where count > 0 {
                    if let oldest { counts.byKey[key] = .init(count: Int(count), oldest: oldest) }
                }
            }
            if counts.byKey.values.contains(where: { $0.count >= limit }) { return (false, counts) }
            for try await total in try await db.query("""
                SELECT COUNT(*) FROM (SELECT 1 FROM failures WHERE time >= \(since) LIMIT \(cap)) AS recent
                """, logger: logger).decode(Int64.self) {
                counts.total = Int(total)
            }
            if counts.total >= cap { return (false, counts) }
            for key in keys { try await db.query("INSERT INTO failures (key, time) VALUES (\(key), \(time))", logger: logger) }
            return (true, counts)
        }
    }

    package func touch(_ id: DeviceID, at time: Int64) async throws {
        try await client.query("""
            UPDATE devices SET last_seen = \(time) WHERE id = \(id.rawValue) AND (last_seen IS NULL OR last_seen < \(time - StoredDevice.seenInterval))
            """, logger: logger)
    }

    // MARK: Device-link requests

    package func createLinkRequest(_ account: AccountID, code: String, expires: Int64, request: LinkRequestCreate,
                                  client address: String, perClient: Int, total: Int, perAccountOverTotal: Int) async throws {
        let requestJSON = try JSONEncoder().encode(request)
        try await transaction { db in
            // The limits count rows that other replicas insert too: the counts and the insert
            // run under one server-wide lock (creating a request is rare; the lock is short).
            _ = try await db.query("SELECT pg_advisory_xact_lock(\(LockKey.linkRequests))", logger: logger).collect()
            guard try await db.query("SELECT 1 FROM accounts WHERE id = \(account.rawValue)", logger: logger).collect().count == 1 else {
                throw StoreError.notFound
            }
            let now = KeyVaultDatabase.now(), pending = LinkRequestStatus.pending.rawValue
            func count(client: String? = nil, account: String? = nil, limit: Int) async throws -> Int {
                let rows = try await db.query("""
                    SELECT COUNT(*) FROM (SELECT 1 FROM link_requests WHERE status = \(pending) AND expires >= \(now)
                      AND (\(client)::TEXT IS NULL OR client = \(client)) AND (\(account)::TEXT IS NULL OR account = \(account))
                      LIMIT \(Int64(limit))) AS pending
                    """, logger: logger).collect()
                return Int(try rows.first?.decode(Int64.self) ?? 0)
            }
            guard try await count(client: address, limit: perClient) < perClient else { throw StoreError.tooManyLinkRequests }
            if try await count(limit: total) >= total {
                guard try await count(account: account.rawValue, limit: perAccountOverTotal) < perAccountOverTotal else {
                    throw StoreError.tooManyLinkRequests
                }
            }
            try await db.query("""
                DELETE FROM link_requests WHERE status IN (\(pending), \(LinkRequestStatus.approved.rawValue), \(LinkRequestStatus.refused.rawValue))
                  AND expires < \(now - 86400)
                """, logger: logger)
            // No audit row: anyone may ask, and a stranger must not grow an account's log.
            try await db.query("""
                INSERT INTO link_requests (account, code, status, expires, request, client)
                VALUES (\(account.rawValue), \(code), \(pending), \(expires), \(requestJSON), \(address))
                """, logger: logger)
        }
    }

    package func respondToLinkRequest(_ account: AccountID, code: String, nonce: String, by device: DeviceID) async throws {
        guard try await client.query("""
            UPDATE link_requests SET approver_nonce = \(nonce), approver = \(device.rawValue)
            WHERE account = \(account.rawValue) AND code = \(code) AND status = \(LinkRequestStatus.pending.rawValue)
              AND expires >= \(KeyVaultDatabase.now()) AND approver_nonce IS NULL
            RETURNING 1
            """, logger: logger).collect().count == 1 else { throw try await linkRequestRefusal(account, code) }
    }

    package func revealLinkRequest(_ account: AccountID, code: String, nonce: String) async throws {
        guard try await client.query("""
            UPDATE link_requests SET device_nonce = \(nonce)
            WHERE account = \(account.rawValue) AND code = \(code) AND status = \(LinkRequestStatus.pending.rawValue)
              AND expires >= \(KeyVaultDatabase.now()) AND approver_nonce IS NOT NULL AND device_nonce IS NULL
            RETURNING 1
            """, logger: logger).collect().count == 1 else { throw try await linkRequestRefusal(account, code) }
    }

    /// Why a step of a link request did not apply.
    private func linkRequestRefusal(_ account: AccountID, _ code: String) async throws -> StoreError {
        guard let info = try await linkRequest(account, code: code) else { return .notFound }
        return info.status == .pending ? .linkRequestOutOfTurn : .linkRequestClosed
    }

    package func linkRequest(_ account: AccountID, code: String) async throws -> LinkRequestInfo? {
        try await linkRequests(client.query("""
            \(unescaped: Self.linkRequestColumns) WHERE account = \(account.rawValue) AND code = \(code)
            """, logger: logger)).first
    }

    package func pendingLinkRequests(_ account: AccountID) async throws -> [LinkRequestInfo] {
        // Bounded: strangers can post requests to any account (each address only a few).
        try await linkRequests(client.query("""
            \(unescaped: Self.linkRequestColumns) WHERE account = \(account.rawValue) AND status = \(LinkRequestStatus.pending.rawValue)
              AND expires >= \(KeyVaultDatabase.now()) ORDER BY expires LIMIT 100
            """, logger: logger))
    }

    package func refuseLinkRequest(_ account: AccountID, code: String, by device: DeviceID) async throws {
        try await transaction { db in
            guard try await db.query("""
                UPDATE link_requests SET status = \(LinkRequestStatus.refused.rawValue), approver = \(device.rawValue)
                WHERE account = \(account.rawValue) AND code = \(code) AND status = \(LinkRequestStatus.pending.rawValue)
                RETURNING 1
                """, logger: logger).collect().count == 1 else { throw StoreError.linkRequestClosed }
            try await insertAudit(db, account: account, event: .linkRequestRefused, device: device.rawValue, detail: nil)
        }
    }

    // MARK: Audit

    package func recordAudit(_ account: AccountID, event: AuditEvent, device: String?, detail: String?) async throws {
        try await transaction { db in
            try await insertAudit(db, account: account, event: event, device: device, detail: detail)
        }
    }

    package func audit(_ account: AccountID, after: Int64, limit: Int) async throws -> [AuditEntry] {
        let rows = try await client.query("""
            SELECT id, time, event, device, sequence, detail FROM audit WHERE account = \(account.rawValue) AND id > \(after)
            ORDER BY id LIMIT \(Int64(limit))
            """, logger: logger)
        var entries: [AuditEntry] = []
        for try await (id, time, event, device, sequence, detail) in rows.decode((Int64, Int64, String, String?, Int64?, String?).self) {
            entries.append(AuditEntry(id: id, time: time, event: event, device: device, sequence: sequence.flatMap { UInt64(exactly: $0) }, detail: detail))
        }
        return entries
    }

    // MARK: Rows

    /// One transaction on a connection of the pool: committed when `body` returns,
    /// rolled back when it throws, and then its error (a ``StoreError``) is what throws.
    ///
    /// A transaction PostgreSQL rolled back because it lost a race for a lock (a deadlock's
    /// victim, a serialization failure: ``StoreContention``) kept nothing, and runs again
    /// after a short random pause, ``transactionAttempts`` times in all; then its error
    /// throws (the server answers 503). So `body` does nothing but its statements.
    func transaction<T: Sendable>(deadline: Duration? = nil, _ body: (LeasedConnection) async throws -> T) async throws -> T {
        for attempt in 1... {
            do {
                return try await client.withTransaction(logger: logger, deadline: deadline) { try await body($0) }
            } catch let error as TransactionFailure {
                // The body's own error as it threw it (a store error the server answers by its kind).
                guard attempt < Self.transactionAttempts, error.isContention else { throw error.step == .body ? error.error : error }
                reruns.add()
                logger.notice("a transaction lost a race for a lock and runs again", metadata: ["store": .string(error.contentionDetail)])
                // Cancelled meanwhile (the client went): its own error, not the pause's.
                try? await Task.sleep(for: .milliseconds(Int.random(in: 5...20) * attempt))
                if Task.isCancelled { throw error.step == .body ? error.error : error }
            }
        }
        preconditionFailure("unreachable")
    }

    package static let transactionAttempts = 3

    /// A ``transaction(_:)`` whose commit waits for its WAL record to be flushed (the
    /// connections' default is not to: see `startupParameters`): the chain writes, which a
    /// power cut must not take back once the client was told they are stored.
    func durableTransaction<T: Sendable>(deadline: Duration? = nil, _ body: (LeasedConnection) async throws -> T) async throws -> T {
        try await transaction(deadline: deadline) { db in
            try await db.query("SET LOCAL synchronous_commit = on", logger: logger)
            return try await body(db)
        }
    }

    /// An audit row, inside the caller's transaction, and its last statement: the
    /// per-account lock it takes, held to commit, comes after every row the write locks,
    /// in every write, so that two writes never wait for each other in a circle
    /// (`onPostgreSQLNoChainWriteDeadlocksWithACompletion`). The lock
    /// makes ids within an account commit in order: a reader that saw id n has seen every
    /// smaller id of that account, so paging with `after` never skips an entry.
    func insertAudit(_ db: LeasedConnection, account: AccountID, event: AuditEvent, device: String?, sequence: UInt64? = nil,
                             detail: String?) async throws {
        let row = AuditRow(account: account.rawValue, time: KeyVaultDatabase.now(), event: event.rawValue, device: device,
                           sequence: sequence.map(Int64.init), detail: detail)
        for try await _ in try await db.execute(row, logger: logger) {}
    }

    /// The audit row of a chain write's link.
    private func insertAudit(_ db: LeasedConnection, account: AccountID, of write: ChainWrite) async throws {
        try await insertAudit(db, account: account, event: write.audit.event, device: write.audit.device, sequence: write.link.sequence,
                              detail: nil)
    }

    /// One statement: the lock is taken as the row is made, before its id is drawn.
    /// Prepared (every audited write makes one); the casts fix the types a first NULL would not.
    struct AuditRow: PostgresPreparedStatement {
        static let name = "keyvault_audit_row"
        static let sql = """
            INSERT INTO audit (account, time, event, device, sequence, detail)
            SELECT $1::TEXT, $2::BIGINT, $3::TEXT, $4::TEXT, $5::BIGINT, $6::TEXT
            FROM (SELECT pg_advisory_xact_lock(hashtextextended('audit ' || $1::TEXT, 0))) AS locked
            """
        typealias Row = Void
        let account: String, time: Int64, event: String, device: String?, sequence: Int64?, detail: String?

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(account)
            bindings.append(time)
            bindings.append(event)
            bindings.append(device)
            bindings.append(sequence)
            bindings.append(detail)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {}
    }

    private func insert(_ link: StoredLink, account: AccountID, _ db: LeasedConnection) async throws {
        try await db.query("""
            INSERT INTO links (account, sequence, hash, json) VALUES (\(account.rawValue), \(Int64(link.sequence)), \(link.hash), \(link.json))
            """, logger: logger)
    }

    /// - Returns: false when `onConflictNothing` and a device with this id exists.
    private func insert(_ device: StoredDevice, _ db: LeasedConnection, onConflictNothing: Bool) async throws -> Bool {
        var query: PostgresQuery = try """
            INSERT INTO devices (id, account, name, signing_key, box_key, added, revoked)
            VALUES (\(device.id.rawValue), \(device.account.rawValue), \(device.name), \(Data(device.signingKey)), \(Data(device.boxKey)),
                    \(Int64(device.added)), \(device.revoked.map(Int64.init)))
            """
        if onConflictNothing { query.sql += " ON CONFLICT (id) DO NOTHING" }
        query.sql += " RETURNING 1"
        return try await db.query(query, logger: logger).collect().count == 1
    }

    private func insert(_ box: KeyBox, account: AccountID, _ db: LeasedConnection) async throws {
        try await db.query("""
            INSERT INTO key_boxes (account, generation, recipient, json)
            VALUES (\(account.rawValue), \(Int64(box.generation)), \(box.recipient), \(try JSONEncoder().encode(box)))
            ON CONFLICT (account, generation, recipient) DO UPDATE SET json = EXCLUDED.json
            """, logger: logger)
    }

    private func upsert(_ slot: RecoverySlot, account: AccountID, _ db: LeasedConnection) async throws {
        try await db.query("""
            INSERT INTO recovery_slots (account, json) VALUES (\(account.rawValue), \(try JSONEncoder().encode(slot)))
            ON CONFLICT (account) DO UPDATE SET json = EXCLUDED.json
            """, logger: logger)
    }

    private static let deviceColumnList = "SELECT id, account, name, signing_key, box_key, added, revoked, last_seen"
    private static let deviceColumns = deviceColumnList + " FROM devices"
    typealias DeviceRow = (String, String, String, Data, Data, Int64, Int64?, Int64?)

    private func devices(_ rows: some AsyncSequence<PostgresRow, any Error>) async throws -> [StoredDevice] {
        var devices: [StoredDevice] = []
        for try await row in rows { devices.append(Self.device(try row.decode(DeviceRow.self))) }
        return devices
    }

    static func device(_ row: DeviceRow) -> StoredDevice {
        let (id, account, name, signingKey, boxKey, added, revoked, lastSeen) = row
        return StoredDevice(id: DeviceID(unchecked: id), account: AccountID(unchecked: account), name: name,
                            signingKey: [UInt8](signingKey), boxKey: [UInt8](boxKey), added: UInt64(added),
                            revoked: revoked.map(UInt64.init), lastSeen: lastSeen)
    }

    private static let linkRequestColumns =
        "SELECT code, status, expires, request, approver_nonce, device_nonce, approver FROM link_requests"

    private func linkRequests(_ rows: some AsyncSequence<PostgresRow, any Error>) async throws -> [LinkRequestInfo] {
        var list: [LinkRequestInfo] = []
        for try await row in rows {
            let (code, status, expires, request, approverNonce, deviceNonce, approver)
                = try row.decode((String, String, Int64, Data, String?, String?, String?).self)
            list.append(try LinkRequestStatus.info(code: code, status: status, expires: expires, request: request,
                                                   approverNonce: approverNonce, deviceNonce: deviceNonce, approver: approver))
        }
        return list
    }

    func collect<T: PostgresDecodable & Sendable>(_ rows: some AsyncSequence<PostgresRow, any Error>, as type: T.Type) async throws -> [T] {
        var values: [T] = []
        for try await row in rows { values.append(try row.decode(T.self)) }
        return values
    }
}
