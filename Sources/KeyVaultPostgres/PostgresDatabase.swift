import Foundation
import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import Synchronization
import KeyVaultModel
import KeyVaultStore

/// The service's storage on PostgreSQL, for several `keyctl serve` replicas on one
/// database: a `PostgresClient` pool, append-only migrations taken under an advisory
/// lock, and every check-then-write made atomic by the database itself (a
/// compare-and-swap on the chain head, `ON CONFLICT`, row and advisory locks), never
/// by this process's memory. Statement arguments are bound, never logged.
///
/// The pool only hands out connections while ``client`` runs: run it as a service
/// (``run()``) for as long as the store is used.
package struct PostgresKeyVaultDatabase: KeyVaultRepository {
    /// Replicas share it: see ``KeyVaultRepository/isSharedWithOtherProcesses``.
    package var isSharedWithOtherProcesses: Bool { true }

    /// The pool, each statement's connection watched (``WatchedPool``).
    package let client: WatchedPool
    let logger: Logger
    /// When this process last swept each table of expired rows.
    let sweeps = SweepClock()
    /// Transactions run again since start because they lost a race for a lock (``transaction(_:)``).
    let reruns = SharedCount()
    /// Concurrent requests' nonces, and their reads of their boxes, sent together.
    let nonceBatches: StatementBatches<NonceBatches.Request, [String], NonceBatches.Answer>
    let boxBatches: StatementBatches<RecipientBoxes.Request, [String], RecipientBoxes.Answer>
    /// This replica's copies of the boxes its devices read, each under the head it was read at.
    let boxCopies = BoxCopies()

    init(client: WatchedPool, logger: Logger) {
        self.client = client
        self.logger = logger
        nonceBatches = NonceBatches.make(client: client, logger: logger)
        boxBatches = RecipientBoxes.batches(client: client, logger: logger)
    }

    /// Connects once to check that the database is there and to migrate it (under an
    /// advisory lock, so replicas that start together migrate once), then makes the pool.
    ///
    /// The pool schedules no timer per query. postgres-nio's pool starts an idle-timeout timer
    /// (a `Task.sleep`, through Dispatch) each time it parks a connection above its minimum,
    /// and a keep-alive timer each time it parks any connection when keep-alive queries are
    /// on: about a quarter of a replica's CPU per session read (BENCHMARKS.md). So a service
    /// keeps all its connections open (`keepAllOpen`: opened at start, never timed out) and
    /// runs no keep-alive queries; PostgreSQL's own TCP keep-alives (every 30 s on an idle
    /// connection, set per session in ``startupParameters(_:)``) keep a path through NAT and
    /// firewalls open, and let PostgreSQL find a replica that died. A replica finds a server
    /// that stopped answering through ``WatchedPool``: a connection leased for longer than
    /// `statementDeadline` is closed (postgres-nio sets no keep-alive or timeout on its side).
    /// When the close reaches PostgreSQL, it ends that connection's query within a second and
    /// lets go of its locks, where it takes ``clientCheck``.
    ///
    /// - Parameters:
    ///   - keepAllOpen: open all `maximumConnections` at start (a service); otherwise open them
    ///     on demand and close them after a minute idle (tests, which make many pools).
    ///   - schema: the schema to use instead of the user's default (tests each take their own).
    ///   - statementDeadline: how long a connection may be leased for one statement or
    ///     transaction before it is closed (``WatchedPool``); shorter only in tests.
    /// - Throws: ``ConfigurationError`` (kind `database`) saying why the database cannot be used (never
    ///   quoting the password).
    package static func connect(_ url: PostgresURL, logger: Logger, maximumConnections: Int = 20, keepAllOpen: Bool = false,
                               schema: String? = nil, statementDeadline: Duration = WatchedPool.deadline) async throws -> PostgresKeyVaultDatabase {
        try await migrate(url, logger: logger, schema: schema)
        let checksClients = await checksClients(url, schema: schema, logger: logger)
        var configuration = try url.clientConfiguration
        configuration.options.maximumConnections = maximumConnections
        configuration.options.minimumConnections = keepAllOpen ? maximumConnections : 0
        configuration.options.keepAliveBehavior = nil
        configuration.options.additionalStartupParameters = startupParameters(schema)
            + (checksClients ? [clientCheck] : [])
        let pool = PostgresClient(configuration: configuration, backgroundLogger: logger)
        return PostgresKeyVaultDatabase(client: WatchedPool(pool, deadline: statementDeadline, logger: logger), logger: logger)
    }

    /// Connects, applies the migrations not applied yet, and disconnects.
    ///
    /// - Throws: ``ConfigurationError`` (kind `database`).
    package static func migrate(_ url: PostgresURL, logger: Logger = quietLogger, schema: String? = nil) async throws {
        var configuration = try url.connectionConfiguration
        configuration.options.additionalStartupParameters = startupParameters(schema)
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        } catch {
            throw ConfigurationError.postgres(url, Self.describe(error))
        }
        do {
            try await migrate(connection, logger: logger)
            try? await connection.close()
        } catch {
            try? await connection.close()
            throw ConfigurationError.postgres(url, "migrating it failed: " + Self.describe(error))
        }
    }

    /// Every commit returns before its WAL record is flushed (`synchronous_commit = off`):
    /// nonces, last-seen, audit rows, attachments, as SQLite's `NORMAL` (a power cut may lose
    /// the last moments' writes, never corrupt). Chain writes, and recovery's single-use
    /// values and failure counts, set it back on for their own transaction
    /// (``durableTransaction(_:)``): a key event the client was told is stored, a spent
    /// recovery token, a counted guess survive a power cut.
    ///
    /// TCP keep-alives from PostgreSQL's side (ignored on a Unix socket): a probe after 30 s
    /// idle, then every 10 s, the connection closed after 3 unanswered.
    private static func startupParameters(_ schema: String?) -> [(String, String)] {
        [("synchronous_commit", "off"),
         ("tcp_keepalives_idle", "30"), ("tcp_keepalives_interval", "10"), ("tcp_keepalives_count", "3")]
            + (schema.map { [("search_path", $0)] } ?? [])
    }

    /// Asks PostgreSQL to check, each second while it runs a query, that the client is still
    /// there (`client_connection_check_interval`, in ms). When ``WatchedPool`` closes a
    /// connection past its deadline and the close reaches PostgreSQL, its query is then ended
    /// within a second and its transaction's locks let go, instead of going on until it next
    /// writes to the connection, holding what it locked (a chain write's account row, every
    /// other chain write of the account waiting behind it) for as long as it waits. The cost: a
    /// poll of the socket each second while a query runs. PostgreSQL takes it from version 14
    /// on Linux (later versions on other systems).
    static let clientCheck = ("client_connection_check_interval", "1000")

    /// Whether a connection that asks for ``clientCheck`` at its start, as the pool's do, is
    /// taken: not by a PostgreSQL before 14 or on a system without the check, nor by a pooler
    /// between that refuses startup parameters it does not know (PgBouncer). Where it is not,
    /// the service runs without it, and says so once.
    private static func checksClients(_ url: PostgresURL, schema: String?, logger: Logger) async -> Bool {
        do {
            var configuration = try url.connectionConfiguration
            configuration.options.additionalStartupParameters = startupParameters(schema) + [clientCheck]
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 2, logger: logger)
            try? await connection.close()
            return true
        } catch {
            logger.notice("""
                PostgreSQL (or a pooler between) does not take client_connection_check_interval (PostgreSQL 14 and later, on \
                Linux): a query whose connection was closed past its deadline goes on, holding its locks, until it next writes \
                to the connection
                """, metadata: ["store": .string(describe(error))])
            return false
        }
    }

    /// Runs the pool, and the watch on its connections, until the task is cancelled (or a
    /// graceful shutdown, as a service).
    package func run() async { await client.run() }

    /// The database watch says PostgreSQL does not answer: connections leased longer than a
    /// request's deadline are closed, those of the long deadline too (an upload's completion
    /// stuck on a silent connection would otherwise hold its connection for 10 minutes, and
    /// with a pool full of them the database would look down after it answers again).
    package func storeDoesNotAnswer() {
        client.watch.closeOverdue(deadline: client.watch.deadline)
    }

    /// A PostgreSQL error as a sentence: the server's message and SQLSTATE, or the
    /// connection failure, without the query's arguments.
    static func describe(_ error: any Error) -> String {
        if let error = error as? TransactionFailure { return describe(error.error) }
        if let error = error as? PostgresTransactionError,  // the migrations' (on a connection of their own)
           let inner = error.closureError ?? error.commitError ?? error.beginError ?? error.rollbackError {
            return describe(inner)
        }
        guard let error = error as? PSQLError else { return String(describing: error) }
        if let message = error.serverInfo?[.message] {
            return message + (error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? "")
        }
        if let underlying = error.underlying { return "\(error.code): \(underlying)" }
        return "\(error.code)"
    }

    // MARK: Migrations

    /// The schema, as migrations. Append-only: never edit a registered migration; add a
    /// new one. The columns are those of the SQLite schema after its migrations v1-v5;
    /// ordered text columns sort bytewise (`COLLATE "C"`), as in SQLite.
    static let migrations: [(name: String, statements: [String])] = [
        ("v1", [
            """
            CREATE TABLE accounts (
                id TEXT PRIMARY KEY,
                created BIGINT NOT NULL,
                head TEXT NOT NULL,
                sequence BIGINT NOT NULL)
            """,
            """
            CREATE TABLE links (
                account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                sequence BIGINT NOT NULL,
                hash TEXT NOT NULL,
                json BYTEA NOT NULL,
                PRIMARY KEY (account, sequence))
            """,
            """
            CREATE TABLE devices (
                id TEXT PRIMARY KEY,
                account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                name TEXT NOT NULL,
                signing_key BYTEA NOT NULL,
                box_key BYTEA NOT NULL,
                added BIGINT NOT NULL,
                revoked BIGINT,
                last_seen BIGINT)
            """,
            "CREATE INDEX devices_account ON devices(account, added)",
            """
            CREATE TABLE recovery_slots (
                account TEXT PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
                json BYTEA NOT NULL)
            """,
            """
            CREATE TABLE key_boxes (
                account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                generation BIGINT NOT NULL,
                recipient TEXT COLLATE "C" NOT NULL,
                json BYTEA NOT NULL,
                PRIMARY KEY (account, generation, recipient))
            """,
            """
            CREATE TABLE member_wraps (
                account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                member TEXT COLLATE "C" NOT NULL,
                member_generation BIGINT NOT NULL,
                master_generation BIGINT NOT NULL,
                envelope TEXT NOT NULL,
                PRIMARY KEY (account, member, member_generation, master_generation))
            """,
            """
            CREATE TABLE attachments (
                account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                member TEXT NOT NULL,
                address TEXT COLLATE "C" NOT NULL,
                size BIGINT NOT NULL,
                created BIGINT NOT NULL,
                key BYTEA NOT NULL,
                data BYTEA NOT NULL,
                PRIMARY KEY (account, member, address))
            """,
            // Ids are taken under a per-account lock held to commit (`insertAudit`), so
            // within an account they become visible in id order: paging never skips one.
            """
            CREATE TABLE audit (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                time BIGINT NOT NULL,
                event TEXT NOT NULL,
                device TEXT,
                detail TEXT)
            """,
            "CREATE INDEX audit_account ON audit(account, id)",
            """
            CREATE TABLE link_requests (
                account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                code TEXT NOT NULL,
                status TEXT NOT NULL,
                expires BIGINT NOT NULL,
                request BYTEA NOT NULL,
                approver TEXT,
                approver_nonce TEXT,
                device_nonce TEXT,
                client TEXT NOT NULL,
                PRIMARY KEY (account, code))
            """,
            "CREATE INDEX link_requests_client ON link_requests(client, status, expires)",
            "CREATE INDEX link_requests_expires ON link_requests(status, expires)",
            // No foreign key: a deleted account's nonces still refuse replays until they expire.
            """
            CREATE TABLE request_nonces (
                device TEXT NOT NULL,
                nonce TEXT NOT NULL,
                time BIGINT NOT NULL,
                PRIMARY KEY (device, nonce))
            """,
            "CREATE INDEX request_nonces_time ON request_nonces(time)",
        ]),
        // As SQLite's v6: recovery challenges and tokens used once, failed proofs counted.
        ("v2 recovery state", [
            """
            CREATE TABLE used_once (
                kind TEXT NOT NULL,
                value TEXT NOT NULL,
                expires BIGINT NOT NULL,
                PRIMARY KEY (kind, value))
            """,
            "CREATE INDEX used_once_expires ON used_once(expires)",
            "CREATE TABLE failures (key TEXT NOT NULL, time BIGINT NOT NULL)",
            "CREATE INDEX failures_key ON failures(key, time)",
            "CREATE INDEX failures_time ON failures(time)",
        ]),
        // As SQLite's v7: the sharing relay (identity wraps, share boxes, contact requests).
        ("v3 sharing relay", [
            """
            CREATE TABLE identity_wraps (
                account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                identity_generation BIGINT NOT NULL,
                master_generation BIGINT NOT NULL,
                envelope TEXT NOT NULL,
                PRIMARY KEY (account, identity_generation, master_generation))
            """,
            """
            CREATE TABLE share_boxes (
                account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                grantee TEXT NOT NULL,
                member TEXT COLLATE "C" NOT NULL,
                member_generation BIGINT NOT NULL,
                grant_seq BIGINT NOT NULL,
                box BYTEA NOT NULL,
                PRIMARY KEY (account, grantee, member, member_generation, grant_seq))
            """,
            "CREATE INDEX share_boxes_grantee ON share_boxes(grantee)",
            """
            CREATE TABLE contact_requests (
                id TEXT COLLATE "C" PRIMARY KEY,
                from_account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                to_account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                expires BIGINT NOT NULL,
                info BYTEA NOT NULL)
            """,
            "CREATE INDEX contact_requests_from ON contact_requests(from_account, expires)",
            "CREATE INDEX contact_requests_to ON contact_requests(to_account, expires)",
            "CREATE INDEX contact_requests_expires ON contact_requests(expires)",
        ]),
        // As SQLite's v8: the newest head statement of each device.
        ("v4 head statements", [
            """
            CREATE TABLE head_statements (
                account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                device TEXT COLLATE "C" NOT NULL,
                time BIGINT NOT NULL,
                statement BYTEA NOT NULL,
                PRIMARY KEY (account, device))
            """,
        ]),
        // As SQLite's v9: a link's sequence as a number (it was the detail "sequence N").
        ("v5 audit sequence", [
            "ALTER TABLE audit ADD COLUMN sequence BIGINT",
            """
            UPDATE audit SET sequence = substr(detail, 10)::bigint, detail = NULL
                WHERE event LIKE 'link.%' AND detail ~ '^sequence [0-9]+$'
            """,
            "UPDATE audit SET sequence = 0 WHERE event = 'link.genesis'",
        ]),
        // As SQLite's v10: attachments uploaded in chunks.
        ("v6 attachments in chunks", [
            "ALTER TABLE attachments ADD COLUMN upload TEXT",
            """
            CREATE TABLE attachment_uploads (
                upload TEXT PRIMARY KEY,
                account TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                member TEXT NOT NULL,
                address TEXT COLLATE "C" NOT NULL,
                key BYTEA NOT NULL,
                chunk_shift INTEGER NOT NULL,
                size BIGINT NOT NULL,
                chunks BIGINT NOT NULL,
                created BIGINT NOT NULL,
                complete BOOLEAN NOT NULL DEFAULT false)
            """,
            "CREATE INDEX attachment_uploads_by_account ON attachment_uploads (account, complete, created)",
            """
            CREATE TABLE attachment_chunks (
                upload TEXT NOT NULL REFERENCES attachment_uploads(upload) ON DELETE CASCADE,
                idx BIGINT NOT NULL,
                data BYTEA NOT NULL,
                PRIMARY KEY (upload, idx))
            """,
        ]),
        // As SQLite's v11: an attachment's sealed name and details.
        ("v7 attachment names", ["ALTER TABLE attachments ADD COLUMN meta BYTEA"]),
        // As SQLite's v12: the head a deleted account had, and the device that deleted it.
        ("v8 deleted accounts", ["CREATE TABLE deleted_accounts (id TEXT PRIMARY KEY, sequence BIGINT NOT NULL, head TEXT NOT NULL, device TEXT, deleted BIGINT NOT NULL)"]),
        // As SQLite's v13: the account whose device began an upload (itself, or a grantee through the relay).
        ("v9 upload starters", ["ALTER TABLE attachment_uploads ADD COLUMN started_by TEXT NOT NULL DEFAULT ''",
                                "UPDATE attachment_uploads SET started_by = account"]),
        // A replica not upgraded yet inserts no starter: the trigger makes it the account
        // (and those it inserted before this migration are the account's too). The index:
        // a deleted account's uploads in flight in other accounts go with it. Idempotent: a
        // database of a build of the same day may have them from its v9.
        ("v10 upload starters of older replicas", [
                                "UPDATE attachment_uploads SET started_by = account WHERE started_by = ''",
                                "CREATE INDEX IF NOT EXISTS attachment_uploads_unfinished_by_starter ON attachment_uploads (started_by) WHERE NOT complete",
                                """
                                CREATE OR REPLACE FUNCTION keyvault_upload_starter() RETURNS trigger LANGUAGE plpgsql AS $$
                                BEGIN
                                    IF NEW.started_by = '' THEN NEW.started_by := NEW.account; END IF;
                                    RETURN NEW;
                                END $$
                                """,
                                "DROP TRIGGER IF EXISTS keyvault_upload_starter ON attachment_uploads",
                                """
                                CREATE TRIGGER keyvault_upload_starter BEFORE INSERT ON attachment_uploads
                                FOR EACH ROW EXECUTE FUNCTION keyvault_upload_starter()
                                """]),
    ]

    /// Advisory lock keys (64-bit, this application's own).
    enum LockKey {
        static let migrations: Int64 = 0x4B56_4D49_4752_0001  // "KVMIGR"
        static let linkRequests: Int64 = 0x4B56_4C49_4E4B_0001  // "KVLINK"
        /// The seed of the per-key locks of failure counts.
        static let failures: Int64 = 0x4B56_4641_494C_0001  // "KVFAIL"
    }

    /// Applies the migrations not applied yet, in one transaction under an advisory
    /// lock: a replica that starts meanwhile waits, then finds them applied.
    static func migrate(_ connection: PostgresConnection, logger: Logger) async throws {
        try await connection.withTransaction(logger: logger) { connection in
            _ = try await connection.query("SELECT pg_advisory_xact_lock(\(LockKey.migrations))", logger: logger).collect()
            try await connection.query("""
                CREATE TABLE IF NOT EXISTS keyvault_migrations (name TEXT PRIMARY KEY, applied BIGINT NOT NULL)
                """, logger: logger)
            var applied = Set<String>()
            for try await name in try await connection.query("SELECT name FROM keyvault_migrations", logger: logger).decode(String.self) {
                applied.insert(name)
            }
            for migration in migrations where !applied.contains(migration.name) {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("""
                    INSERT INTO keyvault_migrations (name, applied) VALUES (\(migration.name), \(KeyVaultDatabase.now()))
                    """, logger: logger)
            }
        }
    }

    /// Runs `body` on a store in a new schema of its own, with its pool running, then drops
    /// the schema: tests share one database and run in parallel.
    package static func withTemporarySchema<T: Sendable>(
        _ url: PostgresURL, logger: Logger = quietLogger, statementDeadline: Duration = WatchedPool.deadline,
        _ body: (PostgresKeyVaultDatabase) async throws -> T
    ) async throws -> T {
        try await withEmptySchema(url, logger: logger) { schema in
            let database = try await connect(url, logger: logger, maximumConnections: 8, schema: schema, statementDeadline: statementDeadline)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await database.run() }
                defer { group.cancelAll() }
                return try await body(database)
            }
        }
    }

    /// Runs `body` with the name of a new, empty schema, then drops it.
    package static func withEmptySchema<T: Sendable>(
        _ url: PostgresURL, logger: Logger = quietLogger, _ body: (String) async throws -> T
    ) async throws -> T {
        try await withTemporary(url, logger: logger, create: { "CREATE SCHEMA \($0)" }, drop: { "DROP SCHEMA IF EXISTS \($0) CASCADE" }, body)
    }

    /// Runs `body` with the name of a new, empty database in the cluster `url` is on,
    /// then drops it (for tests that start `keyctl serve` processes on a database).
    package static func withEmptyDatabase<T: Sendable>(
        _ url: PostgresURL, logger: Logger = quietLogger, _ body: (String) async throws -> T
    ) async throws -> T {
        try await withTemporary(url, logger: logger, create: { "CREATE DATABASE \($0)" },
                                drop: { "DROP DATABASE IF EXISTS \($0) WITH (FORCE)" }, body)
    }

    private static func withTemporary<T: Sendable>(
        _ url: PostgresURL, logger: Logger, create: (String) -> String, drop: (String) -> String, _ body: (String) async throws -> T
    ) async throws -> T {
        let name = "test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let admin = try await PostgresConnection.connect(configuration: try url.connectionConfiguration, id: 0, logger: logger)
        let result: Result<T, any Error>
        do {
            try await admin.query(PostgresQuery(unsafeSQL: create(name)), logger: logger)
            result = .success(try await body(name))
        } catch {
            result = .failure(error)
        }
        _ = try? await admin.query(PostgresQuery(unsafeSQL: drop(name)), logger: logger)
        try? await admin.close()
        return try result.get()
    }
}

