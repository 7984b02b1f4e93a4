import Foundation
import KeyVaultTestSupport
import Testing
@testable import KeyVaultStore
import KeyVaultPostgres

/// Item 6 of issue 8: an acknowledged chain write is on disk before the answer: the
/// writer syncs that commit (synchronous=FULL), not only at the next WAL checkpoint;
/// other writes (last-seen, nonces, audit rows) stay NORMAL.
@Test func chainWritesSyncTheirCommitAndOtherWritesDoNot() async throws {
    let directory = try TemporaryDirectory("kv-server")
    let database = try KeyVaultDatabase.open(path: directory.path("keyvault.sqlite"))
    let modes = try await database.synchronousModes()
    #expect(modes.chainWrite == 2 && modes.other == 1)  // 2 FULL, 1 NORMAL
}

/// Issue 21, item 5, the same promise on PostgreSQL: chain writes wait for their WAL flush
/// (`synchronous_commit = on`); nonces, last-seen and the other writes do not (`off`, as
/// SQLite's NORMAL), which is what keeps a request from waiting on a disk flush.
@Test(.enabled(if: StoreBackend.all.contains(where: \.isShared), "needs KEYVAULT_TEST_DATABASE_URL"))
func onPostgreSQLChainWritesWaitForTheirFlushAndOtherWritesDoNot() async throws {
    guard case .postgres(let url)? = StoreBackend.all.first(where: \.isShared) else { return }
    try await PostgresKeyVaultDatabase.withTemporarySchema(url) { database in
        let modes = try await database.synchronousModes()
        #expect(modes.chainWrite == "on" && modes.other == "off", "\(modes)")
    }
}
