import Foundation
import Logging
import PostgresNIO
import KeyVaultModel
import KeyVaultStore

// The methods of `KeyVaultRepository`, each one statement or one transaction. Under
// READ COMMITTED a conditional UPDATE re-checks its condition on the row as committed
// by whoever held it first, which is what makes the compare-and-swaps hold.
extension PostgresKeyVaultDatabase {
    // MARK: Attachments

    package func putAttachment(_ account: AccountID, member: MemberID, address: String, key: Data, data: Data,
                              device: DeviceID) async throws -> AttachmentInfo {
        try await transaction { db in
            let now = KeyVaultDatabase.now()
            // Of two uploads of one address exactly one inserts; the other waits for it and reads its row.
            let inserted = try await db.query("""
                INSERT INTO attachments (account, member, address, size, created, key, data)
                VALUES (\(account.rawValue), \(member.rawValue), \(address), \(Int64(data.count)), \(now), \(key), \(data))
                ON CONFLICT (account, member, address) DO NOTHING RETURNING 1
                """, logger: logger).collect().count == 1
            if inserted {
                try await insertAudit(db, account: account, event: .attachmentPut, device: device.rawValue, detail: "\(member.rawValue) \(address)")
                return AttachmentInfo(address: address, size: data.count, created: now, existed: false)
            }
            let rows = try await db.query("""
                SELECT size, created FROM attachments WHERE account = \(account.rawValue) AND member = \(member.rawValue) AND address = \(address)
                """, logger: logger).collect()
            guard let (size, created) = try rows.first?.decode((Int64, Int64).self) else { throw StoreError.notFound }
            return AttachmentInfo(address: address, size: Int(size), created: created, existed: true)
        }
    }

    package func replaceAttachment(_ account: AccountID, member: MemberID, address: String, key: Data, data: Data,
                                  device: DeviceID) async throws -> AttachmentInfo {
        try await transaction(deadline: WatchedPool.longDeadline) { db in
            let now = KeyVaultDatabase.now()
            _ = try await db.query("""
                INSERT INTO attachments (account, member, address, size, created, key, data)
                VALUES (\(account.rawValue), \(member.rawValue), \(address), \(Int64(data.count)), \(now), \(key), \(data))
                ON CONFLICT (account, member, address) DO UPDATE SET size = EXCLUDED.size, created = EXCLUDED.created,
                    key = EXCLUDED.key, data = EXCLUDED.data, upload = NULL, meta = NULL
                """, logger: logger).collect()
            // Chunks of what it replaced, when that was uploaded in chunks, go with it.
            _ = try await db.query("""
                DELETE FROM attachment_uploads
                WHERE complete AND account = \(account.rawValue) AND member = \(member.rawValue) AND address = \(address)
                """, logger: logger).collect()
            try await insertAudit(db, account: account, event: .attachmentReplace, device: device.rawValue, detail: "\(member.rawValue) \(address)")
            return AttachmentInfo(address: address, size: data.count, created: now, existed: false)
        }
    }

    package func attachmentLayout(_ account: AccountID, member: MemberID, address: String) async throws -> AttachmentLayout? {
        // octet_length reads a stored value's size from its TOAST pointer: no content is loaded.
        let rows = try await client.query("""
            SELECT a.upload, CASE WHEN a.upload IS NOT NULL AND octet_length(a.data) = 2 THEN get_byte(a.data, 1) END, u.chunks
            FROM attachments a LEFT JOIN attachment_uploads u ON u.upload = a.upload
            WHERE a.account = \(account.rawValue) AND a.member = \(member.rawValue) AND a.address = \(address)
            """, logger: logger).collect()
        return try rows.first.map {
            let (upload, shift, chunks) = try $0.decode((String?, Int32?, Int64?).self)
            return AttachmentLayout(upload: upload, chunkShift: shift.map(Int.init), chunks: chunks.map(Int.init) ?? 0)
        }
    }