/// Tests' logger: the pool's connection churn as schemas come and go is not news.
let quietLogger: Logger = {
    var logger = Logger(label: "keyvault-postgres-test")
    logger.logLevel = .error
    return logger
}()

extension ConfigurationError {
    /// Why the PostgreSQL database at `url` cannot be used at start.
    static func postgres(_ url: PostgresURL, _ reason: String) -> ConfigurationError {
        ConfigurationError(reason, kind: .database, database: url.description)
    }
}

extension PostgresURL {
    /// - Throws: ``ConfigurationError`` (kind `database`) when the CA file cannot be read.
    var connectionConfiguration: PostgresConnection.Configuration {
        get throws {
            let tls: PostgresConnection.Configuration.TLS
            if let configuration = try tlsConfiguration {
                do {
                    tls = .require(try NIOSSLContext(configuration: configuration))
                } catch {
                    throw ConfigurationError.postgres(self, "its TLS settings cannot be used (is sslrootcert a PEM certificate file?): \(error)")
                }
            } else {
                tls = .disable
            }
            return configuration(tcp: { .init(host: $0, port: $1, username: user, password: password, database: database, tls: tls) },
                                 socket: { .init(unixSocketPath: $0, username: user, password: password, database: database) })
        }
    }

    var clientConfiguration: PostgresClient.Configuration {
        get throws {
            let tls: PostgresClient.Configuration.TLS = try tlsConfiguration.map { .require($0) } ?? .disable
            return configuration(tcp: { .init(host: $0, port: $1, username: user, password: password, database: database, tls: tls) },
                                 socket: { .init(unixSocketPath: $0, username: user, password: password, database: database) })
        }
    }

