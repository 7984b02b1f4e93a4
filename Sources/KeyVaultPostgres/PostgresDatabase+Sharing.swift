import Foundation
import Logging
import PostgresNIO
import KeyVaultModel
import KeyVaultStore

// The sharing relay's methods of `KeyVaultRepository` (docs/formats/member-sharing.md,
// "The relay"), as in KeyVaultDatabase+Sharing.swift.
extension PostgresKeyVaultDatabase {
    /// Writes the identity wraps and share boxes of a chain append, inside its transaction.
    func insertSharing(_ write: ChainWrite, account: AccountID, _ db: LeasedConnection) async throws {
        for wrap in write.identityWraps {
            try await db.query("""
                INSERT INTO identity_wraps (account, identity_generation, master_generation, envelope)
                VALUES (\(account.rawValue), \(Int64(wrap.identityGeneration)), \(Int64(wrap.masterGeneration)), \(wrap.envelope))
                ON CONFLICT (account, identity_generation, master_generation) DO UPDATE SET envelope = EXCLUDED.envelope
                """, logger: logger)
        }
        for box in write.shareBoxes {
            try await db.query("""
                INSERT INTO share_boxes (account, grantee, member, member_generation, grant_seq, box)
                VALUES (\(account.rawValue), \(box.grantee.rawValue), \(box.member.rawValue), \(Int64(box.memberGeneration)),
                        \(Int64(clamping: box.grant)), \(try JSONEncoder().encode(box)))
                ON CONFLICT (account, grantee, member, member_generation, grant_seq) DO UPDATE SET box = EXCLUDED.box
                """, logger: logger)
        }
    }

    package func putHeadStatement(_ statement: HeadStatement) async throws {
        let json = try JSONEncoder().encode(statement)
        try await client.query("""
            INSERT INTO head_statements (account, device, time, statement)
            VALUES (\(statement.account.rawValue), \(statement.device.rawValue), \(statement.time), \(json))
            ON CONFLICT (account, device) DO UPDATE SET time = EXCLUDED.time, statement = EXCLUDED.statement
            WHERE EXCLUDED.time >= head_statements.time
            """, logger: logger).collect()
    }

    package func headStatements(_ account: AccountID) async throws -> [HeadStatement] {
        let rows = try await client.query("""
            SELECT statement FROM head_statements WHERE account = \(account.rawValue) ORDER BY device
            """, logger: logger)
        var statements: [HeadStatement] = []
        for try await json in rows.decode(Data.self) { statements.append(try JSONDecoder().decode(HeadStatement.self, from: json)) }
        return statements
    }

    package func identityWraps(_ account: AccountID) async throws -> [IdentityWrap] {
        let rows = try await client.query("""
            SELECT identity_generation, master_generation, envelope FROM identity_wraps WHERE account = \(account.rawValue)
            ORDER BY identity_generation, master_generation
            """, logger: logger)
        var wraps: [IdentityWrap] = []
        for try await (identity, master, envelope) in rows.decode((Int64, Int64, String).self) {
            wraps.append(IdentityWrap(identityGeneration: UInt32(identity), masterGeneration: UInt32(master), envelope: envelope))
        }
        return wraps
    }

    package func shareBoxes(grantee: AccountID, from sharer: AccountID) async throws -> [ShareBox] {
        let rows = try await client.query("""
            SELECT box FROM share_boxes WHERE grantee = \(grantee.rawValue) AND account = \(sharer.rawValue)
            ORDER BY member, member_generation, grant_seq
            """, logger: logger)
        var boxes: [ShareBox] = []
        for try await box in rows.decode(Data.self) {
            boxes.append(try JSONDecoder().decode(ShareBox.self, from: box))
        }
        return boxes
    }

    // MARK: Contact requests

    package func createContactRequest(_ info: ContactRequestInfo, maxOpenPerAccount: Int) async throws {
        let json = try JSONEncoder().encode(info)
        try await transaction { db in
            // Replicas count the same rows: the count and the insert run under a lock of the
            // asking account (and the two accounts cannot go while the row goes in).
            _ = try await db.query("""
                SELECT pg_advisory_xact_lock(hashtextextended(\("contact " + info.from.rawValue), 0))
                """, logger: logger).collect()
            guard try await db.query("""
                SELECT id FROM accounts WHERE id IN (\(info.from.rawValue), \(info.to.rawValue)) FOR KEY SHARE
                """, logger: logger).collect().count == 2 else { throw StoreError.notFound }
            let now = KeyVaultDatabase.now()
            let open = try await collect(db.query("""
                SELECT COUNT(*) FROM (SELECT 1 FROM contact_requests WHERE from_account = \(info.from.rawValue) AND expires >= \(now)
                  LIMIT \(Int64(maxOpenPerAccount))) AS open
                """, logger: logger), as: Int64.self).first ?? 0
            guard open < maxOpenPerAccount else { throw StoreError.tooManyLinkRequests }
            try await db.query("DELETE FROM contact_requests WHERE expires < \(now - ContactRequestStep.keptAfterExpiry)", logger: logger)
            try await db.query("""
                INSERT INTO contact_requests (id, from_account, to_account, expires, info)
                VALUES (\(info.id), \(info.from.rawValue), \(info.to.rawValue), \(info.expires), \(json))
                """, logger: logger)
        }
    }

    package func contactRequest(id: String) async throws -> ContactRequestInfo? {
        try await contactRequests(client.query("SELECT info FROM contact_requests WHERE id = \(id)", logger: logger)).first
    }

    package func contactRequests(of account: AccountID) async throws -> [ContactRequestInfo] {
        try await contactRequests(client.query("""
            SELECT info FROM contact_requests
            WHERE (from_account = \(account.rawValue) OR to_account = \(account.rawValue)) AND expires >= \(KeyVaultDatabase.now())
            ORDER BY expires, id LIMIT 100
            """, logger: logger))
    }

    package func respondToContactRequest(id: String, to account: AccountID, response: ContactResponse) async throws {
        try await updateContactRequest(id: id) { try ContactRequestStep.respond($0, to: account, response: response, now: KeyVaultDatabase.now()) }
    }

    package func revealContactRequest(id: String, from account: AccountID, nonce: String) async throws {
        try await updateContactRequest(id: id) { try ContactRequestStep.reveal($0, from: account, nonce: nonce, now: KeyVaultDatabase.now()) }
    }

    /// Reads the request locked (FOR UPDATE: a second step waits for the first to
    /// commit, then sees it), applies one step and writes it back.
    private func updateContactRequest(id: String, _ step: (ContactRequestInfo?) throws -> ContactRequestInfo) async throws {
        try await transaction { db in
            let stored = try await contactRequests(db.query("SELECT info FROM contact_requests WHERE id = \(id) FOR UPDATE", logger: logger)).first
            let updated = try JSONEncoder().encode(try step(stored))
            try await db.query("UPDATE contact_requests SET info = \(updated) WHERE id = \(id)", logger: logger)
        }
    }

    private func contactRequests(_ rows: some AsyncSequence<PostgresRow, any Error>) async throws -> [ContactRequestInfo] {
        try await collect(rows, as: Data.self).map { try JSONDecoder().decode(ContactRequestInfo.self, from: $0) }
    }
}
