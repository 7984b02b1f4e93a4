import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultPostgres
import KeyVaultStore
import KeyVaultTestSupport
import Testing
@testable import KeyVaultServer

// On PostgreSQL a connection leased past its deadline is closed (WatchedPool): 30 s for
// what a request does, 10 minutes for what may move gigabytes in one transaction. Here
// the request deadline is 2 s, and another connection holds the locks a write needs for
// 3.5 s: an ordinary write is cut off (503), while each write with the long deadline
// waits for the locks and goes through. Without the long deadline, an account with much
// in it could never be deleted, nor a member with many attachments removed.
//
// Both run their store outside the test's own task (`failingInsteadOfHanging`): a request cut off here
// once went unanswered now and then (a connection the watch closed went back to the pool
// before its close was done: WatchedPoolTests), and a test must fail on that, not hang.

@Test func onPostgreSQLWhatMayMoveGigabytesIsNotCutOffAtTheRequestDeadline() async throws {
    guard case .postgres(let url)? = StoreBackend.all.first(where: \.isShared) else { return }
    await failingInsteadOfHanging(after: 120) { try await PostgresKeyVaultDatabase.withTemporarySchema(url, statementDeadline: .seconds(2)) { database in
        try await testApplication(database: database).test(.router) { client in
            let phone = TestDevice("phone")
            var state = try await client.createAccount(phone)
            let account = state.account
            let emma = try await client.addMember(phone, &state)
            let base = "/v1/accounts/\(account)/members/\(emma)/attachments"
            let (address, object) = try sealedAttachment()
            #expect(try await client.signed(phone, .put, base + "/" + address, body: object).status == .created)

            /// `request`, sent while the account's locks are held for 3.5 s; its answer, and how long it took.
            func whileLocked(_ request: () async throws -> TestResponse) async throws -> (TestResponse, Duration) {
                try await whileHolding(account, for: 3.5, in: database) {
                    let clock = ContinuousClock(), start = clock.now
                    let response = try await request()
                    return (response, clock.now - start)
                }
            }
            func expectWaitedAndWent(_ what: String, _ answer: (TestResponse, Duration), _ status: HTTPResponse.Status,
                                     sourceLocation: SourceLocation = #_sourceLocation) {
                #expect(answer.0.status == status, "\(what): \(answer.0.status): \(String(buffer: answer.0.body))", sourceLocation: sourceLocation)
                #expect(answer.1 > .seconds(2), "\(what) did not wait for the locks past the deadline: \(answer.1)", sourceLocation: sourceLocation)
            }

            // An ordinary write is cut off at the request deadline: the rig holds writes past it.
            let (added, _) = try await whileLocked {
                try await client.append(phone, &state, AppendRequest(link: phone.link(.memberAdd, after: state,
                                                                                       body: ["member": String(repeating: "a", count: 32), "memberGeneration": "1"])))
            }
            #expect(added.status == .serviceUnavailable, "\(added.status): \(String(buffer: added.body))")

            // Each write with the long deadline waits past it, and goes through.
            expectWaitedAndWent("the attachment's replacement",
                                try await whileLocked { try await client.signed(phone, .put, base + "/" + address + "?replace=true", body: object) },
                                .created)
            let chunked = base + "/ca1.1." + Hex.encode(SystemRandom.bytes(count: 32))
            let key = try Envelope.seal(SymmetricKey(), under: SymmetricKey(), generation: 1, context: EnvelopeContext(purpose: "attachment-key")).bytes
            let begun = try await whileLocked {
                try await client.signed(phone, .post, chunked + "/uploads",
                                        body: Array(try JSONEncoder().encode(BeginUploadRequest(key: Data(key).base64EncodedString(), chunkShift: 10, size: 300))))
            }
            expectWaitedAndWent("an upload's start", begun, .created)
            let upload = try #require(try decode(UploadStarted.self, begun.0).upload)
            #expect(try await client.signed(phone, .put, chunked + "/uploads/\(upload)/chunks/0", body: SystemRandom.bytes(count: 316)).status == .noContent)
            expectWaitedAndWent("an upload's completion",
                                try await whileLocked { try await client.signed(phone, .post, chunked + "/uploads/\(upload)/complete") }, .created)
            expectWaitedAndWent("the attachment's deletion", try await whileLocked { try await client.signed(phone, .delete, base + "/" + address) },
                                .noContent)
            expectWaitedAndWent("the member's removal", try await whileLocked {
                try await client.append(phone, &state, AppendRequest(link: phone.link(.memberRemove, after: state, body: ["member": emma.rawValue])))
            }, .created)
            let instance = try decode([String: String].self, try await client.execute(uri: "/v1/server", method: .get))["instance"] ?? ""
            expectWaitedAndWent("the account's deletion", try await whileLocked {
                try await client.signed(phone, .delete, "/v1/accounts/\(account)?instance=\(instance)&head=\(state.head)")
            }, .noContent)
        }
    } }
}