    /// What `sslmode` and `sslrootcert` ask for; nil without TLS.
    private var tlsConfiguration: TLSConfiguration? {
        get throws {
            var configuration = TLSConfiguration.makeClientConfiguration()
            switch tls {
            case .disable: return nil
            case .require: configuration.certificateVerification = .none
            case .verifyCA: configuration.certificateVerification = .noHostnameVerification
            case .verifyFull: configuration.certificateVerification = .fullVerification
            }
            if let rootCertificate {
                guard FileManager.default.isReadableFile(atPath: rootCertificate) else {
                    throw ConfigurationError.postgres(self, "its sslrootcert \(rootCertificate) cannot be read")
                }
                configuration.trustRoots = .file(rootCertificate)
            }
            return configuration
        }
    }

    /// The socket of a directory is `.s.PGSQL.<port>` there, as libpq names it.
    private func configuration<C>(tcp: (String, Int) -> C, socket: (String) -> C) -> C {
        switch endpoint {
        case .tcp(let host, let port): tcp(host, port)
        case .socket(let directory, let port): socket((directory.hasSuffix("/") ? directory : directory + "/") + ".s.PGSQL.\(port)")
        }
    }
}

/// A replica's copies of the key boxes its devices read on the request path, each kept with
/// the head of its account it was read at, in the same statement. Boxes change only with the
/// head (every write of them is a chain write, which moves it), so a copy is the store's
/// answer for a request whose own nonce statement saw that very head: a rotation through any
/// replica moves the head, and the next request reads the store again. Past `capacity`
/// bytes, copies are dropped (any: a copy dropped is a read from the store).
package final class BoxCopies: Sendable {
    /// At most this many bytes in all (the boxes, their key and a fixed overhead per copy and
    /// per box), and none kept of a read above `largest` (an account rotated many times
    /// without a reset): memory bounded whatever the accounts.
    package static let capacity = 16 << 20, largest = 64 << 10
    private struct Copies {
        var byKey: [String: (head: HeadSeen, boxes: [Data], bytes: Int)] = [:]
        var bytes = 0
    }
    private let copies = Mutex(Copies())

    package init() {}

    /// The bytes counted for the copies kept, for the test of the bound.
    package var bytes: Int { copies.withLock { $0.bytes } }

    private static func key(_ account: String, _ recipient: String) -> String { account + " " + recipient }

    package func boxes(_ account: String, _ recipient: String, at head: HeadSeen) -> [Data]? {
        copies.withLock { copies in
            guard let copy = copies.byKey[Self.key(account, recipient)], copy.head == head else { return nil }
            return copy.boxes
        }
    }

    package func keep(_ boxes: [Data], _ account: String, _ recipient: String, at head: HeadSeen) {
        let key = Self.key(account, recipient)
        let bytes = boxes.reduce(0) { $0 + $1.count + 32 } + key.utf8.count + 128
        guard bytes <= Self.largest else { return }
        copies.withLock { copies in
            copies.bytes -= copies.byKey.removeValue(forKey: key)?.bytes ?? 0
            while copies.bytes + bytes > Self.capacity, let any = copies.byKey.first {
                copies.byKey.removeValue(forKey: any.key)
                copies.bytes -= any.value.bytes
            }
            copies.byKey[key] = (head, boxes, bytes)
            copies.bytes += bytes
        }
    }
}

