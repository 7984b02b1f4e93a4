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
// the request deadline is 1 s, and a lock held for 2 s by another connection holds
// each write past it: an ordinary write is cut off (503), while each write with the long
// deadline waits for the lock and goes through. Without the long deadline, an account
// with much in it could never be deleted, nor a member with many attachments removed.

@Test func onPostgreSQLWhatMayMoveGigabytesIsNotCutOffAtTheRequestDeadline() async throws {
    guard case .postgres(let url)? = StoreBackend.all.first(where: \.isShared) else { return }
    try await PostgresKeyVaultDatabase.withTemporarySchema(url, statementDeadline: .seconds(1)) { database in
        try await testApplication(database: database).test(.router) { client in
            let phone = TestDevice("phone")
            var state = try await client.createAccount(phone)
            let account = state.account
            let emma = try await client.addMember(phone, &state)
            let base = "/v1/accounts/\(account)/members/\(emma)/attachments"
            let (address, object) = try sealedAttachment()
            #expect(try await client.signed(phone, .put, base + "/" + address, body: object).status == .created)

            /// `request`, sent while another connection holds the account's row, its audit lock
            /// and its uploads lock for 2 s; its answer and how long it took.
            func whileLocked(_ request: () async throws -> TestResponse) async throws -> (TestResponse, Duration) {
                async let held: Void = {
                    try await database.client.query("""
                        WITH locked AS (SELECT id FROM accounts WHERE id = \(account.rawValue) FOR UPDATE),
                             audit AS (SELECT pg_advisory_xact_lock(hashtextextended('audit ' || \(account.rawValue)::TEXT, 0))),
                             uploads AS (SELECT pg_advisory_xact_lock(hashtextextended('uploads ' || \(account.rawValue)::TEXT, 0)))
                        SELECT pg_sleep(2) FROM locked, audit, uploads
                        """, deadline: .seconds(60))
                }()
                try await Task.sleep(for: .milliseconds(300))
                let clock = ContinuousClock()
                let start = clock.now
                let response = try await request()
                let took = clock.now - start
                try await held
                return (response, took)
            }

            // An ordinary write is cut off at the request deadline: the rig holds writes past it.
            let (added, _) = try await whileLocked {
                try await client.append(phone, &state, AppendRequest(link: phone.link(.memberAdd, after: state,
                                                                                       body: ["member": String(repeating: "a", count: 32), "memberGeneration": "1"])))
            }
            #expect(added.status == .serviceUnavailable, "\(added.status): \(String(buffer: added.body))")

            // Each write with the long deadline waits past it, and goes through.
            func expectWaitedAndWent(_ what: String, _ answer: (TestResponse, Duration), _ status: HTTPResponse.Status,
                                     sourceLocation: SourceLocation = #_sourceLocation) {
                #expect(answer.0.status == status, "\(what): \(answer.0.status): \(String(buffer: answer.0.body))", sourceLocation: sourceLocation)
                #expect(answer.1 > .seconds(1), "\(what) did not wait for the lock: \(answer.1)", sourceLocation: sourceLocation)
            }
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

            let (deleted, deleting) = try await whileLocked { try await client.signed(phone, .delete, base + "/" + address) }
            #expect(deleted.status == .noContent, "\(deleted.status): \(String(buffer: deleted.body))")
            #expect(deleting > .seconds(1), "the attachment's deletion did not wait for the lock: \(deleting)")

            let (removed, removing) = try await whileLocked {
                try await client.append(phone, &state, AppendRequest(link: phone.link(.memberRemove, after: state, body: ["member": emma.rawValue])))
            }
            #expect(removed.status == .created, "\(removed.status): \(String(buffer: removed.body))")
            #expect(removing > .seconds(1), "the member's removal did not wait for the lock: \(removing)")

            let instance = try decode([String: String].self, try await client.execute(uri: "/v1/server", method: .get))["instance"] ?? ""
            let (gone, going) = try await whileLocked {
                try await client.signed(phone, .delete, "/v1/accounts/\(account)?instance=\(instance)&head=\(state.head)")
            }
            #expect(gone.status == .noContent, "\(gone.status): \(String(buffer: gone.body))")
            #expect(going > .seconds(1), "the account's deletion did not wait for the lock: \(going)")
        }
    }
}

/// A connection the watch closed is PostgreSQL's to end too. Here a chain write, cut off at
/// the deadline while it waits for the account's audit lock, holds the account's row it
/// already updated: its backend must notice within a second or two that no one is there
/// (`client_connection_check_interval`) and let go, not wait on for as long as the lock is
/// held (every other chain write of the account waiting behind it), then do a write no one
/// will commit.
@Test func onPostgreSQLABackendWhoseConnectionTheWatchClosedLetsGoOfItsLocks() async throws {
    guard case .postgres(let url)? = StoreBackend.all.first(where: \.isShared) else { return }
    try await PostgresKeyVaultDatabase.withTemporarySchema(url, statementDeadline: .seconds(1)) { database in
        try await testApplication(database: database).test(.router) { client in
            let phone = TestDevice("phone")
            var state = try await client.createAccount(phone)
            let account = state.account.rawValue
            async let held: Void = {
                try await database.client.query("""
                    WITH audit AS (SELECT pg_advisory_xact_lock(hashtextextended('audit ' || \(account)::TEXT, 0)))
                    SELECT pg_sleep(8) FROM audit
                    """, deadline: .seconds(60))
            }()
            try await Task.sleep(for: .milliseconds(300))
            let added = try await client.append(phone, &state, AppendRequest(link: phone.link(.memberAdd, after: state,
                body: ["member": String(repeating: "b", count: 32), "memberGeneration": "1"])))
            #expect(added.status == .serviceUnavailable, "\(added.status): \(String(buffer: added.body))")
            // Those waiting for the audit lock of this account (the holder has it).
            func waiting() async throws -> Int64 {
                try await database.client.query("""
                    WITH k AS (SELECT hashtextextended('audit ' || \(account)::TEXT, 0) AS key)
                    SELECT count(*) FROM pg_locks, k WHERE locktype = 'advisory' AND NOT granted
                        AND classid::BIGINT = (k.key >> 32) & 4294967295 AND objid::BIGINT = k.key & 4294967295
                    """).rows.first?.decode(Int64.self) ?? -1
            }
            var left = try await waiting()
            for _ in 0..<30 where left != 0 {
                try await Task.sleep(for: .milliseconds(100))
                left = try await waiting()
            }
            #expect(left == 0, "the cut-off write's backend still waits for the lock, 3 s after its connection closed")
            try await held
        }
    }
}
