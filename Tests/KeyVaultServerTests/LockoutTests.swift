import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore
import Testing
@testable import KeyVaultServer

/// Item 5 of issue 8: a stranger's failed proofs (from the owner's own address, as
/// behind a proxy) slow the stranger, never the owner holding the code.
@Test func strangersFailedProofsNeverRefuseTheOwnersValidProof() async throws {
    try await testApplication().test(.router) { client in
        let fixture = RecoveryFixture()
        let state = try await fixture.setUp(client, TestDevice("phone"))
        let base = "/v1/accounts/\(state.account)/recovery"
        let stranger = RecoveryFixture()  // another code
        var limited = false
        for _ in 0..<(3 * RecoveryGate.maxFailures) {
            let issued = try await client.execute(uri: base + "/challenge", method: .post)
            #expect(issued.status == .created)
            let challenge = (try? decode(RecoveryChallenge.self, issued).challenge) ?? String(repeating: "0", count: 64)
            let response = try await client.execute(uri: base + "/proof", method: .post,
                                                    body: jsonBody(stranger.proof(challenge, account: state.account)))
            #expect(response.status == .unauthorized || response.status == .tooManyRequests)
            limited = limited || response.status == .tooManyRequests
        }
        #expect(limited)  // the stranger was slowed down
        let issued = try await client.execute(uri: base + "/challenge", method: .post)
        #expect(issued.status == .created)
        let challenge = try decode(RecoveryChallenge.self, issued)
        let proven = try await client.execute(uri: base + "/proof", method: .post,
                                              body: jsonBody(fixture.proof(challenge.challenge, account: state.account)))
        #expect(proven.status == .ok, "\(String(buffer: proven.body))")
    }
}

/// Item 5 of issue 8: unauthenticated challenges are bounded: issuing one stores
/// nothing; only an answered challenge is remembered (in the store, until it expires),
/// and a challenge is bound to its account, its expiry and the server secret.
@Test func recoveryChallengesCostTheServerNothingToIssue() async throws {
    let store = try KeyVaultDatabase.inMemory()
    let gate = try RecoveryGate(database: store, secret: .ephemeral())
    let account = AccountID(unchecked: String(repeating: "a", count: 32))
    let other = AccountID(unchecked: String(repeating: "b", count: 32))
    for _ in 0..<20_000 { _ = try gate.issueChallenge(for: account) }
    #expect(try await store.rowCount(of: "used_once") == 0)
    let challenge = try gate.issueChallenge(for: account).challenge
    #expect(challenge.count == 64)
    #expect(gate.isOpen(challenge: challenge, for: other) == false)  // bound to its account
    var forged = Array(challenge)
    forged[0] = forged[0] == "0" ? "1" : "0"  // a later expiry, say
    #expect(gate.isOpen(challenge: String(forged), for: account) == false)
    #expect(gate.isOpen(challenge: challenge.uppercased(), for: account) == false)
    #expect(gate.isOpen(challenge: "zz", for: account) == false)
    #expect(try RecoveryGate(database: store, secret: .ephemeral()).isOpen(challenge: challenge, for: account) == false)  // another secret
    #expect(gate.isOpen(challenge: challenge, for: account))
    #expect(try await gate.close(challenge: challenge, for: other) == false)
    #expect(try await gate.close(challenge: challenge, for: account))
    #expect(try await gate.close(challenge: challenge, for: account) == false)  // single use
    #expect(try await store.rowCount(of: "used_once") == 1)
}
