import Foundation
import GRDB
import KeyVaultModel

extension KeyVaultDatabase {
    // MARK: Attachments

    /// Stores an attachment unless its address is already there for this member.
    ///
    /// - Returns: the stored attachment and whether it already existed.
    package func putAttachment(_ account: AccountID, member: MemberID, address: String, key: Data, data: Data,
                              device: DeviceID) async throws -> AttachmentInfo {
        try await writer.write { db in
            if let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT size, created FROM attachments WHERE account = ? AND member = ? AND address = ?"),
                arguments: [account.rawValue, member.rawValue, address]) {
                return AttachmentInfo(address: address, size: Int(row["size"] as Int64), created: row["created"], existed: true)
            }
            let now = Self.now()
            try db.executeLettingGo(sql: "INSERT INTO attachments (account, member, address, size, created, key, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
                                    arguments: [account.rawValue, member.rawValue, address, data.count, now, key, data])
            try Self.audit(db, account: account, event: .attachmentPut, device: device.rawValue, detail: "\(member.rawValue) \(address)")
            return AttachmentInfo(address: address, size: data.count, created: now, existed: false)
        }
    }

    package func replaceAttachment(_ account: AccountID, member: MemberID, address: String, key: Data, data: Data,
                                  device: DeviceID) async throws -> AttachmentInfo {
        try await writer.write { db in
            let now = Self.now()
            try db.executeLettingGo(sql: """
                INSERT INTO attachments (account, member, address, size, created, key, data) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (account, member, address) DO UPDATE SET size = excluded.size, created = excluded.created,
                    key = excluded.key, data = excluded.data, upload = NULL, meta = NULL
                """, arguments: [account.rawValue, member.rawValue, address, data.count, now, key, data])
            // Chunks of what it replaced, when that was uploaded in chunks, go with it.
            try db.cachedStatement(sql: """
                DELETE FROM attachment_uploads WHERE complete = 1 AND account = ? AND member = ? AND address = ?
                """).execute(arguments: [account.rawValue, member.rawValue, address])
            try Self.audit(db, account: account, event: .attachmentReplace, device: device.rawValue, detail: "\(member.rawValue) \(address)")
            return AttachmentInfo(address: address, size: data.count, created: now, existed: false)
        }
    }

    package func attachmentLayout(_ account: AccountID, member: MemberID, address: String) async throws -> AttachmentLayout? {
        try await writer.read { db in
            // length() of a blob is read from its record's header: no content is loaded.
            try Row.fetchOne(db.cachedStatement(sql: """
                SELECT a.upload, CASE WHEN a.upload IS NOT NULL AND length(a.data) = 2 THEN substr(a.data, 2, 1) END AS shift, u.chunks
                FROM attachments a LEFT JOIN attachment_uploads u ON u.upload = a.upload
                WHERE a.account = ? AND a.member = ? AND a.address = ?
                """), arguments: [account.rawValue, member.rawValue, address]).map {
                AttachmentLayout(upload: $0["upload"], chunkShift: ($0["shift"] as Data?)?.first.map(Int.init),
                                 chunks: ($0["chunks"] as Int64?).map(Int.init) ?? 0)
            }
        }
    }

    package func attachment(_ account: AccountID, member: MemberID, address: String) async throws -> StoredAttachment? {
        try await writer.read { db in
            try Row.fetchOne(db.cachedStatement(sql: """
                SELECT a.key, a.data, a.upload, u.chunks FROM attachments a LEFT JOIN attachment_uploads u ON u.upload = a.upload
                WHERE a.account = ? AND a.member = ? AND a.address = ?
                """), arguments: [account.rawValue, member.rawValue, address]).map {
                StoredAttachment(key: $0["key"], data: $0["data"], upload: $0["upload"], chunks: ($0["chunks"] as Int64?).map(Int.init) ?? 0)
            }
        }
    }

    // MARK: Uploads in chunks

    package func beginUpload(_ account: AccountID, member: MemberID, address: String, upload: String, startedBy starter: AccountID,
                             key: Data, chunkShift: Int, size: Int, chunks: Int) async throws {
        try await writer.write { db in
            let now = Self.now()
            try db.cachedStatement(sql: "DELETE FROM attachment_uploads WHERE account = ? AND complete = 0 AND created < ?")
                .execute(arguments: [account.rawValue, now - Self.unfinishedUploadSeconds])
            // A new upload of the same content replaces one its starter began before (given up on).
            try db.cachedStatement(sql: """
                DELETE FROM attachment_uploads WHERE account = ? AND member = ? AND address = ? AND started_by = ? AND complete = 0
                """).execute(arguments: [account.rawValue, member.rawValue, address, starter.rawValue])
            let unfinished = try Int.fetchOne(
                db.cachedStatement(sql: "SELECT count(*) FROM attachment_uploads WHERE account = ? AND started_by = ? AND complete = 0"),
                arguments: [account.rawValue, starter.rawValue]) ?? 0
            guard unfinished < Self.maxUnfinishedUploads else { throw StoreError.tooManyUploads }
            try db.cachedStatement(sql: """
                INSERT INTO attachment_uploads (upload, account, member, address, started_by, key, chunk_shift, size, chunks, created)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [upload, account.rawValue, member.rawValue, address, starter.rawValue, key, chunkShift, size, chunks, now])
        }
    }

    /// How long an unfinished upload is kept.
    package static let unfinishedUploadSeconds: Int64 = 24 * 3600
    /// How many uploads one starter (the account's own devices, or one grantee) may
    /// have begun in an account and not completed at once: what abandoned uploads can
    /// hold of the server's disk is bounded.
    package static let maxUnfinishedUploads = 16

    package func unfinishedUpload(_ account: AccountID, member: MemberID, address: String, upload: String, startedBy starter: AccountID)
        async throws -> (chunkShift: Int, size: Int, chunks: Int, keyLength: Int)? {
        try await writer.read { db in
            try Row.fetchOne(db.cachedStatement(sql: """
                SELECT chunk_shift, size, chunks, length(key) AS key_length FROM attachment_uploads
                WHERE upload = ? AND account = ? AND member = ? AND address = ? AND started_by = ? AND complete = 0
                """), arguments: [upload, account.rawValue, member.rawValue, address, starter.rawValue]).map {
                (Int($0["chunk_shift"] as Int64), Int($0["size"] as Int64), Int($0["chunks"] as Int64), Int($0["key_length"] as Int64))
            }
        }
    }

    package func putUploadChunk(_ account: AccountID, member: MemberID, address: String, upload: String, startedBy starter: AccountID,
                                index: Int, data: Data) async throws -> Bool {
        try await writer.write { db in
            guard try Bool.fetchOne(db.cachedStatement(sql: """
                SELECT 1 FROM attachment_uploads
                WHERE upload = ? AND account = ? AND member = ? AND address = ? AND started_by = ? AND complete = 0
                """), arguments: [upload, account.rawValue, member.rawValue, address, starter.rawValue]) != nil else { return false }
            try db.executeLettingGo(sql: "INSERT OR REPLACE INTO attachment_chunks (upload, idx, data) VALUES (?, ?, ?)",
                                    arguments: [upload, index, data])
            return true
        }
    }

    package func completeUpload(_ account: AccountID, member: MemberID, address: String, upload: String, startedBy starter: AccountID,
                                replace: Bool, objectSize: Int, device: DeviceID) async throws -> UploadOutcome {
        try await writer.write { db in
            guard let row = try Row.fetchOne(db.cachedStatement(sql: """
                SELECT key, chunk_shift, chunks FROM attachment_uploads
                WHERE upload = ? AND account = ? AND member = ? AND address = ? AND started_by = ? AND complete = 0
                """), arguments: [upload, account.rawValue, member.rawValue, address, starter.rawValue]) else { return .unknown }
            let need = Int(row["chunks"] as Int64)
            let have = try Int.fetchOne(
                db.cachedStatement(sql: "SELECT count(*) FROM attachment_chunks WHERE upload = ?"), arguments: [upload]) ?? 0
            guard have == need else { return .incomplete(have: have, need: need) }
            let existing = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT size, created, upload FROM attachments WHERE account = ? AND member = ? AND address = ?"),
                arguments: [account.rawValue, member.rawValue, address])
            if let existing, !replace {
                try db.cachedStatement(sql: "DELETE FROM attachment_uploads WHERE upload = ?").execute(arguments: [upload])
                return .stored(AttachmentInfo(address: address, size: Int(existing["size"] as Int64), created: existing["created"], existed: true))
            }
            let now = Self.now()
            let header = Data([2, UInt8(clamping: row["chunk_shift"] as Int64)])
            try db.cachedStatement(sql: """
                INSERT INTO attachments (account, member, address, size, created, key, data, upload) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (account, member, address) DO UPDATE SET size = excluded.size, created = excluded.created,
                    key = excluded.key, data = excluded.data, upload = excluded.upload, meta = NULL
                """).execute(arguments: [account.rawValue, member.rawValue, address, objectSize, now, row["key"] as Data, header, upload])
            try db.cachedStatement(sql: "UPDATE attachment_uploads SET complete = 1 WHERE upload = ?").execute(arguments: [upload])
            // What the attachment was before goes, chunks and all.
            try db.cachedStatement(sql: """
                DELETE FROM attachment_uploads WHERE complete = 1 AND upload <> ? AND account = ? AND member = ? AND address = ?
                """).execute(arguments: [upload, account.rawValue, member.rawValue, address])
            try Self.audit(db, account: account, event: existing == nil ? .attachmentPut : .attachmentReplace, device: device.rawValue,
                           detail: "\(member.rawValue) \(address)")
            return .stored(AttachmentInfo(address: address, size: objectSize, created: now, existed: false))
        }
    }

    package func storedChunkPrefix(upload: String) async throws -> Int {
        try await writer.read { db in
            try Int.fetchOne(db.cachedStatement(sql: """
                SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM attachment_chunks WHERE upload = ? AND idx = 0) THEN 0
                     ELSE (SELECT MIN(c.idx) + 1 FROM attachment_chunks c WHERE c.upload = ?
                           AND NOT EXISTS (SELECT 1 FROM attachment_chunks d WHERE d.upload = c.upload AND d.idx = c.idx + 1)) END
                """), arguments: [upload, upload]) ?? 0
        }
    }

    package func attachmentChunk(upload: String, index: Int) async throws -> Data? {
        try await writer.read { db in
            try Data.fetchOne(
                db.cachedStatement(sql: "SELECT data FROM attachment_chunks WHERE upload = ? AND idx = ?"), arguments: [upload, index])
        }
    }

    /// The wrapped data key of an attachment alone.
    package func attachmentKey(_ account: AccountID, member: MemberID, address: String) async throws -> Data? {
        try await writer.read { db in
            try Data.fetchOne(db.cachedStatement(sql: "SELECT key FROM attachments WHERE account = ? AND member = ? AND address = ?"),
                              arguments: [account.rawValue, member.rawValue, address])
        }
    }

    /// Replaces the wrapped data key of an attachment (re-wrapping under a newer member key).
    ///
    /// - Returns: false when there is no such attachment.
    package func replaceAttachmentKey(_ account: AccountID, member: MemberID, address: String, key: Data,
                                     device: DeviceID) async throws -> Bool {
        try await writer.write { db in
            try db.cachedStatement(sql: "UPDATE attachments SET key = ? WHERE account = ? AND member = ? AND address = ?")
                .execute(arguments: [key, account.rawValue, member.rawValue, address])
            guard db.changesCount == 1 else { return false }
            try Self.audit(db, account: account, event: .attachmentRewrap, device: device.rawValue, detail: "\(member.rawValue) \(address)")
            return true
        }
    }

    package func attachments(_ account: AccountID, member: MemberID) async throws -> [AttachmentInfo] {
        try await writer.read { db in
            try Row.fetchAll(
                db.cachedStatement(sql: "SELECT address, size, created, meta FROM attachments WHERE account = ? AND member = ? ORDER BY created, address"),
                arguments: [account.rawValue, member.rawValue]).map {
                AttachmentInfo(address: $0["address"], size: Int($0["size"] as Int64), created: $0["created"],
                               meta: ($0["meta"] as Data?)?.base64EncodedString())
            }
        }
    }

    package func sweepUnfinishedUploads(before: Int64) async throws -> Int {
        try await writer.write { db in
            try db.cachedStatement(sql: "DELETE FROM attachment_uploads WHERE complete = 0 AND created < ?").execute(arguments: [before])
            return db.changesCount
        }
    }

    package func setAttachmentMeta(_ account: AccountID, member: MemberID, address: String, meta: Data,
                                   grantee: DeviceID?) async throws -> MetaWrite {
        try await writer.write { db in
            let key: StatementArguments = [account.rawValue, member.rawValue, address]
            guard let named = try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT meta IS NOT NULL FROM attachments WHERE account = ? AND member = ? AND address = ?"),
                arguments: key) else { return .noAttachment }
            guard grantee == nil || !named else { return .named }
            try db.cachedStatement(sql: "UPDATE attachments SET meta = ? WHERE account = ? AND member = ? AND address = ?")
                .execute(arguments: [meta] + key)
            if let grantee {
                try Self.audit(db, account: account, event: .attachmentName, device: grantee.rawValue, detail: "\(member.rawValue) \(address)")
            }
            return .set
        }
    }

    package func deleteAttachment(_ account: AccountID, member: MemberID, address: String, device: DeviceID) async throws -> Bool {
        try await writer.write { db in
            try db.cachedStatement(sql: "DELETE FROM attachments WHERE account = ? AND member = ? AND address = ?")
                .execute(arguments: [account.rawValue, member.rawValue, address])
            guard db.changesCount == 1 else { return false }
            // Its chunks, when it was uploaded in chunks (an unfinished upload of it may go on).
            try db.cachedStatement(sql: "DELETE FROM attachment_uploads WHERE complete = 1 AND account = ? AND member = ? AND address = ?")
                .execute(arguments: [account.rawValue, member.rawValue, address])
            try Self.audit(db, account: account, event: .attachmentDelete, device: device.rawValue, detail: "\(member.rawValue) \(address)")
            return true
        }
    }
}

extension Database {
    /// Runs `sql` through GRDB's statement cache (compiled once per connection) with
    /// `arguments`, then lets go of them: a cached statement keeps its last arguments
    /// until it runs again, and these hold an attachment's content (up to 64 MiB whole,
    /// a chunk of up to 4 MiB). A statement whose execution fails leaves the cache, and
    /// its arguments with it; one refused before it runs (a cancelled task, an aborted
    /// transaction) keeps them until its next use. Not in a `defer`: clearing resets the
    /// statement with `try!`, and after a failed step the reset returns that failure.
    fileprivate func executeLettingGo(sql: String, arguments: StatementArguments) throws {
        let statement = try cachedStatement(sql: sql)
        try statement.execute(arguments: arguments)
        statement.setUncheckedArguments(StatementArguments())
    }
}
