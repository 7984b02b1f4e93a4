import Foundation
import GRDB
import KeyVaultModel

extension KeyVaultDatabase {
    // MARK: Devices

    /// A point read on the request path: synchronous (no hop to another thread;
    /// SQLite answers in microseconds), one statement (atomic by itself, so no
    /// wrapping transaction), a cached prepared statement.
    package func device(_ id: DeviceID) throws -> StoredDevice? {
        try pointReader.unsafeReentrantRead { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM devices WHERE id = ?"), arguments: [id.rawValue]).map(Self.device)
        }
    }

    package func devices(_ account: AccountID) async throws -> [StoredDevice] {
        try await writer.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM devices WHERE account = ? ORDER BY added", arguments: [account.rawValue]).map(Self.device)
        }
    }

    /// Records the nonce of a signed request of `device`, with the request's
    /// timestamp; false when that device already used it. Rows with timestamps
    /// before `forgetBefore` go first: such requests are refused as stale anyway.
    package func useNonce(_ nonce: String, device: DeviceID, timestamp: Int64, forgetBefore: Int64) async throws -> Bool {
        try await writer.write { db in
            // The index on time makes this a short range delete, not a scan.
            try db.cachedStatement(sql: "DELETE FROM request_nonces WHERE time < ?").execute(arguments: [forgetBefore])
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO request_nonces (device, nonce, time) VALUES (?, ?, ?)")
                .execute(arguments: [device.rawValue, nonce, timestamp])
            return db.changesCount == 1
        }
    }

    /// Synced, as the chain: a recovery token or challenge a power cut forgot could be used again.
    package func useOnce(_ value: String, kind: String, expires: Int64, forgetBefore: Int64) async throws -> Bool {
        try await durableWrite { db in
            try db.cachedStatement(sql: "DELETE FROM used_once WHERE expires < ?").execute(arguments: [forgetBefore])
            return try Self.spend(SingleUse(kind: kind, value: value, expires: expires), db)
        }
    }

    /// Records `use` as used, in `db`'s transaction: false if it already was. (What expired
    /// is forgotten by ``useOnce(_:kind:expires:forgetBefore:)``, not here: a chain write
    /// that spends one holds its account meanwhile.)
    static func spend(_ use: SingleUse, _ db: Database) throws -> Bool {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO used_once (kind, value, expires) VALUES (?, ?, ?)")
            .execute(arguments: [use.kind, use.value, use.expires])
        return db.changesCount == 1
    }

    package func recordFailure(_ keys: [String], at time: Int64, since: Int64, limit: Int, cap: Int) async throws -> (counted: Bool, before: FailureCounts) {
        // One write transaction: SQLite's single writer makes the check and the insert one step.
        // Synced, as the chain: failures a power cut forgot would be guesses given back.
        try await durableWrite { db in
            try db.cachedStatement(sql: "DELETE FROM failures WHERE time < ?").execute(arguments: [since])
            var counts = FailureCounts(total: 0, byKey: [:])
            for key in keys {
                let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*), MIN(time) FROM failures WHERE key = ? AND time >= ?"),
                                           arguments: [key, since])
                if let row, let count = row[0] as Int?, count > 0, let oldest = row[1] as Int64? {
                    counts.byKey[key] = .init(count: count, oldest: oldest)
                }
            }
            if counts.byKey.values.contains(where: { $0.count >= limit }) { return (false, counts) }
            counts.total = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM (SELECT 1 FROM failures WHERE time >= ? LIMIT ?)"),
                                            arguments: [since, cap]) ?? 0
            if counts.total >= cap { return (false, counts) }
            for key in keys {
                try db.cachedStatement(sql: "INSERT INTO failures (key, time) VALUES (?, ?)").execute(arguments: [key, time])
            }
            return (true, counts)
        }
    }

    /// Records that a device made a signed request (at most once a minute per device).
    package func touch(_ id: DeviceID, at time: Int64) async throws {
        try await writer.write { db in
            try db.execute(sql: "UPDATE devices SET last_seen = ? WHERE id = ? AND (last_seen IS NULL OR last_seen < ?)",
                           arguments: [time, id.rawValue, time - StoredDevice.seenInterval])
        }
    }

    static func insert(_ device: StoredDevice, _ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO devices (id, account, name, signing_key, box_key, added, revoked) VALUES (?, ?, ?, ?, ?, ?, ?)
            """, arguments: [device.id.rawValue, device.account.rawValue, device.name, Data(device.signingKey),
                             Data(device.boxKey), device.added, device.revoked])
    }
    private static func device(_ row: Row) -> StoredDevice {
        StoredDevice(id: DeviceID(unchecked: row["id"]), account: AccountID(unchecked: row["account"]), name: row["name"],
                     signingKey: [UInt8](row["signing_key"] as Data), boxKey: [UInt8](row["box_key"] as Data),
                     added: UInt64(row["added"] as Int64), revoked: (row["revoked"] as Int64?).map(UInt64.init),
                     lastSeen: row["last_seen"])
    }
}
