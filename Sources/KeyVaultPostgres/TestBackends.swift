import Foundation
import KeyVaultModel
import KeyVaultStore
import PostgresNIO

/// For this package's tests: the store backends a test runs against. SQLite always;
/// PostgreSQL too when `KEYVAULT_TEST_DATABASE_URL` names one (Scripts/with-postgres.sh
/// starts a throwaway one and sets it). Each run gets a fresh, empty store.
package enum StoreBackend: Sendable, CustomStringConvertible {
    case sqlite
    case postgres(PostgresURL)

    /// The backends of this run, read once from the environment.
    package static let all: [StoreBackend] = {
        guard let text = ProcessInfo.processInfo.environment["KEYVAULT_TEST_DATABASE_URL"], !text.isEmpty else { return [.sqlite] }
        do {
            return [.sqlite, .postgres(try PostgresURL(text))]
        } catch {
            fatalError("KEYVAULT_TEST_DATABASE_URL is not a PostgreSQL URL: \(error)")
        }
    }()

    /// Whether several service processes can share this backend's store.
    package var isShared: Bool {
        if case .postgres = self { true } else { false }
    }

    package var description: String {
        switch self {
        case .sqlite: "SQLite"
        case .postgres: "PostgreSQL"
        }
    }

    /// Runs `body` on a fresh, empty store of this backend (on PostgreSQL, a schema of its own).
    package func withStore<T: Sendable>(_ body: (any KeyVaultRepository) async throws -> T) async throws -> T {
        switch self {
        case .sqlite: try await body(KeyVaultDatabase.inMemory())
        case .postgres(let url): try await PostgresKeyVaultDatabase.withTemporarySchema(url) { try await body($0) }
        }
    }
}

extension PostgresKeyVaultDatabase {
    /// For the TLS tests: whether a session opened as `url` says runs over TLS
    /// (PostgreSQL's own `pg_stat_ssl` for that session).
    package static func sessionUsesTLS(_ url: PostgresURL) async throws -> Bool {
        let connection = try await PostgresConnection.connect(configuration: try url.connectionConfiguration, id: 0, logger: quietLogger)
        defer { Task { try? await connection.close() } }
        for try await ssl in try await connection.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", logger: quietLogger)
            .decode(Bool.self) {
            return ssl
        }
        return false
    }
}

extension PostgresKeyVaultDatabase {
    /// For the durability test: `synchronous_commit` inside a chain write's transaction and
    /// for any other statement, as PostgreSQL itself reports them.
    package func synchronousModes() async throws -> (chainWrite: String, other: String) {
        func setting(_ rows: some AsyncSequence<PostgresRow, any Error>) async throws -> String {
            for try await row in rows { return try row.decode(String.self) }
            return "?"
        }
        let chainWrite = try await durableTransaction { db in
            try await setting(db.query("SHOW synchronous_commit", logger: logger))
        }
        return (chainWrite, try await setting(client.query("SHOW synchronous_commit", logger: logger)))
    }
}

extension PostgresKeyVaultDatabase {
    /// For the durability test: from now on, every write to one of `tables` (in this
    /// store's schema) records the table and the `synchronous_commit` its transaction
    /// commits with, as PostgreSQL reports it inside that transaction.
    package func recordCommitModes(of tables: [String]) async throws {
        try await client.query("CREATE TABLE commit_modes (tbl TEXT NOT NULL, mode TEXT NOT NULL)", logger: logger)
        try await client.query("""
            CREATE FUNCTION record_commit_mode() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO commit_modes VALUES (TG_TABLE_NAME, current_setting('synchronous_commit'));
                RETURN NULL;
            END $$
            """, logger: logger)
        for table in tables {
            try await client.query("""
                CREATE TRIGGER record_commit_mode AFTER INSERT OR UPDATE OR DELETE ON \(unescaped: table)
                FOR EACH STATEMENT EXECUTE FUNCTION record_commit_mode()
                """, logger: logger)
        }
    }