    package func attachment(_ account: AccountID, member: MemberID, address: String) async throws -> StoredAttachment? {
        let rows = try await client.query("""
            SELECT a.key, a.data, a.upload, u.chunks FROM attachments a LEFT JOIN attachment_uploads u ON u.upload = a.upload
            WHERE a.account = \(account.rawValue) AND a.member = \(member.rawValue) AND a.address = \(address)
            """, logger: logger).collect()
        return try rows.first.map {
            let (key, data, upload, chunks) = try $0.decode((Data, Data, String?, Int64?).self)
            return StoredAttachment(key: key, data: data, upload: upload, chunks: chunks.map(Int.init) ?? 0)
        }
    }

    // MARK: Uploads in chunks

    package func beginUpload(_ account: AccountID, member: MemberID, address: String, upload: String, startedBy starter: AccountID,
                             key: Data, chunkShift: Int, size: Int, chunks: Int) async throws {
        let now = KeyVaultDatabase.now()
        try await transaction(deadline: WatchedPool.longDeadline) { db in
            // The count and the insert under a lock of the account: replicas count the same rows.
            _ = try await db.query("SELECT pg_advisory_xact_lock(hashtextextended(\("uploads " + account.rawValue), 0))",
                                   logger: logger).collect()
            // Those older than a day, and one of the same content its starter began before (given up on).
            _ = try await db.query("""
                DELETE FROM attachment_uploads WHERE account = \(account.rawValue) AND NOT complete
                    AND (created < \(now - KeyVaultDatabase.unfinishedUploadSeconds)
                         OR (member = \(member.rawValue) AND address = \(address) AND started_by = \(starter.rawValue)))
                """, logger: logger).collect()
            for try await unfinished in try await db.query("""
                SELECT count(*) FROM attachment_uploads WHERE account = \(account.rawValue) AND started_by = \(starter.rawValue) AND NOT complete
                """, logger: logger).decode(Int64.self) where unfinished >= KeyVaultDatabase.maxUnfinishedUploads {
                throw StoreError.tooManyUploads
            }
            _ = try await db.query("""
                INSERT INTO attachment_uploads (upload, account, member, address, started_by, key, chunk_shift, size, chunks, created)
                VALUES (\(upload), \(account.rawValue), \(member.rawValue), \(address), \(starter.rawValue), \(key), \(Int32(chunkShift)),
                        \(Int64(size)), \(Int64(chunks)), \(now))
                """, logger: logger).collect()
        }
    }

    package func unfinishedUpload(_ account: AccountID, member: MemberID, address: String, upload: String, startedBy starter: AccountID)
        async throws -> (chunkShift: Int, size: Int, chunks: Int, keyLength: Int)? {
        let rows = try await client.query("""
            SELECT chunk_shift, size, chunks, octet_length(key) FROM attachment_uploads
            WHERE upload = \(upload) AND account = \(account.rawValue) AND member = \(member.rawValue) AND address = \(address)
                AND started_by = \(starter.rawValue) AND NOT complete
            """, logger: logger).collect()
        return try rows.first.map {
            let (shift, size, chunks, keyLength) = try $0.decode((Int32, Int64, Int64, Int32).self)
            return (Int(shift), Int(size), Int(chunks), Int(keyLength))
        }
    }

    package func putUploadChunk(_ account: AccountID, member: MemberID, address: String, upload: String, startedBy starter: AccountID,
                                index: Int, data: Data) async throws -> Bool {
        // One statement: the chunk goes in only under an unfinished upload of this account, member, address and starter.
        try await client.query("""
            INSERT INTO attachment_chunks (upload, idx, data)
            SELECT upload, \(Int64(index)), \(data) FROM attachment_uploads
            WHERE upload = \(upload) AND account = \(account.rawValue) AND member = \(member.rawValue)
                AND address = \(address) AND started_by = \(starter.rawValue) AND NOT complete
            FOR SHARE
            ON CONFLICT (upload, idx) DO UPDATE SET data = EXCLUDED.data
            RETURNING 1
            """, logger: logger).collect().count == 1
    }

