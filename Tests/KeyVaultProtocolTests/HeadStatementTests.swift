import KeyVaultCrypto
import KeyVaultModel
import Testing
@testable import KeyVaultProtocol

// docs/formats/head-statement.md against an independent implementation.

private struct HeadStatementFile: Decodable {
    struct Vector: Decodable { let note: String, statement: HeadStatement, outcome: String, signedBytes: String }
    struct Freshness: Decodable { let now: Int64, window: Int64, stale: [DeviceID] }
    let account: AccountID
    let links: [ChainLink]
    let statements: [Vector]
    let freshness: Freshness
}

@Test func headStatementsAreJudgedAsTheIndependentImplementationJudgesThem() throws {
    let file = try vectors.load("head-statement-v1", as: HeadStatementFile.self)
    let state = try ChainState(links: file.links)
    #expect(state.account == file.account)
    #expect(Set(file.statements.map(\.outcome)) == ["valid", "unsupported_version", "wrong_account", "unknown_signer", "bad_signature",
                                                    "stale_chain", "signer_revoked"])
    for vector in file.statements {
        #expect(Hex.encode(vector.statement.signedBytes) == vector.signedBytes, "\(vector.note)")
        expectOutcome(vector.outcome, vector.note) { try vector.statement.verify(in: state, links: file.links) }
    }
    let valid = file.statements.filter { $0.outcome == "valid" }.map(\.statement)
    let stale = try ChainFreshness.stale(valid, of: state, links: file.links, now: file.freshness.now, window: file.freshness.window)
    #expect(stale.map(\.device.id) == file.freshness.stale)
    #expect(file.freshness.window == ChainFreshness.window)
    // One statement that does not verify refuses the whole view.
    let bad = try #require(file.statements.first { $0.outcome == "stale_chain" }).statement
    #expect(throws: ProtocolError.self) { try ChainFreshness.stale(valid + [bad], of: state, links: file.links, now: file.freshness.now) }
}

/// A device with no statement at all is stale, and so is one whose freshest statement
/// is a second older than the window; one inside it is not.
@Test func aDeviceWithoutAStatementOrWithOnlyOlderOnesThanTheWindowIsStale() throws {
    let file = try vectors.load("head-statement-v1", as: HeadStatementFile.self)
    let state = try ChainState(links: file.links)
    #expect(try ChainFreshness.stale([], of: state, links: file.links, now: file.freshness.now).count == state.activeDevices.count)
    let laptop = try #require(file.statements.first).statement
    let inside = try ChainFreshness.stale([laptop], of: state, links: file.links, now: laptop.time + ChainFreshness.window)
    let past = try ChainFreshness.stale([laptop], of: state, links: file.links, now: laptop.time + ChainFreshness.window + 1)
    #expect(!inside.contains { $0.device.id == laptop.device } && past.contains { $0.device.id == laptop.device })
}

/// A statement a server chose with the earliest time an Int64 holds (signed by a
/// device it holds, say) makes its device stale, never an overflow.
@Test func aStatementFromTheBeginningOfTimeIsStaleNotACrash() throws {
    let laptop = Ed25519.PrivateKey()
    let link = ChainLink.genesis(signingKey: laptop, boxKey: X25519.PrivateKey().publicKey, name: "laptop", time: 0)
    let state = try ChainState(genesis: link)
    let ancient = HeadStatement.signed(for: state, by: laptop, time: .min)
    let stale = try ChainFreshness.stale([ancient], of: state, links: [link], now: 1_800_000_000)
    #expect(stale.map(\.lastStatement) == [.min])
    #expect(stale.first?.daysSilent(at: 1_800_000_000) == Int64.max / 86400)
}
