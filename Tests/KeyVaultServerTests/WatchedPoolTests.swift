import KeyVaultCrypto
import KeyVaultStore
import KeyVaultTestSupport
import PostgresNIO
import Testing
@testable import KeyVaultPostgres

// Every statement on the pool is answered, also next to one the watch cuts off. A
// connection the watch closed must not go back to the pool before the pool knows it is
// closed: the next lease would write to a connection whose close is done, and postgres-nio
// drops such a write without failing it (it writes with no promise), so that statement,
// and the request waiting on it, would wait for ever. The cut-off tests of
// LongDeadlineTests hung now and then for this.

@Test func onPostgreSQLEveryStatementIsAnsweredWhileTheWatchClosesConnections() async throws {
    guard case .postgres(let url)? = StoreBackend.all.first(where: \.isShared) else { return }
    try await PostgresKeyVaultDatabase.withEmptySchema(url) { schema in
        // One connection: whatever the watch closes, a waiter is next in line for it.
        let database = try await PostgresKeyVaultDatabase.connect(url, logger: quietLogger, maximumConnections: 1, keepAllOpen: true, schema: schema)
        let pool = database.client
        // Outside the test's task, never awaited: a pool with a statement waiting for ever
        // would never finish shutting down, and the run would hang instead of failing.
        let running = Task { await database.run() }
        defer { running.cancel() }
        for round in 1...40 {
            let finished = Locked(false)
            Task {
                _ = try? await pool.query("SELECT pg_sleep(30)")
                finished.withLock { $0 = true }
            }
            let waiters = (0..<3).map { _ in Task { (try? await pool.query("SELECT 1"))?.rows.count } }
            // Close every lease until the long statement fails: closing its connection
            // while the others wait for it. (Their own leases may be closed too: a failure
            // is an answer. Waiting for ever is not.)
            let cut = await within(seconds: 10) { () -> Bool in
                while !Task.isCancelled {
                    pool.watch.closeOverdue(deadline: .zero)
                    if finished.withLock({ $0 }) { return true }
                    try? await Task.sleep(for: .milliseconds(1))
                }
                return false
            }
            #expect(cut == true, "round \(round): the long statement was not cut off")
            for (index, waiter) in waiters.enumerated() {
                let answered = await within(seconds: 10) { _ = await waiter.value; return true }
                guard answered == true else {
                    Issue.record("round \(round): statement \(index + 1) of those waiting for the closed connection was never answered")
                    return
                }
            }
        }
        let rows = await within(seconds: 10) { (try? await pool.query("SELECT 1").rows.count) ?? -1 }
        #expect(rows == 1, "the pool does not serve after the closes")
    }
}

/// What is left after the pool waits for closes: a close done between a check and the
/// statement's write (PostgreSQL restarting or failing over at that moment). Here the
/// close is done before the write on purpose: postgres-nio drops the write without failing
/// it, and the statement must still be answered (503's `ConnectionUnavailable`), not wait for ever.
@Test func onPostgreSQLAStatementWrittenToAConnectionWhoseCloseIsDoneIsAnswered() async throws {
    guard case .postgres(let url)? = StoreBackend.all.first(where: \.isShared) else { return }
    let answers = Answers(logger: quietLogger)
    let connection = try await PostgresConnection.connect(configuration: try url.connectionConfiguration, id: 1, logger: quietLogger)
    try await connection.close()
    let closed = LeasedConnection(connection, answers: answers)
    // A statement and a prepared statement, as a transaction's body writes them.
    for kind in ["a statement", "a prepared statement"] {
        let outcome = await within(seconds: 10) { () -> String in
            do {
                if kind == "a statement" {
                    _ = try await closed.query("SELECT 1", logger: quietLogger).collect()
                } else {
                    _ = try await closed.execute(SelectOne(), logger: quietLogger)
                }
                return "rows"
            } catch is ConnectionUnavailable {
                return "unavailable"
            } catch {
                return "\(error)"
            }
        }
        #expect(outcome == "unavailable", "\(kind): \(outcome ?? "no answer within 10 s")")
    }
    #expect(answers.waiting == 0, "statements left waiting")
    // On a connection that did not close: its rows, and nothing left waiting.
    let open = try await PostgresConnection.connect(configuration: try url.connectionConfiguration, id: 2, logger: quietLogger)
    let leased = LeasedConnection(open, answers: answers)
    #expect(try await leased.query("SELECT 1", logger: quietLogger).collect().count == 1)
    #expect(try await leased.execute(SelectOne(), logger: quietLogger).collect() == [1])
    #expect(answers.waiting == 0, "statements left waiting")
    try await open.close()
}

private struct SelectOne: PostgresPreparedStatement {
    static let name = "keyvault_test_select_one"
    static let sql = "SELECT 1::BIGINT"
    typealias Row = Int64
    func makeBindings() throws -> PostgresBindings { PostgresBindings() }
    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int64.self) }
}
