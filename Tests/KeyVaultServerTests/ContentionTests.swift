import Foundation
import GRDB
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultPostgres
import KeyVaultProtocol
import KeyVaultStore
import KeyVaultTestSupport
import Testing
@testable import KeyVaultServer

// A write that loses a race for a lock (PostgreSQL chose it as a deadlock's victim, or
// could not serialize it; SQLite waited out its busy timeout for another process's write)
// changed nothing. It is never a 500: PostgreSQL's transaction is run again, and what
// still loses is 503 `unavailable` with Retry-After, which the client may send again.

/// A new account with a new member, and an attachment to put: its URI and body, and the
/// member's listing URI.
private func attachmentToPut(_ client: some TestClientProtocol, _ phone: TestDevice) async throws
    -> (account: AccountID, uri: String, body: [UInt8], base: String) {
    var state = try await client.createAccount(phone)
    let member = try await client.addMember(phone, &state)
    let base = "/v1/accounts/\(state.account)/members/\(member)/attachments"
    let (address, object) = try sealedAttachment()
    return (state.account, base + "/" + address, object, base)
}

/// Puts it with a signed request after `before`.
private func putAttachment(_ client: some TestClientProtocol, _ phone: TestDevice,
                           before: () async throws -> Void) async throws -> (TestResponse, String) {
    let put = try await attachmentToPut(client, phone)
    try await before()
    return (try await client.signed(phone, .put, put.uri, body: put.body), put.base)
}

private func listed(_ client: some TestClientProtocol, _ phone: TestDevice, _ base: String) async throws -> Int {
    try await client.attachmentList(phone, base).count
}

private func expectUnavailable(_ response: TestResponse) {
    #expect(response.status == .serviceUnavailable, "\(response.status)")
    #expect(errorCode(response) == "unavailable")
    #expect(response.headers[.retryAfter] != nil)
}

@Test func onPostgreSQLATransactionThatLosesALockRaceIsRunAgainAndOneThatKeepsLosingIsAnswered503() async throws {
    guard case .postgres(let url)? = StoreBackend.all.first(where: \.isShared) else { return }
    // Lost once (a deadlock's victim): run again, stored once, audited once.
    try await PostgresKeyVaultDatabase.withTemporarySchema(url) { database in
        try await testApplication(database: database).test(.router) { client in
            let phone = TestDevice("phone")
            let (response, base) = try await putAttachment(client, phone) {
                try await database.failingInserts(into: "audit", sqlState: "40P01", times: 1)
            }
            #expect(response.status == .created, "\(response.status)")
            #expect(try await listed(client, phone, base) == 1)
            #expect(database.transactionsRunAgain == 1)
        }
    }
    // Lost every time (serialization failures): 503 with Retry-After, nothing stored.
    try await PostgresKeyVaultDatabase.withTemporarySchema(url) { database in
        try await testApplication(database: database).test(.router) { client in
            let phone = TestDevice("phone")
            let (response, base) = try await putAttachment(client, phone) {
                try await database.failingInserts(into: "audit", sqlState: "40001", times: 1_000)
            }
            expectUnavailable(response)
            #expect(try await listed(client, phone, base) == 0)
        }
    }
}

/// A recovery enrollment whose write keeps losing is 503 like any other, and its token
/// was not spent: the same request sent again enrolls the device.
@Test func onPostgreSQLARecoveryEnrollmentThatKeepsLosingALockRaceKeepsItsToken() async throws {
    guard case .postgres(let url)? = StoreBackend.all.first(where: \.isShared) else { return }
    try await PostgresKeyVaultDatabase.withTemporarySchema(url) { database in
        try await testApplication(database: database).test(.router) { client in
            let phone = TestDevice("phone"), laptop = TestDevice("laptop")
            let fixture = RecoveryFixture()
            let state = try await fixture.setUp(client, phone)
            let enroll = "/v1/accounts/\(state.account)/recovery/enroll"
            let session = try await fixture.prove(client, account: state.account)
            let request = try jsonBody(try fixture.enrollment(of: laptop, after: state, token: session.token))
            // Every attempt of the enrollment's transaction loses.
            try await database.failingInserts(into: "audit", sqlState: "40001", times: PostgresKeyVaultDatabase.transactionAttempts)
            expectUnavailable(try await client.execute(uri: enroll, method: .post, body: request))
            let enrolled = try await client.execute(uri: enroll, method: .post, body: request)
            #expect(enrolled.status == .created, "\(String(buffer: enrolled.body))")
        }
    }
}

@Test func aSQLiteWriteThatWaitsOutItsBusyTimeoutIsAnswered503AndChangesNothing() async throws {
    let directory = try TemporaryDirectory("contention")
    let path = directory.path("kv.sqlite")
    let database = try KeyVaultDatabase.open(path: path, busyTimeout: 0.2)
    try await testApplication(database: database).test(.router) { client in
        let phone = TestDevice("phone")
        let put = try await attachmentToPut(client, phone)
        // A session of this process's own secret: its nonces are kept in memory, so the
        // attachment's write is the request's first (its last-seen update is skipped when it fails).
        let session = try await client.openSession(phone, account: put.account)
        // Another process holds the database's write lock (an operator's sqlite3, say).
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let other = try DatabaseQueue(path: path, configuration: configuration)
        try other.inDatabase { try $0.execute(sql: "BEGIN IMMEDIATE") }
        // A read passes meanwhile: the session's requests write nothing else.
        #expect(try await client.macRequest(session, .get, put.base).status == .ok)
        expectUnavailable(try await client.macRequest(session, .put, put.uri, body: put.body))
        try other.inDatabase { try $0.execute(sql: "ROLLBACK") }
        #expect(try await listed(client, phone, put.base) == 0)
        #expect(try await client.macRequest(session, .put, put.uri, body: put.body).status == .created)
    }
}