/// A count the copies of a store value share.
final class SharedCount: Sendable {
    private let count = Atomic<Int>(0)
    func add() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

/// Amortised sweeps of expired rows: at most one a minute per table and process, not
/// one per request (expired rows are refused by their timestamps before they are looked up).
final class SweepClock: Sendable {
    static let interval: Int64 = 60
    private let last = Mutex<[String: Int64]>([:])

    /// Whether `table` is due a sweep at `time`; if so, the sweep is counted as done.
    func due(_ table: String, at time: Int64) -> Bool {
        last.withLock { last in
            if let previous = last[table], time - previous < Self.interval, time >= previous { return false }
            last[table] = time
            return true
        }
    }
}

/// PostgreSQL's refusals of a transaction that lost a race for a lock: a deadlock's victim
/// (`40P01`), a serialization failure (`40001`), a lock not available (`55P03`).
extension PSQLError: StoreContention {
    package var isContention: Bool {
        guard let state = serverInfo?[.sqlState] else { return false }
        return ["40001", "40P01", "55P03"].contains(state)
    }
    package var contentionDetail: String { serverInfo?[.sqlState].map { "SQLSTATE \($0)" } ?? "\(code)" }
}

/// A connection lost, closed (also by ``StatementWatch``, for a lease past its deadline)
/// or never made; or PostgreSQL's refusals for its connection, its resources or an
/// operator (SQLSTATE classes 08 but a protocol violation, 53, 57: too many connections,
/// out of memory or disk, shutting down, a statement cancelled), or for being a standby
/// (`25006`, a read-only transaction: where a failover leaves a replica's URL). A query
/// cancelled with its task (the client went) is not one: nobody reads that answer.
extension PSQLError: StoreUnreachable {
    package var isUnreachable: Bool {
        if let state = serverInfo?[.sqlState] {
            return state == "25006" || (["08", "53", "57"].contains(String(state.prefix(2))) && state != "08P01")
        }
        return [.clientClosedConnection, .serverClosedConnection, .connectionError, .uncleanShutdown, .poolClosed].contains(code)
    }
    package var unreachableDetail: String { serverInfo?[.sqlState].map { "SQLSTATE \($0)" } ?? "\(code)" }
}

extension TransactionFailure: StoreUnreachable {
    package var isUnreachable: Bool { (error as? any StoreUnreachable)?.isUnreachable ?? false }
    package var unreachableDetail: String { (error as? any StoreUnreachable)?.unreachableDetail ?? "a transaction" }
}

extension TransactionFailure: StoreContention {
    package var isContention: Bool { (error as? any StoreContention)?.isContention ?? false }
    package var contentionDetail: String { (error as? any StoreContention)?.contentionDetail ?? "a transaction" }
}