    package func completeUpload(_ account: AccountID, member: MemberID, address: String, upload: String, startedBy starter: AccountID,
                                replace: Bool, objectSize: Int, device: DeviceID) async throws -> UploadOutcome {
        try await transaction(deadline: WatchedPool.longDeadline) { db in
            guard let row = try await db.query("""
                SELECT key, chunk_shift, chunks FROM attachment_uploads
                WHERE upload = \(upload) AND account = \(account.rawValue) AND member = \(member.rawValue)
                    AND address = \(address) AND started_by = \(starter.rawValue) AND NOT complete
                FOR UPDATE
                """, logger: logger).collect().first else { return .unknown }
            let (key, shift, need) = try row.decode((Data, Int32, Int64).self)
            let have = try await collect(db.query("SELECT count(*) FROM attachment_chunks WHERE upload = \(upload)", logger: logger),
                                         as: Int64.self).first ?? 0
            guard have == need else { return .incomplete(have: Int(have), need: Int(need)) }
            let now = KeyVaultDatabase.now()
            let header = Data([2, UInt8(clamping: shift)])
            // The row as it is, locked: of two completions of one address, the second sees the first's.
            let existing = try await db.query("""
                SELECT size, created, upload FROM attachments
                WHERE account = \(account.rawValue) AND member = \(member.rawValue) AND address = \(address) FOR UPDATE
                """, logger: logger).collect().first.map { try $0.decode((Int64, Int64, String?).self) }
            if let existing, !replace {
                _ = try await db.query("DELETE FROM attachment_uploads WHERE upload = \(upload)", logger: logger).collect()
                return .stored(AttachmentInfo(address: address, size: Int(existing.0), created: existing.1, existed: true))
            }
            let inserted = try await db.query("""
                INSERT INTO attachments (account, member, address, size, created, key, data, upload)
                VALUES (\(account.rawValue), \(member.rawValue), \(address), \(Int64(objectSize)), \(now), \(key), \(header), \(upload))
                ON CONFLICT (account, member, address) DO \(unescaped: replace ? "UPDATE SET size = EXCLUDED.size, created = EXCLUDED.created, key = EXCLUDED.key, data = EXCLUDED.data, upload = EXCLUDED.upload, meta = NULL" : "NOTHING")
                RETURNING 1
                """, logger: logger).collect().count == 1
            guard inserted else {
                // Another completion of this address got in between the read and the insert.
                _ = try await db.query("DELETE FROM attachment_uploads WHERE upload = \(upload)", logger: logger).collect()
                let rows = try await db.query("""
                    SELECT size, created FROM attachments WHERE account = \(account.rawValue) AND member = \(member.rawValue) AND address = \(address)
                    """, logger: logger).collect()
                guard let (size, created) = try rows.first?.decode((Int64, Int64).self) else { throw StoreError.notFound }
                return .stored(AttachmentInfo(address: address, size: Int(size), created: created, existed: true))
            }
            _ = try await db.query("UPDATE attachment_uploads SET complete = true WHERE upload = \(upload)", logger: logger).collect()
            // What the attachment was before (and any completion a race left beside it) goes, chunks and all.
            _ = try await db.query("""
                DELETE FROM attachment_uploads WHERE complete AND upload <> \(upload)
                    AND account = \(account.rawValue) AND member = \(member.rawValue) AND address = \(address)
                """, logger: logger).collect()
            try await insertAudit(db, account: account, event: existing == nil ? .attachmentPut : .attachmentReplace,
                                  device: device.rawValue, detail: "\(member.rawValue) \(address)")
            return .stored(AttachmentInfo(address: address, size: objectSize, created: now, existed: false))
        }
    }

    package func storedChunkPrefix(upload: String) async throws -> Int {
        let rows = try await client.query("""
            SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM attachment_chunks WHERE upload = \(upload) AND idx = 0) THEN 0
                     ELSE (SELECT MIN(c.idx) + 1 FROM attachment_chunks c WHERE c.upload = \(upload)
                           AND NOT EXISTS (SELECT 1 FROM attachment_chunks d WHERE d.upload = c.upload AND d.idx = c.idx + 1)) END
            """, logger: logger)
        for try await prefix in rows.decode(Int64.self) { return Int(prefix) }
        return 0
    }

