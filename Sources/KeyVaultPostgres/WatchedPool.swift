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
    let answers: Answers
    let logger: Logger

    init(_ pool: PostgresClient, deadline: Duration, logger: Logger) {
        self.pool = pool
        watch = StatementWatch(deadline: deadline, logger: logger)
        answers = Answers(logger: logger)
        self.logger = logger
    }

    /// One connection of the pool for `body`, watched: closed when leased longer than
    /// `deadline` (the watch's own when nil).
    ///
    /// - Throws: what `body` throws; ``ConnectionUnavailable`` when none could be had (the pool gave up
    ///   connecting, or is shut down; not for a task cancelled meanwhile), or the one it gave had closed.
    func withConnection<T>(deadline: Duration? = nil, _ body: (LeasedConnection) async throws -> sending T) async throws -> sending T {
        var leased = false
        do {
            return try await pool.withConnection { connection in
                leased = true
                if connection.isClosed {
                    // PostgreSQL closed it while it was idle, and the pool has not heard yet: not
                    // written to (``Answers``), and given back once the pool knows (``release(_:_:)``).
                    try? await connection.closeFuture.get()
                    throw ConnectionUnavailable(detail: "the pool's connection had closed")
                }
                let lease = watch.begin(connection, deadline: deadline)
                let value: T
                do {
                    value = try await body(LeasedConnection(connection, answers: answers))
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
    /// once without TLS, within NIOSSL's shutdown timeout (5 s) with it. A statement written
    /// to a connection whose close was done anyway (a close between a check and the write) is
    /// answered by ``Answers``.
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
        -> CollectedRows<Statement.Row> where Statement.Row: Sendable {
        let logger = logger ?? self.logger
        return try await withConnection { try await $0.execute(statement, logger: logger) }
    }

    /// A transaction on one connection, watched: BEGIN, `body`, COMMIT; ROLLBACK when `body`
    /// throws. Not postgres-nio's own: on a connection that closed (the watch closed it, or
    /// PostgreSQL), no ROLLBACK or COMMIT is sent; PostgreSQL rolls back a transaction whose
    /// connection closed.
    ///
    /// - Throws: ``TransactionFailure``, saying which step failed.
    func withTransaction<T>(logger: Logger, deadline: Duration? = nil, _ body: (LeasedConnection) async throws -> sending T)
        async throws -> sending T {
        try await withConnection(deadline: deadline) { db in
            do {
                try await db.query("BEGIN", logger: logger)
            } catch {
                throw TransactionFailure(step: .begin, error: error)
            }
            let value: T
            do {
                value = try await body(db)
            } catch {
                if !db.isClosed { _ = try? await db.query("ROLLBACK", logger: logger) }
                throw TransactionFailure(step: .body, error: error)
            }
            do {
                guard !db.isClosed else { throw ConnectionUnavailable(detail: "the connection closed before COMMIT") }
                try await db.query("COMMIT", logger: logger)
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

/// A connection of the pool, leased: its statements go through ``Answers``, so that each is
/// answered even when its write is lost.
struct LeasedConnection: Sendable {
    private let connection: PostgresConnection
    private let answers: Answers

    init(_ connection: PostgresConnection, answers: Answers) {
        self.connection = connection
        self.answers = answers
    }

    /// Whether the connection closed, or its close is under way.
    var isClosed: Bool { connection.isClosed }

    /// One statement; its rows as they come (an error among them when the connection closes meanwhile).
    @discardableResult
    func query(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRowSequence {
        try await answers.answer(on: connection) { [connection] in try await connection.query(query, logger: logger) }
    }

    /// One prepared statement (prepared on the connection the first time it runs there); all its rows.
    func execute<Statement: PostgresPreparedStatement>(_ statement: Statement, logger: Logger) async throws
        -> CollectedRows<Statement.Row> where Statement.Row: Sendable {
        CollectedRows(try await answers.answer(on: connection) { [connection] in
            var rows: [Statement.Row] = []
            for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
            return rows
        })
    }
}

/// Statements answered even when postgres-nio loses them. A statement written to a
/// connection whose close is done is dropped without failing (postgres-nio writes with no
/// promise once the channel's handlers are gone), and whoever waits for it would wait for
/// ever; a close can be done between any check and the write (PostgreSQL restarting or
/// failing over, the watch). So a statement runs in a task of its own and is waited for
/// here: once its connection's close is done, and one turn of the connection's event loop
/// after, a statement still unanswered is answered ``ConnectionUnavailable`` (503).
///
/// What this holds to is postgres-nio's promise: by then, every statement postgres-nio will
/// ever answer on that connection has been answered (it fails what it holds when the
/// channel goes inactive, before the close is done). The task waiting for that answer may
/// not have run yet, where Swift's own threads run it (`keyctl serve` runs tasks on NIO's
/// event loops, where it has): then a statement that succeeded just before the close is
/// answered 503 too, which is what any request whose connection was lost is told (its write
/// may or may not have been made). A lost statement's task stays suspended for good, with
/// its statement and arguments (an upload's chunk at most) and the closed channel: one per
/// statement lost, each logged. If the event loops were shut down, the close's callback
/// would not run; the pool's (NIO's singleton group) never is. One close callback per
/// connection, not one per statement.
final class Answers: Sendable {
    private struct State {
        var next: UInt64 = 0
        /// Per connection (postgres-nio's id, unique in a pool): how to fail each statement waiting.
        var waiting: [Int: [UInt64: @Sendable (any Error) -> Void]] = [:]
        /// The connections whose close is watched (once each, until it is done).
        var watched: Set<Int> = []
    }
    private let state = Mutex(State())
    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    /// `statement`'s result, or ``ConnectionUnavailable`` once `connection`'s close is done
    /// without one. Cancelling the caller cancels `statement`'s task.
    func answer<T: Sendable>(on connection: PostgresConnection, _ statement: @escaping @Sendable () async throws -> T) async throws -> T {
        let id = connection.id
        let outcome = Outcome<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                outcome.wait(continuation)
                let (key, first) = state.withLock { state in
                    state.next += 1
                    state.waiting[id, default: [:]][state.next] = { outcome.resume(.failure($0)) }
                    return (state.next, state.watched.insert(id).inserted)
                }
                if first {
                    // On a future already completed too (a connection closed before this), at once.
                    connection.closeFuture.whenComplete { _ in connection.eventLoop.execute { self.closed(id) } }
                }
                outcome.run(Task {
                    let result: Result<T, any Error>
                    do { result = .success(try await statement()) } catch { result = .failure(error) }
                    _ = state.withLock { $0.waiting[id]?.removeValue(forKey: key) }
                    outcome.resume(result)
                })
            }
        } onCancel: {
            outcome.cancel()
        }
    }

    /// `id`'s close is done: every statement still waiting on it is answered.
    private func closed(_ id: Int) {
        let lost = state.withLock { state in
            state.watched.remove(id)
            return state.waiting.removeValue(forKey: id) ?? [:]
        }
        guard !lost.isEmpty else { return }
        logger.warning("PostgreSQL statements still unanswered when their connection's close was done were answered 503 (their writes lost, or their answers just before the close)",
                       metadata: ["statements": .stringConvertible(lost.count), "connection": .stringConvertible(id)])
        for fail in lost.values { fail(ConnectionUnavailable(detail: "the connection closed before the statement was answered")) }
    }

    /// Statements waiting now (tests).
    var waiting: Int { state.withLock { $0.waiting.values.reduce(0) { $0 + $1.count } } }

    /// One statement's wait: its continuation, resumed once (by the statement's result or by
    /// its connection's close), and its task, cancelled with the caller.
    private final class Outcome<T: Sendable>: Sendable {
        private struct State {
            var continuation: CheckedContinuation<T, any Error>?
            var task: Task<Void, Never>?
            var cancelled = false
        }
        private let state = Mutex(State())

        func wait(_ continuation: CheckedContinuation<T, any Error>) { state.withLock { $0.continuation = continuation } }

        func run(_ task: Task<Void, Never>) {
            let cancelled = state.withLock { state in
                if !state.cancelled { state.task = task }
                return state.cancelled
            }
            if cancelled { task.cancel() }
        }

        func cancel() {
            state.withLock { state in
                state.cancelled = true
                return state.task.take()
            }?.cancel()
        }

        func resume(_ result: Result<T, any Error>) {
            state.withLock { state in
                state.task = nil
                return state.continuation.take()
            }?.resume(with: result)
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
/// while, or is shut down), the pool's had closed, it closed before a transaction's COMMIT
/// could be sent, or before a statement was answered (``Answers``). 503, as any ``StoreUnreachable``.
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