/// A connection the watch closed is PostgreSQL's to end too. Here a chain write, cut off at
/// the deadline while it waits for the account's audit lock, holds the account's row it
/// already updated: its backend must notice within a second or two that no one is there
/// (`client_connection_check_interval`) and let go, not wait on for as long as the lock is
/// held (every other chain write of the account waiting behind it), then do a write no one
/// will commit.
@Test func onPostgreSQLABackendWhoseConnectionTheWatchClosedLetsGoOfItsLocks() async throws {
    guard case .postgres(let url)? = StoreBackend.all.first(where: \.isShared) else { return }
    await failingInsteadOfHanging(after: 60) { try await PostgresKeyVaultDatabase.withTemporarySchema(url, statementDeadline: .seconds(2)) { database in
        let version = try await database.client.query("SHOW server_version_num").rows.first?.decode(String.self)
        guard let version = version.flatMap({ Int($0) }), version >= 140000 else { return }
        let interval = try await database.client.query("SHOW client_connection_check_interval").rows.first?.decode(String.self)
        #expect(interval == "1s", "the pool's connections do not ask for the check")
        try await testApplication(database: database).test(.router) { client in
            let phone = TestDevice("phone")
            let state = try await client.createAccount(phone)
            let account = state.account
            try await whileHolding(account, for: 10, auditOnly: true, in: database) {
                let release = ContinuousClock.now + .seconds(9.5)
                async let added = client.signedJSON(phone, .post, "/v1/accounts/\(account)/chain", AppendRequest(link: phone.link(
                    .memberAdd, after: state, body: ["member": String(repeating: "b", count: 32), "memberGeneration": "1"])))
                #expect(try await eventually { try await advisoryLocks(database, "audit \(account)", granted: false) == 1 },
                        "the chain write never waited for the audit lock")
                let answer = try await added
                #expect(answer.status == .serviceUnavailable, "\(answer.status): \(String(buffer: answer.body))")
                // Within 3 s of the 503, long before the holder lets go: no one waits for the lock,
                // and the account's row is free.
                #expect(try await eventually(within: .seconds(3)) { try await advisoryLocks(database, "audit \(account)", granted: false) == 0 },
                        "the cut-off write's backend still waits for the lock, 3 s after its connection closed")
                #expect(try await eventually(within: .seconds(1)) {
                    try await database.client.query("SELECT 1 FROM accounts WHERE id = \(account.rawValue) FOR UPDATE NOWAIT").rows.count == 1
                }, "the account's row is still locked")
                #expect(ContinuousClock.now < release, "the holder let go before the checks: they show nothing")
            }
        }
    } }
}

/// `body`, while another connection (on the long deadline) holds `account`'s row, its audit
/// lock and its uploads lock (or its audit lock only) for `seconds` from when it has them.
private func whileHolding<T>(_ account: AccountID, for seconds: Double, auditOnly: Bool = false, in database: PostgresKeyVaultDatabase,
                             _ body: () async throws -> T) async throws -> T {
    let (audit, uploads, id) = ("audit " + account.rawValue, "uploads " + account.rawValue, account.rawValue)
    async let held = auditOnly
        ? database.client.query("""
            SELECT pg_sleep(\(seconds)) FROM (SELECT pg_advisory_xact_lock(hashtextextended(\(audit), 0))) AS audit
            """, deadline: .seconds(60))
        : database.client.query("""
            WITH locked AS (SELECT id FROM accounts WHERE id = \(id) FOR UPDATE),
                 audit AS (SELECT pg_advisory_xact_lock(hashtextextended(\(audit), 0))),
                 uploads AS (SELECT pg_advisory_xact_lock(hashtextextended(\(uploads), 0)))
            SELECT pg_sleep(\(seconds)) FROM locked, audit, uploads
            """, deadline: .seconds(60))
    #expect(try await eventually { try await advisoryLocks(database, "audit \(account)", granted: true) == 1 }, "the locks were never held")
    let value = try await body()
    _ = try await held
    return value
}

/// How many hold (or wait for) the advisory lock the store takes under `name` (`audit ACCOUNT`, `uploads ACCOUNT`).
private func advisoryLocks(_ database: PostgresKeyVaultDatabase, _ name: String, granted: Bool) async throws -> Int64 {
    try await database.client.query("""
        WITH k AS (SELECT hashtextextended(\(name), 0) AS key)
        SELECT count(*) FROM pg_locks, k WHERE locktype = 'advisory' AND granted = \(granted)
            AND classid::BIGINT = (k.key >> 32) & 4294967295 AND objid::BIGINT = k.key & 4294967295
        """).rows.first?.decode(Int64.self) ?? -1
}

/// `body`, run outside the test's own task: a request or statement that waits for ever (and
/// the pool waiting for it as it stops) fails the test after `seconds` instead of hanging the run.
private func failingInsteadOfHanging(after seconds: Int, _ body: @escaping @Sendable () async throws -> Void) async {
    let ended = await within(seconds: seconds) { () -> Bool in
        do { try await body() } catch { Issue.record(error) }
        return true
    }
    #expect(ended != nil, "not ended within \(seconds) s: a request or statement went unanswered")
}

/// Whether `condition` holds within `limit`, asked every 50 ms; a query that fails counts as not yet.
private func eventually(within limit: Duration = .seconds(10), _ condition: () async throws -> Bool) async throws -> Bool {
    let clock = ContinuousClock(), end = clock.now + limit
    while clock.now < end {
        if (try? await condition()) == true { return true }
        try await Task.sleep(for: .milliseconds(50))
    }
    return (try? await condition()) == true
}