    package func attachmentChunk(upload: String, index: Int) async throws -> Data? {
        try await collect(client.query("""
            SELECT data FROM attachment_chunks WHERE upload = \(upload) AND idx = \(Int64(index))
            """, logger: logger), as: Data.self).first
    }

    package func attachmentKey(_ account: AccountID, member: MemberID, address: String) async throws -> Data? {
        try await collect(client.query("""
            SELECT key FROM attachments WHERE account = \(account.rawValue) AND member = \(member.rawValue) AND address = \(address)
            """, logger: logger), as: Data.self).first
    }

    package func replaceAttachmentKey(_ account: AccountID, member: MemberID, address: String, key: Data,
                                     device: DeviceID) async throws -> Bool {
        try await transaction { db in
            guard try await db.query("""
                UPDATE attachments SET key = \(key)
                WHERE account = \(account.rawValue) AND member = \(member.rawValue) AND address = \(address) RETURNING 1
                """, logger: logger).collect().count == 1 else { return false }
            try await insertAudit(db, account: account, event: .attachmentRewrap, device: device.rawValue, detail: "\(member.rawValue) \(address)")
            return true
        }
    }

    package func attachments(_ account: AccountID, member: MemberID) async throws -> [AttachmentInfo] {
        let rows = try await client.query("""
            SELECT address, size, created, meta FROM attachments WHERE account = \(account.rawValue) AND member = \(member.rawValue)
            ORDER BY created, address
            """, logger: logger)
        var list: [AttachmentInfo] = []
        for try await (address, size, created, meta) in rows.decode((String, Int64, Int64, Data?).self) {
            list.append(AttachmentInfo(address: address, size: Int(size), created: created, meta: meta?.base64EncodedString()))
        }
        return list
    }

    package func sweepUnfinishedUploads(before: Int64) async throws -> Int {
        try await client.query("DELETE FROM attachment_uploads WHERE NOT complete AND created < \(before) RETURNING 1", logger: logger,
                               deadline: WatchedPool.longDeadline).collect().count
    }

    package func setAttachmentMeta(_ account: AccountID, member: MemberID, address: String, meta: Data,
                                   grantee: DeviceID?) async throws -> MetaWrite {
        guard let grantee else {
            return try await client.query("""
                UPDATE attachments SET meta = \(meta)
                WHERE account = \(account.rawValue) AND member = \(member.rawValue) AND address = \(address) RETURNING 1
                """, logger: logger).collect().isEmpty ? .noAttachment : .set
        }
        return try await transaction { db in
            // The update re-checks `meta IS NULL` on the row as committed by a concurrent writer
            // (READ COMMITTED); when it changed nothing, whether the row is there says why.
            guard try await db.query("""
                UPDATE attachments SET meta = \(meta)
                WHERE account = \(account.rawValue) AND member = \(member.rawValue) AND address = \(address) AND meta IS NULL
                RETURNING 1
                """, logger: logger).collect().isEmpty else {
                try await insertAudit(db, account: account, event: .attachmentName, device: grantee.rawValue, detail: "\(member.rawValue) \(address)")
                return .set
            }
            let rows = try await db.query("""
                SELECT 1 FROM attachments WHERE account = \(account.rawValue) AND member = \(member.rawValue) AND address = \(address)
                """, logger: logger).collect()
            return rows.isEmpty ? .noAttachment : .named
        }
    }

    package func deleteAttachment(_ account: AccountID, member: MemberID, address: String, device: DeviceID) async throws -> Bool {
        try await transaction(deadline: WatchedPool.longDeadline) { db in
            guard try await db.query("""
                DELETE FROM attachments
                WHERE account = \(account.rawValue) AND member = \(member.rawValue) AND address = \(address) RETURNING 1
                """, logger: logger).collect().count == 1 else { return false }
            _ = try await db.query("""
                DELETE FROM attachment_uploads WHERE complete
                    AND account = \(account.rawValue) AND member = \(member.rawValue) AND address = \(address)
                """, logger: logger).collect()
            try await insertAudit(db, account: account, event: .attachmentDelete, device: device.rawValue, detail: "\(member.rawValue) \(address)")
            return true
        }
    }
}
