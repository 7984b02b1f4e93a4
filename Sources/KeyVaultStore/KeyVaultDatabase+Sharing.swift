import Foundation
import GRDB
import KeyVaultModel

extension KeyVaultDatabase {
    // MARK: Sharing (docs/formats/member-sharing.md, "The relay")

    /// Writes the identity wraps and share boxes of a chain append, inside its transaction.
    static func insertSharing(_ write: ChainWrite, account: AccountID, _ db: Database) throws {
        for wrap in write.identityWraps {
            try db.execute(sql: """
                INSERT OR REPLACE INTO identity_wraps (account, identity_generation, master_generation, envelope) VALUES (?, ?, ?, ?)
                """, arguments: [account.rawValue, wrap.identityGeneration, wrap.masterGeneration, wrap.envelope])
        }
        for box in write.shareBoxes {
            try db.execute(sql: """
                INSERT OR REPLACE INTO share_boxes (account, grantee, member, member_generation, grant_seq, box) VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [account.rawValue, box.grantee.rawValue, box.member.rawValue, box.memberGeneration,
                                 Int64(clamping: box.grant), try JSONEncoder().encode(box)])
        }
    }

    package func putHeadStatement(_ statement: HeadStatement) async throws {
        let json = try JSONEncoder().encode(statement)
        try await writer.write { db in
            try db.execute(sql: """
                INSERT INTO head_statements (account, device, time, statement) VALUES (?, ?, ?, ?)
                ON CONFLICT (account, device) DO UPDATE SET time = excluded.time, statement = excluded.statement
                WHERE excluded.time >= head_statements.time
                """, arguments: [statement.account.rawValue, statement.device.rawValue, statement.time, json])
        }
    }

    package func headStatements(_ account: AccountID) async throws -> [HeadStatement] {
        try await writer.read { db in
            try Data.fetchAll(db, sql: "SELECT statement FROM head_statements WHERE account = ? ORDER BY device", arguments: [account.rawValue])
                .map { try JSONDecoder().decode(HeadStatement.self, from: $0) }
        }
    }

    package func identityWraps(_ account: AccountID) async throws -> [IdentityWrap] {
        try await writer.read { db in
            try Row.fetchAll(db, sql: """
                SELECT identity_generation, master_generation, envelope FROM identity_wraps WHERE account = ?
                ORDER BY identity_generation, master_generation
                """, arguments: [account.rawValue]).map { row in
                IdentityWrap(identityGeneration: UInt32(row["identity_generation"] as Int64),
                             masterGeneration: UInt32(row["master_generation"] as Int64), envelope: row["envelope"])
            }
        }
    }

    package func shareBoxes(grantee: AccountID, from sharer: AccountID) async throws -> [ShareBox] {
        try await writer.read { db in
            try Data.fetchAll(db, sql: """
                SELECT box FROM share_boxes WHERE grantee = ? AND account = ? ORDER BY member, member_generation, grant_seq
                """, arguments: [grantee.rawValue, sharer.rawValue]).map { try JSONDecoder().decode(ShareBox.self, from: $0) }
        }
    }

    // MARK: Contact requests

    package func createContactRequest(_ info: ContactRequestInfo, maxOpenPerAccount: Int) async throws {
        try await writer.write { db in
            guard try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM accounts WHERE id IN (?, ?)",
                                   arguments: [info.from.rawValue, info.to.rawValue]) == 2 else { throw StoreError.notFound }
            let now = Self.now()
            let open = try Int.fetchOne(db, sql: """
                SELECT COUNT(*) FROM (SELECT 1 FROM contact_requests WHERE from_account = ? AND expires >= ? LIMIT ?)
                """, arguments: [info.from.rawValue, now, maxOpenPerAccount]) ?? 0
            guard open < maxOpenPerAccount else { throw StoreError.tooManyLinkRequests }
            try db.execute(sql: "DELETE FROM contact_requests WHERE expires < ?", arguments: [now - ContactRequestStep.keptAfterExpiry])
            try db.execute(sql: "INSERT INTO contact_requests (id, from_account, to_account, expires, info) VALUES (?, ?, ?, ?, ?)",
                           arguments: [info.id, info.from.rawValue, info.to.rawValue, info.expires, try JSONEncoder().encode(info)])
        }
    }

    package func contactRequest(id: String) async throws -> ContactRequestInfo? {
        try await writer.read { db in try Self.contactRequest(id: id, db) }
    }

    package func contactRequests(of account: AccountID) async throws -> [ContactRequestInfo] {
        try await writer.read { db in
            try Data.fetchAll(db, sql: """
                SELECT info FROM contact_requests WHERE (from_account = ? OR to_account = ?) AND expires >= ? ORDER BY expires, id LIMIT 100
                """, arguments: [account.rawValue, account.rawValue, Self.now()]).map { try JSONDecoder().decode(ContactRequestInfo.self, from: $0) }
        }
    }

    package func respondToContactRequest(id: String, to account: AccountID, response: ContactResponse) async throws {
        try await updateContactRequest(id: id) { try ContactRequestStep.respond($0, to: account, response: response, now: Self.now()) }
    }

    package func revealContactRequest(id: String, from account: AccountID, nonce: String) async throws {
        try await updateContactRequest(id: id) { try ContactRequestStep.reveal($0, from: account, nonce: nonce, now: Self.now()) }
    }

    /// Reads the request, applies one step and writes it back, in one write transaction
    /// (SQLite has one writer at a time: nobody else moves the request in between).
    private func updateContactRequest(id: String, _ step: @escaping @Sendable (ContactRequestInfo?) throws -> ContactRequestInfo) async throws {
        try await writer.write { db in
            let updated = try step(try Self.contactRequest(id: id, db))
            try db.execute(sql: "UPDATE contact_requests SET info = ? WHERE id = ?", arguments: [try JSONEncoder().encode(updated), id])
        }
    }

    private static func contactRequest(id: String, _ db: Database) throws -> ContactRequestInfo? {
        try Data.fetchOne(db, sql: "SELECT info FROM contact_requests WHERE id = ?", arguments: [id])
            .map { try JSONDecoder().decode(ContactRequestInfo.self, from: $0) }
    }
}

/// The steps of a contact request after its creation, as both backends apply them to
/// the stored request they hold locked: who may take each, and when.
package enum ContactRequestStep {
    /// How long an expired request stays before a new request sweeps it (a day: the
    /// two sides may still read how it ended).
    package static let keptAfterExpiry: Int64 = 86400

    /// The responder's answer: by the account the request is to, once, while unexpired.
    package static func respond(_ stored: ContactRequestInfo?, to account: AccountID, response: ContactResponse,
                                now: Int64) throws -> ContactRequestInfo {
        guard var info = stored, info.to == account else { throw StoreError.notFound }
        guard info.response == nil, info.expires >= now else { throw StoreError.linkRequestClosed }
        info.response = response
        return info
    }

    /// The initiator's reveal: by the account the request is from, once, after the
    /// answer, while unexpired.
    package static func reveal(_ stored: ContactRequestInfo?, from account: AccountID, nonce: String,
                               now: Int64) throws -> ContactRequestInfo {
        guard var info = stored, info.from == account else { throw StoreError.notFound }
        guard info.expires >= now, info.reveal == nil else { throw StoreError.linkRequestClosed }
        guard info.response != nil else { throw StoreError.linkRequestOutOfTurn }
        info.reveal = nonce
        return info
    }
}
