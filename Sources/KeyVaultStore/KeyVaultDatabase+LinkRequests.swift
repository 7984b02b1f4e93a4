import Foundation
import GRDB
import KeyVaultModel

extension KeyVaultDatabase {
    // MARK: Device-link requests

    /// Stores a new pending request, unless `client` already has `perClient` pending
    /// requests (on any account), or the server has `total` and this account already
    /// has `perAccountOverTotal`: a flood spread over many addresses can fill the
    /// server's share, but not stop an account that is not itself flooded, and rows
    /// stay bounded (`total`, plus a few per account). Counts use an index; long-expired
    /// requests are swept on the way.
    package func createLinkRequest(_ account: AccountID, code: String, expires: Int64, request: LinkRequestCreate,
                                  client: String, perClient: Int, total: Int, perAccountOverTotal: Int) async throws {
        try await writer.write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM accounts WHERE id = ?", arguments: [account.rawValue]) == true else {
                throw StoreError.notFound
            }
            let now = Self.now()
            func pending(_ filter: String, _ arguments: StatementArguments, limit: Int) throws -> Int {
                try Int.fetchOne(db, sql: """
                    SELECT COUNT(*) FROM (SELECT 1 FROM link_requests WHERE \(filter) AND status = ? AND expires >= ? LIMIT ?)
                    """, arguments: arguments + [LinkRequestStatus.pending, now, limit]) ?? 0
            }
            guard try pending("client = ?", [client], limit: perClient) < perClient else { throw StoreError.tooManyLinkRequests }
            if try pending("1", [], limit: total) >= total {
                guard try pending("account = ?", [account.rawValue], limit: perAccountOverTotal) < perAccountOverTotal else {
                    throw StoreError.tooManyLinkRequests
                }
            }
            try db.execute(sql: "DELETE FROM link_requests WHERE status IN (?, ?, ?) AND expires < ?",
                           arguments: [LinkRequestStatus.pending, LinkRequestStatus.approved, LinkRequestStatus.refused, now - 86400])
            // No audit row: anyone may ask, and a stranger must not grow an account's log.
            // The approval (a chain link) and the refusal are logged.
            try db.execute(sql: "INSERT INTO link_requests (account, code, status, expires, request, client) VALUES (?, ?, ?, ?, ?, ?)",
                           arguments: [account.rawValue, code, LinkRequestStatus.pending, expires, try JSONEncoder().encode(request), client])
        }
    }

    /// Records the approver's random value: once per request, while it is pending.
    package func respondToLinkRequest(_ account: AccountID, code: String, nonce: String, by device: DeviceID) async throws {
        try await writer.write { db in
            try db.execute(sql: """
                UPDATE link_requests SET approver_nonce = ?, approver = ?
                WHERE account = ? AND code = ? AND status = ? AND expires >= ? AND approver_nonce IS NULL
                """, arguments: [nonce, device.rawValue, account.rawValue, code, LinkRequestStatus.pending, Self.now()])
            guard db.changesCount == 1 else { throw try Self.linkRequestRefusal(db, account, code) }
        }
    }

    /// Records the new device's revealed value: once, after the approver answered.
    /// The caller has checked that it opens the request's commitment.
    package func revealLinkRequest(_ account: AccountID, code: String, nonce: String) async throws {
        try await writer.write { db in
            try db.execute(sql: """
                UPDATE link_requests SET device_nonce = ?
                WHERE account = ? AND code = ? AND status = ? AND expires >= ?
                  AND approver_nonce IS NOT NULL AND device_nonce IS NULL
                """, arguments: [nonce, account.rawValue, code, LinkRequestStatus.pending, Self.now()])
            guard db.changesCount == 1 else { throw try Self.linkRequestRefusal(db, account, code) }
        }
    }

    /// Why a step of a link request did not apply.
    private static func linkRequestRefusal(_ db: Database, _ account: AccountID, _ code: String) throws -> StoreError {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM link_requests WHERE account = ? AND code = ?",
                                         arguments: [account.rawValue, code]) else { return .notFound }
        return try linkRequest(row).status == .pending ? .linkRequestOutOfTurn : .linkRequestClosed
    }

    package func linkRequest(_ account: AccountID, code: String) async throws -> LinkRequestInfo? {
        try await writer.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM link_requests WHERE account = ? AND code = ?", arguments: [account.rawValue, code])
                .map(Self.linkRequest)
        }
    }

    package func pendingLinkRequests(_ account: AccountID) async throws -> [LinkRequestInfo] {
        try await writer.read { db in
            // Bounded: strangers can post requests to any account (each address only a few).
            try Row.fetchAll(db, sql: "SELECT * FROM link_requests WHERE account = ? AND status = ? AND expires >= ? ORDER BY expires LIMIT 100",
                             arguments: [account.rawValue, LinkRequestStatus.pending, Self.now()]).map(Self.linkRequest)
        }
    }

    /// Refuses a pending request; it cannot be approved afterwards.
    package func refuseLinkRequest(_ account: AccountID, code: String, by device: DeviceID) async throws {
        try await writer.write { db in
            try db.execute(sql: "UPDATE link_requests SET status = ?, approver = ? WHERE account = ? AND code = ? AND status = ?",
                           arguments: [LinkRequestStatus.refused, device.rawValue, account.rawValue, code, LinkRequestStatus.pending])
            guard db.changesCount == 1 else { throw StoreError.linkRequestClosed }
            try Self.audit(db, account: account, event: .linkRequestRefused, device: device.rawValue, detail: nil)
        }
    }

    private static func linkRequest(_ row: Row) throws -> LinkRequestInfo {
        try LinkRequestStatus.info(code: row["code"], status: row["status"], expires: row["expires"], request: row["request"],
                                   approverNonce: row["approver_nonce"], deviceNonce: row["device_nonce"], approver: row["approver"])
    }
}

/// The `status` column of `link_requests`, as stored. A request past its expiry may
/// still say `pending`: reads report it as expired (``LinkRequestInfo/Status``).
package enum LinkRequestStatus: String, Sendable, DatabaseValueConvertible {
    case pending, approved, refused

    /// A stored row as the API shows it (both backends store the same columns).
    package static func info(code: String, status: String, expires: Int64, request: Data, approverNonce: String?,
                             deviceNonce: String?, approver: String?) throws -> LinkRequestInfo {
        let status: LinkRequestInfo.Status = switch LinkRequestStatus(rawValue: status) {
        case .pending: expires < KeyVaultDatabase.now() ? .expired : .pending
        case .approved: .approved
        case .refused: .refused
        case nil: .expired
        }
        return LinkRequestInfo(code: code, status: status, expires: expires,
                               request: try JSONDecoder().decode(LinkRequestCreate.self, from: request),
                               approverNonce: approverNonce, deviceNonce: deviceNonce,
                               approver: approver.map(DeviceID.init(unchecked:)))
    }
}
