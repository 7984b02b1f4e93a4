import Foundation
import GRDB
import KeyVaultModel

/// The service's storage: SQLite through GRDB (WAL, foreign keys, append-only
/// migrations). Every method is one transaction. Statement arguments are never logged.
///
/// This file owns the connection; the schema is in Migrations.swift, and the methods
/// are grouped by concern in `KeyVaultDatabase+Chain`, `+Devices`, `+Attachments`,
/// `+LinkRequests`, `+Sharing` and `+Audit`.
package struct KeyVaultDatabase: KeyVaultRepository {
    /// Internal (not private) only so that the concern files can use it.
    let writer: any DatabaseWriter
    /// The point reads of the request path (a device, the boxes), which run
    /// synchronously on the calling thread: a connection of their own, never one of
    /// the pool's readers. Those are leased across suspensions by async reads; a
    /// point read waiting for one on the thread such a read must resume on hung the
    /// whole server (`manySignedRequestsAtOnceAreAllAnsweredByAFreshServer`).
    let pointReader: any DatabaseReader
    private var syncChainWrites = true

    /// Opens (creating if needed) the database file at `path` and migrates it.
    ///
    /// - Parameters:
    ///   - syncChainWrites: sync the chain writes' commits (`synchronous = FULL`);
    ///     false only to measure what that costs (keyvault-bench chain-appends).
    ///   - busyTimeout: how long a write waits for another process's write to the file
    ///     before it is refused (``StoreContention``); shorter only in tests.
    package static func open(path: String, syncChainWrites: Bool = true, busyTimeout: TimeInterval = 5) throws -> KeyVaultDatabase {
        // A new file is its user's alone (SQLite makes its -wal and -shm files with the same mode).
        if path != ":memory:", !path.hasPrefix("file:"), !FileManager.default.fileExists(atPath: path) {
            let fd = Foundation.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 { close(fd) }
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.prepareDatabase { db in
            // WAL with NORMAL: a commit survives a crash of this process, and the file is
            // never corrupt; on power loss the last commits may be lost. Writes that are
            // acknowledged as durable (the chain) raise it to FULL: see `durableWrite`.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        // Checkpoints happen on the writer alone, between its own commits (SQLite's automatic
        // checkpoint every 1,000 pages), and at the last close. Keep it so: a checkpoint from
        // another connection while the writer commits can meet SQLite's WAL-reset bug, which
        // corrupts the database (versions before 3.51.3; Debian 12 links 3.40.1). Two processes
        // writing one file (each with its own writer) can meet it too. BENCHMARKS.md,
        // "Where a 1 GiB put's time goes", has what moving it elsewhere would have saved.
        let pool = try DatabasePool(path: path, configuration: configuration)
        // Not opened read-only: a read-only connection that closes last cannot checkpoint
        // and remove the WAL, and a cleanly stopped server leaves only its database file.
        var pointConfiguration = Configuration()
        pointConfiguration.busyMode = .timeout(busyTimeout)
        var database = try KeyVaultDatabase(writer: pool, pointReader: { try DatabaseQueue(path: path, configuration: pointConfiguration) })
        database.syncChainWrites = syncChainWrites
        return database
    }

    /// The writer connection's `PRAGMA synchronous` (0 OFF, 1 NORMAL, 2 FULL) inside
    /// a chain write and inside any other write, for tests.
    func synchronousModes() async throws -> (chainWrite: Int, other: Int) {
        let chainWrite = try await durableWrite { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
        let other = try await writer.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
        return (chainWrite, other)
    }

    /// A write transaction that is on disk when it returns, power loss included:
    /// `synchronous = FULL` makes SQLite sync the WAL at this commit, not only at the
    /// next checkpoint. The pragma cannot change inside a transaction, so it is set
    /// around one, on the writer connection, and set back for the other writes
    /// (last-seen, nonces, audit rows), which stay cheap. BENCHMARKS.md has the cost.
    func durableWrite<T: Sendable>(_ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let synced = syncChainWrites
        return try await writer.writeWithoutTransaction { db in
            if synced { try db.execute(sql: "PRAGMA synchronous = FULL") }
            defer { try? db.execute(sql: "PRAGMA synchronous = NORMAL") }
            var result: T?
            try db.inTransaction {
                result = try updates(db)
                return .commit
            }
            return result!
        }
    }

    /// An empty database in memory, for tests.
    package static func inMemory() throws -> KeyVaultDatabase {
        try KeyVaultDatabase(writer: DatabaseQueue())
    }

    /// - Parameter pointReader: made after the migrations; nil: the writer (a queue in memory).
    init(writer: any DatabaseWriter, pointReader: (() throws -> any DatabaseReader)? = nil) throws {
        self.writer = writer
        try Self.migrator.migrate(writer)
        self.pointReader = try pointReader?() ?? writer
    }

    package static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    /// The rows in `table`, for tests that check what the store remembers.
    package func rowCount(of table: String) async throws -> Int {
        try await writer.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table.quotedDatabaseIdentifier)") ?? 0 }
    }
}

extension DatabaseError: StoreContention {
    /// Busy: another connection (another process) held the write lock past the busy timeout.
    /// (Not `SQLITE_LOCKED`: without a shared cache, that is a conflict within one connection, a bug.)
    package var isContention: Bool { resultCode == .SQLITE_BUSY }
    package var contentionDetail: String { "SQLite result code \(resultCode.rawValue)" }
}
