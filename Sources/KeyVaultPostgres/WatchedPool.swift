import KeyVaultStore
import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// The store's way to PostgreSQL: every statement on a connection leased from the pool,
/// its rows collected before the connection goes back, and the lease watched. A
/// connection leased for longer than the deadline is closed: its statement fails, the
/// request gets 503 (``PSQLError``'s ``StoreUnreachable``), and the pool opens a new one
/// (at once where it keeps all its connections open, as `keyctl serve` does; else when next asked).
///
/// Why: PostgreSQL that stops answering without closing anything (its host gone without a
/// word, a failover, a firewall that dropped the connection's state) would otherwise hold
/// each request on that connection until the kernel gives up retransmitting, about 15
/// minutes, and each connection of the pool in turn. postgres-nio sets no TCP keep-alive
/// or user timeout on its sockets, and a query it sent cannot be cancelled.
///
/// A lease is the whole of a statement or transaction, with its lock waits: 30 s, far
/// above anything a request does but for a few that can move a great deal, which get
/// ``longDeadline``: an account's import or deletion, a member's removal, a reset or a
/// grant's end, an attachment's deletion or replacement, an upload's start or completion
/// (chunks go with each), the sweep of unfinished uploads. The deadline is a lease's, not a
/// measure of silence: a lease past it is closed whether PostgreSQL is still working on it
/// or not (when the close reaches PostgreSQL, it then ends the query within a second, where
/// it takes ``PostgresKeyVaultDatabase/clientCheck``; else the query goes on until it next
/// writes to the connection). While the database watch says PostgreSQL does not answer,
/// leases past 30 s are closed whatever their deadline
/// (``PostgresKeyVaultDatabase/storeDoesNotAnswer()``). The wait for a connection is not
/// watched: postgres-nio's pool bounds it (10 s per attempt to connect;
/// its circuit breaker fails the waiters after about a minute without any). The migrations
/// at start run on a connection of their own, unwatched.
package struct WatchedPool: Sendable {
    /// How long a connection may stay leased for what a request does.
    package static let deadline: Duration = .seconds(30)
    /// How long for what may delete or write gigabytes in one transaction.
    package static let longDeadline: Duration = .seconds(600)

    private let pool: PostgresClient
    let watch: StatementWatch
    let logger: Logger

    init(_ pool: PostgresClient, deadline: Duration, logger: Logger) {
        self.pool = pool
        watch = StatementWatch(deadline: deadline, logger: logger)
        self.logger = logger
    }

    /// One connection of the pool for `body`, watched: closed when leased longer than
    /// `deadline` (the watch's own when nil).
    ///
    /// - Throws: what `body` throws; ``ConnectionUnavailable`` when none could be had (the pool gave up
    ///   connecting, or is shut down), but for a task cancelled meanwhile.
    func withConnection<T>(deadline: Duration? = nil, _ body: (PostgresConnection) async throws -> sending T) async throws -> sending T {
        try await withLease(deadline: deadline) { connection, _ in try await body(connection) }
    }

    /// ``withConnection(deadline:_:)``, `body` told its lease too (``StatementWatch/isOpen(_:)``).
    private func withLease<T>(deadline: Duration?, _ body: (PostgresConnection, UInt64) async throws -> sending T) async throws -> sending T {
        var leased = false
        do {
            return try await pool.withConnection { connection in
                leased = true
                if connection.isClosed {
                    // PostgreSQL closed it while it was idle, and the pool has not heard yet: a
                    // statement written once its close is done would wait for ever (``release(_:_:)``).
                    try? await connection.closeFuture.get()
                    throw ConnectionUnavailable(detail: "the pool's connection had closed")
                }
                let lease = watch.begin(connection, deadline: deadline)
                let value: T
                do {
                    value = try await body(connection, lease)
                } catch {
                    await release(connection, lease)
                    throw error
                }
                await release(connection, lease)
                return value
            }
        } catch where !leased && !(error is CancellationError) && !Task.isCancelled {
            throw ConnectionUnavailable(detail: "no connection (\(error))")
        }
    }

    /// Ends `lease`. A connection that closed (the watch closed it, or PostgreSQL) goes back
    /// to the pool only once its close is done, which is when the pool learns of it: else
    /// the pool could lease it again meanwhile, and postgres-nio drops a statement written
    /// to a connection whose close is done without failing it (it writes with no promise),
    /// leaving the next lease, and the request on it, waiting for ever. The wait ends: at
    /// once without TLS, within NIOSSL's shutdown timeout (5 s) with it. Not closed by this: a
    /// close done between the check at a lease's start, or a transaction's statements, and
    /// the next write (docs/security-tests.md, "The hang, explained").
    private func release(_ connection: PostgresConnection, _ lease: UInt64) async {
        let closedByWatch = !watch.end(lease)
        if closedByWatch || connection.isClosed { try? await connection.closeFuture.get() }
    }

    /// One statement; all its rows.
    @discardableResult
    package func query(_ query: PostgresQuery, logger: Logger? = nil, deadline: Duration? = nil) async throws -> CollectedRows<PostgresRow> {
        let logger = logger ?? self.logger
        return CollectedRows(try await withConnection(deadline: deadline) { try await $0.query(query, logger: logger).collect() })
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

    /// A transaction on one connection, watched: BEGIN, `body`, COMMIT; ROLLBACK when `body`
    /// throws. Not postgres-nio's own: on a connection already closed (the watch closed it, or
    /// PostgreSQL), a statement is not sent at all, since postgres-nio would leave it waiting for
    /// ever (it writes without a promise, which a closed channel never fails); PostgreSQL rolls
    /// back a transaction whose connection closed. Closed by the watch is asked of the watch,
    /// not only of the connection: a statement the watch's close failed can throw before the
    /// connection says it is closed, and a ROLLBACK sent then would wait for ever.
    ///
    /// - Throws: ``TransactionFailure``, saying which step failed.
    func withTransaction<T>(logger: Logger, deadline: Duration? = nil, _ body: (PostgresConnection) async throws -> sending T)
        async throws -> sending T {
        try await withLease(deadline: deadline) { connection, lease in
            // Not closed by PostgreSQL, nor by the watch (which ends the lease before it closes).
            let usable = { !connection.isClosed && watch.isOpen(lease) }
            do {
                try await connection.query("BEGIN", logger: logger)
            } catch {
                throw TransactionFailure(step: .begin, error: error)
            }
            let value: T
            do {
                value = try await body(connection)
            } catch {
                if usable() { _ = try? await connection.query("ROLLBACK", logger: logger) }
                throw TransactionFailure(step: .body, error: error)
            }
            do {
                guard usable() else { throw ConnectionUnavailable(detail: "the connection closed before COMMIT") }
                try await connection.query("COMMIT", logger: logger)
            } catch {
                throw TransactionFailure(step: .commit, error: error)
            }
            return value
        }
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

/// A transaction that failed at one step: at `body`, `error` is the body's own (a
/// ``StoreError`` of the store's logic, or the database's). A failed commit's outcome is not known.
struct TransactionFailure: Error {
    enum Step { case begin, body, commit }
    let step: Step
    let error: any Error
}

/// No connection to use: none could be had (postgres-nio's pool gave up connecting after a
/// while, or is shut down), or it closed before a transaction's COMMIT could be sent. 503,
/// as any ``StoreUnreachable``.
struct ConnectionUnavailable: StoreUnreachable {
    let detail: String
    var isUnreachable: Bool { true }
    var unreachableDetail: String { detail }
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

/// The connections leased now, since when and for how long; ``run()`` closes each leased
/// longer than its deadline. Starting and ending a lease takes a lock for a dictionary
/// update: no timer per statement (postgres-nio's timers cost a quarter of a session read,
/// BENCHMARKS.md).
final class StatementWatch: Sendable {
    /// A lease's deadline when it names none.
    let deadline: Duration
    private let logger: Logger
    private let leases = Mutex(Leases())

    struct Lease {
        let connection: PostgresConnection
        let since: ContinuousClock.Instant
        let deadline: Duration
    }

    struct Leases {
        var next: UInt64 = 0
        var open: [UInt64: Lease] = [:]
    }

    init(deadline: Duration, logger: Logger) {
        self.deadline = deadline
        self.logger = logger
    }

    func begin(_ connection: PostgresConnection, deadline: Duration? = nil) -> UInt64 {
        let lease = Lease(connection: connection, since: .now, deadline: deadline ?? self.deadline)
        return leases.withLock {
            $0.next += 1
            $0.open[$0.next] = lease
            return $0.next
        }
    }

    /// Whether `lease` is still open: not ended, nor closed as overdue.
    func isOpen(_ lease: UInt64) -> Bool {
        leases.withLock { $0.open[lease] != nil }
    }

    /// Ends `lease`; false when the watch had closed it as overdue.
    func end(_ lease: UInt64) -> Bool {
        leases.withLock { $0.open.removeValue(forKey: lease) } != nil
    }

    /// Closes every connection leased longer than its deadline at `now` (or than `deadline`,
    /// when given, whatever its own). The close is issued under the lock: a lease
    /// that ends meanwhile waits for it, and learns from ``end(_:)`` that it was closed (its
    /// connection then goes back to the pool once the close is done).
    func closeOverdue(at now: ContinuousClock.Instant = .now, deadline: Duration? = nil) {
        let overdue = leases.withLock { leases in
            let late = leases.open.filter { now - $0.value.since > (deadline ?? $0.value.deadline) }
            for (key, lease) in late {
                leases.open.removeValue(forKey: key)
                let _: EventLoopFuture<Void> = lease.connection.close()
            }
            return Array(late.values)
        }
        for lease in overdue {
            logger.error("a PostgreSQL connection stayed leased past its deadline (no answer, or work too long): it was closed, and what it carried failed",
                         metadata: ["deadline": .string("\(lease.deadline)"), "connection": .string("\(lease.connection.id)")])
        }
    }

    /// Looks at the leases a few times per default deadline (at least every second) until cancelled.
    func run() async {
        let interval = min(deadline / 4, .seconds(1))
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            closeOverdue()
        }
    }
}
