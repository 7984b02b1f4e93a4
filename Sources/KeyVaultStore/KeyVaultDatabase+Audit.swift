import Foundation
import GRDB
import KeyVaultModel

/// What an audit row records. The raw values are stored in the `audit.event` column
/// and shown to the account's devices: never change one.
package struct AuditEvent: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: String
    package init(rawValue: String) { self.rawValue = rawValue }
    package var description: String { rawValue }

    /// A chain link was appended: `link.<type>` (`link.genesis`, `link.device.add`, …).
    package static func link(_ type: LinkType) -> AuditEvent { AuditEvent(rawValue: "link." + type.rawValue) }
    /// A request of a known device was refused: `refused.<code>`.
    package static func refused(_ code: ErrorCode) -> AuditEvent { AuditEvent(rawValue: "refused." + code.rawValue) }
    /// A recovery proof failed (the row carries no device: none signed it).
    package static let refusedRecoveryProof = AuditEvent(rawValue: "refused.recovery_proof")
    package static let recoveryProven = AuditEvent(rawValue: "recovery.proven")
    package static let attachmentPut = AuditEvent(rawValue: "attachment.put")
    package static let attachmentRewrap = AuditEvent(rawValue: "attachment.rewrap")
    package static let attachmentReplace = AuditEvent(rawValue: "attachment.replace")
    package static let attachmentDelete = AuditEvent(rawValue: "attachment.delete")
    /// A grantee's device named an attachment of a shared member (through the relay).
    package static let attachmentName = AuditEvent(rawValue: "attachment.name")
    package static let linkRequestRefused = AuditEvent(rawValue: "link_request.refused")
    /// An account was brought here from another server (its links each have their own row too).
    package static let accountImport = AuditEvent(rawValue: "account.import")
}

extension KeyVaultDatabase {
    package func recordAudit(_ account: AccountID, event: AuditEvent, device: String?, detail: String?) async throws {
        try await writer.write { db in try Self.audit(db, account: account, event: event, device: device, detail: detail) }
    }

    /// One page of the audit log, oldest first, after entry `after` (ids are AUTOINCREMENT,
    /// given in commit order by the single writer).
    package func audit(_ account: AccountID, after: Int64, limit: Int) async throws -> [AuditEntry] {
        try await writer.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM audit WHERE account = ? AND id > ? ORDER BY id LIMIT ?",
                             arguments: [account.rawValue, after, limit]).map {
                AuditEntry(id: $0["id"], time: $0["time"], event: $0["event"], device: $0["device"],
                           sequence: ($0["sequence"] as Int64?).flatMap { UInt64(exactly: $0) }, detail: $0["detail"])
            }
        }
    }

    static func audit(_ db: Database, account: AccountID, event: AuditEvent, device: String?, sequence: UInt64? = nil,
                      detail: String?) throws {
        try db.cachedStatement(sql: "INSERT INTO audit (account, time, event, device, sequence, detail) VALUES (?, ?, ?, ?, ?, ?)")
            .execute(arguments: [account.rawValue, now(), event.rawValue, device, sequence.map(Int64.init), detail])
    }
}
