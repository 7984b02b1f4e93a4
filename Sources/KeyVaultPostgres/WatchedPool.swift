import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// The store's way to PostgreSQL: every statement on a connection leased from the pool,
/// its rows collected before the connection goes back, and the lease watched. A
/// connection leased for longer than the deadline is closed: its statement fails, the
/// request gets 503 (``PSQLError``'s ``StoreUnreachable``), and the pool opens a new one.
///
/// Why: PostgreSQL that stops answering without closing anything (its host gone without a
/// word, a failover, a firewall that dropped the connection's state) would otherwise hold
/// each request on that connection until the kernel gives up retransmitting, about 15
/// minutes, and each connection of the pool in turn. postgres-nio sets no TCP keep-alive
/// or user timeout on its sockets, and a query it sent cannot be cancelled.
///
/// A lease is the whole of a transaction, so a statement that waits for another's lock
/// counts too: a deadline of 30 s is far above any statement of this store (the largest
/// moves one chunk of 1 MiB or one account's import of 16 MiB).
package struct WatchedPool: Sendable {
    /// How long a connection may stay leased: far above any statement or transaction of this store.
    package static let deadline: Duration = .seconds(30)

    package let pool: PostgresClient
    let watch: StatementWatch
    let logger: Logger

    init(_ pool: PostgresClient, deadline: Duration, logger: Logger) {
        self.pool = pool
        watch = StatementWatch(deadline: deadline, logger: logger)
        self.logger = logger
    }

    /// One connection of the pool for `body`, watched.
    func withConnection<T>(_ body: (PostgresConnection) async throws -> sending T) async throws -> sending T {
        try await pool.withConnection { connection in
            let lease = watch.begin(connection)
            defer { watch.end(lease) }
            return try await body(connection)
        }
    }

    /// One statement; all its rows.
    @discardableResult
    package func query(_ query: PostgresQuery, logger: Logger? = nil) async throws -> CollectedRows<PostgresRow> {
        let logger = logger ?? self.logger
        return CollectedRows(try await withConnection { try await $0.query(query, logger: logger).collect() })
    }

    /// One prepared statement (prepared on the connection the first time it runs there); all its rows.
    func execute<Statement: PostgresPreparedStatement>(_ statement: Statement, logger: Logger? = nil) async throws
        -> CollectedRows<Statement.Row> {
        let logger = logger ?? self.logger
        return CollectedRows(try await withConnection { connection in
            var rows: [Statement.Row] = []
            for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
            return rows
        })
    }

    /// A transaction (BEGIN, `body`, COMMIT, or ROLLBACK when it throws) on one connection, watched.
    func withTransaction<T>(logger: Logger, _ body: (PostgresConnection) async throws -> sending T) async throws -> sending T {
        try await withConnection { try await $0.withTransaction(logger: logger, body) }
    }

    /// Runs the pool and the watch until the task is cancelled (or a graceful shutdown).
    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await watch.run() }
            await pool.run()
            group.cancelAll()
        }
    }
}

/// The rows of a statement, read whole: iterate them as the pool's row sequence, or take them.
package struct CollectedRows<Row>: AsyncSequence {
    package typealias Element = Row
    package let rows: [Row]

    init(_ rows: [Row]) { self.rows = rows }

    @discardableResult
    package func collect() -> [Row] { rows }

    package struct AsyncIterator: AsyncIteratorProtocol {
        var base: IndexingIterator<[Row]>
        package mutating func next() async throws -> Row? { base.next() }
    }

    package func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: rows.makeIterator()) }
}

extension CollectedRows where Row == PostgresRow {
    /// Each row decoded as the columns given, as `PostgresRowSequence.decode`.
    package func decode<each Column: PostgresDecodable & SendableMetatype>(_ columns: (repeat each Column).Type)
        -> AsyncThrowingMapSequence<CollectedRows<PostgresRow>, (repeat each Column)> {
        map { row in try row.decode((repeat each Column).self) }
    }
}

/// The connections leased now, and since when; ``run()`` closes each leased longer than the
/// deadline. Starting and ending a lease takes a lock for a dictionary update: no timer per
/// statement (postgres-nio's timers cost a quarter of a session read, BENCHMARKS.md).
final class StatementWatch: Sendable {
    let deadline: Duration
    private let logger: Logger
    private let leases = Mutex(Leases())

    struct Leases {
        var next: UInt64 = 0
        var open: [UInt64: (connection: PostgresConnection, since: ContinuousClock.Instant)] = [:]
    }

    init(deadline: Duration, logger: Logger) {
        self.deadline = deadline
        self.logger = logger
    }

    func begin(_ connection: PostgresConnection) -> UInt64 {
        let now = ContinuousClock.now
        return leases.withLock {
            $0.next += 1
            $0.open[$0.next] = (connection, now)
            return $0.next
        }
    }

    func end(_ lease: UInt64) {
        _ = leases.withLock { $0.open.removeValue(forKey: lease) }
    }

    /// Closes every connection leased longer than the deadline at `now`; how many.
    @discardableResult
    func closeOverdue(at now: ContinuousClock.Instant = .now) -> Int {
        let overdue = leases.withLock { leases in
            let late = leases.open.filter { now - $0.value.since > deadline }
            for key in late.keys { leases.open.removeValue(forKey: key) }
            return late.values.map(\.connection)
        }
        for connection in overdue {
            logger.error("PostgreSQL gave no answer on a connection within the deadline: it was closed, and its request answered 503",
                         metadata: ["deadline": .string("\(deadline)")])
            let _: EventLoopFuture<Void> = connection.close()
        }
        return overdue.count
    }

    /// Looks at the leases a few times per deadline (at least every second) until cancelled.
    func run() async {
        let interval = min(deadline / 4, .seconds(1))
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            closeOverdue()
        }
    }
}
