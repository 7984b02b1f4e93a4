import Foundation
import KeyVaultTestSupport
import Testing
@testable import KeyVaultStore

/// Item 6 of issue 8: an acknowledged chain write is on disk before the answer: the
/// writer syncs that commit (synchronous=FULL), not only at the next WAL checkpoint;
/// other writes (last-seen, nonces, audit rows) stay NORMAL.
@Test func chainWritesSyncTheirCommitAndOtherWritesDoNot() async throws {
    let directory = try TemporaryDirectory("kv-server")
    let database = try KeyVaultDatabase.open(path: directory.path("keyvault.sqlite"))
    let modes = try await database.synchronousModes()
    #expect(modes.chainWrite == 2 && modes.other == 1)  // 2 FULL, 1 NORMAL
}
