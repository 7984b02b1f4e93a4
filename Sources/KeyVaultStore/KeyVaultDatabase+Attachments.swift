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
            if let row = try Row.fetchOne(db, sql: "SELECT size, created FROM attachments WHERE account = ? AND member = ? AND address = ?",
                                          arguments: [account.rawValue, member.rawValue, address]) {
                return AttachmentInfo(address: address, size: Int(row["size"] as Int64), created: row["created"], existed: true)
            }
            let now = Self.now()
            try db.execute(sql: "INSERT INTO attachments (account, member, address, size, created, key, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
                           arguments: [account.rawValue, member.rawValue, address, data.count, now, key, data])
            try Self.audit(db, account: account, event: .attachmentPut, device: device.rawValue, detail: "\(member.rawValue) \(address)")
            return AttachmentInfo(address: address, size: data.count, created: now, existed: false)
        }
    }

    package func replaceAttachment(_ account: AccountID, member: MemberID, address: String, key: Data, data: Data,
                                  device: DeviceID) async throws -> AttachmentInfo {
        try await writer.write { db in
            let now = Self.now()
            try db.execute(sql: """
                INSERT INTO attachments (account, member, address, size, created, key, data) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (account, member, address) DO UPDATE SET size = excluded.size, created = excluded.created,
                    key = excluded.key, data = excluded.data
                """, arguments: [account.rawValue, member.rawValue, address, data.count, now, key, data])
            try Self.audit(db, account: account, event: .attachmentReplace, device: device.rawValue, detail: "\(member.rawValue) \(address)")
            return AttachmentInfo(address: address, size: data.count, created: now, existed: false)
        }
    }

    /// The wrapped data key and the sealed content of an attachment.
    package func attachment(_ account: AccountID, member: MemberID, address: String) async throws -> (key: Data, data: Data)? {
        try await writer.read { db in
            try Row.fetchOne(db, sql: "SELECT key, data FROM attachments WHERE account = ? AND member = ? AND address = ?",
                             arguments: [account.rawValue, member.rawValue, address]).map { ($0["key"], $0["data"]) }
        }
    }

    /// The wrapped data key of an attachment alone.
    package func attachmentKey(_ account: AccountID, member: MemberID, address: String) async throws -> Data? {
        try await writer.read { db in
            try Data.fetchOne(db, sql: "SELECT key FROM attachments WHERE account = ? AND member = ? AND address = ?",
                              arguments: [account.rawValue, member.rawValue, address])
        }
    }

    /// Replaces the wrapped data key of an attachment (re-wrapping under a newer member key).
    ///
    /// - Returns: false when there is no such attachment.
    package func replaceAttachmentKey(_ account: AccountID, member: MemberID, address: String, key: Data,
                                     device: DeviceID) async throws -> Bool {
        try await writer.write { db in
            try db.execute(sql: "UPDATE attachments SET key = ? WHERE account = ? AND member = ? AND address = ?",
                           arguments: [key, account.rawValue, member.rawValue, address])
            guard db.changesCount == 1 else { return false }
            try Self.audit(db, account: account, event: .attachmentRewrap, device: device.rawValue, detail: "\(member.rawValue) \(address)")
            return true
        }
    }

    package func attachments(_ account: AccountID, member: MemberID) async throws -> [AttachmentInfo] {
        try await writer.read { db in
            try Row.fetchAll(db, sql: "SELECT address, size, created FROM attachments WHERE account = ? AND member = ? ORDER BY created, address",
                             arguments: [account.rawValue, member.rawValue]).map {
                AttachmentInfo(address: $0["address"], size: Int($0["size"] as Int64), created: $0["created"])
            }
        }
    }
}
