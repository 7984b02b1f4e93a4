import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import Logging
import Testing
@testable import KeyVaultServer
import KeyVaultStore
import KeyVaultPostgres

// Issue 22 (keyctl serve as an operator meets it): while PostgreSQL is down, requests
// get 503 at once instead of waiting 30 s for a connection that will not come.

/// While the watch says the database is down, a request that needs it gets 503
/// `unavailable` with Retry-After at once; the health, limits and metrics routes answer.
@Test(arguments: StoreBackend.all.filter(\.isShared))
func whileTheDatabaseIsDownRequestsAre503AtOnce(_ backend: StoreBackend) async throws {
    try await backend.withStore { store in
        var configuration = ServerConfiguration()
        configuration.databasePath = "/unused"
        let service = try ServiceState(configuration: configuration, database: store)
        try await testApplication(service).test(.router) { client in
            let phone = TestDevice("phone")
            let state = try await client.createAccount(phone)
            service.databaseWatch.set(down: true)
            let refused = try await client.signed(phone, .get, "/v1/accounts/\(state.account)/chain")
            #expect(refused.status == .serviceUnavailable && errorCode(refused) == "unavailable")
            #expect(refused.headers[.retryAfter] == "5")
            for path in ["/health", "/v1/limits"] {
                #expect(try await client.execute(uri: path, method: .get).status == .ok, "\(path)")
            }
            service.databaseWatch.set(down: false)
            #expect(try await client.signed(phone, .get, "/v1/accounts/\(state.account)/chain").status == .ok)
        }
    }
}

/// The watch follows the store's answers: a check that fails (or hangs past its time,
/// as a pool waiting for a connection does) marks it down, the next that answers up.
@Test func theWatchMarksTheDatabaseDownWhileItsCheckFailsAndUpWhenItAnswers() async throws {
    let failing = Locked(true)
    let watch = DatabaseWatch()
    var logger = Logger(label: "test")
    logger.logLevel = .critical
    var service = DatabaseWatchService(check: {
        if failing.withLock({ $0 }) { throw CancellationError() }
    }, watch: watch, logger: logger)
    service.interval = .milliseconds(10)
    let running = Task { [service] in try await service.run() }
    defer { running.cancel() }
    while !watch.isDown { try await Task.sleep(for: .milliseconds(5)) }
    failing.withLock { $0 = false }
    while watch.isDown { try await Task.sleep(for: .milliseconds(5)) }
    #expect(!watch.isDown)
}
