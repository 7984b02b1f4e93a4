import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
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
/// nothing, and what is stored (answered challenges, tokens, failures) expires
/// from the front of queues ordered by time, never by scanning everything.
@Test func recoveryChallengesCostTheServerNoMemory() async throws {
    let gate = RecoveryGate()
    let account = AccountID(unchecked: String(repeating: "a", count: 32))
    let other = AccountID(unchecked: String(repeating: "b", count: 32))
    for _ in 0..<20_000 { _ = try await gate.issueChallenge(for: account) }
    #expect(await gate.remembered == (challenges: 0, tokens: 0, failures: 0))
    let challenge = try await gate.issueChallenge(for: account).challenge
    #expect(challenge.count == 64)
    #expect(await gate.isOpen(challenge: challenge, for: other) == false)  // bound to its account
    var forged = Array(challenge)
    forged[0] = forged[0] == "0" ? "1" : "0"  // a later expiry, say
    #expect(await gate.isOpen(challenge: String(forged), for: account) == false)
    #expect(await gate.isOpen(challenge: challenge.uppercased(), for: account) == false)
    #expect(await gate.isOpen(challenge: "zz", for: account) == false)
    #expect(await gate.isOpen(challenge: challenge, for: account))
    #expect(await gate.close(challenge: challenge))
    #expect(await gate.isOpen(challenge: challenge, for: account) == false)  // single use
    #expect(await gate.close(challenge: challenge) == false)
    #expect(await gate.remembered.challenges == 1)
}

@Test func anExpiryQueueDropsFromTheFrontOnly() {
    var queue = ExpiryQueue<Int>()
    for i in 0..<1000 { queue.append(i, at: Int64(i)) }
    #expect(queue.popOlder(than: 10) == Array(0..<10))
    #expect(queue.count == 990)
    #expect(queue.popOlder(than: 600).count == 590)
    for i in 1000..<1100 { queue.append(i, at: Int64(i)) }
    #expect(queue.popOlder(than: 2000) == Array(600..<1100))
    #expect(queue.count == 0)
}