    /// For the rolling-upgrade test: begins an upload as a replica from before the
    /// upload starter (migration v9) wrote one, naming no starter.
    package func beginUploadAsAnOlderReplica(_ account: AccountID, member: MemberID, address: String, upload: String) async throws {
        try await client.query("""
            INSERT INTO attachment_uploads (upload, account, member, address, key, chunk_shift, size, chunks, created)
            VALUES (\(upload), \(account.rawValue), \(member.rawValue), \(address), \(Data([7])), 10, 10, 1, \(KeyVaultDatabase.now()))
            """, logger: logger)
    }

    /// What ``recordCommitModes(of:)`` recorded: per table, the modes its writes committed with.
    package func commitModes() async throws -> [String: Set<String>] {
        var modes: [String: Set<String>] = [:]
        for try await (table, mode) in try await client.query("SELECT tbl, mode FROM commit_modes", logger: logger).decode((String, String).self) {
            modes[table, default: []].insert(mode)
        }
        return modes
    }
}

extension PostgresKeyVaultDatabase {
    /// For the lock-order tests: takes the locks a completion of upload `upload` takes, in
    /// its order, in a transaction of its own: the upload's row; then, after `during` (which
    /// starts writes that may wait for that row), the row of the attachment at `address`
    /// (when one is there) and `account`'s audit lock. A write that takes either of those
    /// before the upload's row deadlocks with it.
    package func completingUpload(_ upload: String, account: AccountID, member: MemberID, address: String,
                                  during: () async throws -> Void) async throws {
        try await transaction { db in
            _ = try await db.query("SELECT 1 FROM attachment_uploads WHERE upload = \(upload) FOR UPDATE", logger: logger).collect()
            try await during()
            _ = try await db.query("""
                SELECT 1 FROM attachments WHERE account = \(account.rawValue) AND member = \(member.rawValue) AND address = \(address) FOR UPDATE
                """, logger: logger).collect()
            try await insertAudit(db, account: account, event: .attachmentPut, device: nil, detail: "lock order")
        }
    }

    /// For the lock tests: runs `body` while a transaction of its own holds device `id`'s row
    /// (`FOR UPDATE`, as a revocation or a deletion in progress does).
    package func holdingDeviceRow<T: Sendable>(_ id: DeviceID, _ body: () async throws -> T) async throws -> T {
        try await transaction { db in
            _ = try await db.query("SELECT 1 FROM devices WHERE id = \(id.rawValue) FOR UPDATE", logger: logger).collect()
            return try await body()
        }
    }
}

extension PostgresKeyVaultDatabase {
    /// For the lock-order tests (a transaction run again would hide a deadlock) and the
    /// contention tests: how many transactions ran again after losing a race for a lock.
    package var transactionsRunAgain: Int { reruns.value }

    /// For the contention tests: the next `times` inserts into `table` fail as PostgreSQL
    /// fails the victim of a deadlock (`40P01`) or a transaction it could not serialize
    /// (`40001`), rolling back their transaction. (A sequence counts them: it is not
    /// rolled back with the transaction.)
    package func failingInserts(into table: String, sqlState: String, times: Int) async throws {
        try await client.query("CREATE SEQUENCE contention_count", logger: logger)
        try await client.query("""
            CREATE FUNCTION contention() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF nextval('contention_count') <= \(unescaped: String(times)) THEN
                    RAISE EXCEPTION 'contention injected by a test' USING ERRCODE = '\(unescaped: sqlState)';
                END IF;
                RETURN NEW;
            END $$
            """, logger: logger)
        try await client.query("CREATE TRIGGER contention BEFORE INSERT ON \(unescaped: table) FOR EACH ROW EXECUTE FUNCTION contention()",
                               logger: logger)
    }
}

extension PostgresKeyVaultDatabase {
    /// For the replica tests of the store: two stores on one fresh schema, each with its own
    /// pool and caches, as two replicas have.
    package static func withTwoReplicas<T: Sendable>(
        _ url: PostgresURL, _ body: (PostgresKeyVaultDatabase, PostgresKeyVaultDatabase) async throws -> T
    ) async throws -> T {
        try await withEmptySchema(url) { schema in
            let first = try await connect(url, logger: quietLogger, maximumConnections: 4, schema: schema)
            let second = try await connect(url, logger: quietLogger, maximumConnections: 4, schema: schema)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await first.run() }
                group.addTask { await second.run() }
                defer { group.cancelAll() }
                return try await body(first, second)
            }
        }
    }
}
