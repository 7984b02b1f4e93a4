import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultPostgres
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
    #expect(gate.wasIssued(challenge: challenge, for: other) == false)  // bound to its account
    var forged = Array(challenge)
    forged[0] = forged[0] == "0" ? "1" : "0"  // a later expiry, say
    #expect(gate.wasIssued(challenge: String(forged), for: account) == false)
    #expect(gate.wasIssued(challenge: challenge.uppercased(), for: account) == false)
    #expect(gate.wasIssued(challenge: "zz", for: account) == false)
    #expect(try RecoveryGate(database: store, secret: .ephemeral()).wasIssued(challenge: challenge, for: account) == false)  // another secret
    #expect(gate.wasIssued(challenge: challenge, for: account))
    #expect(try await gate.close(challenge: challenge, for: other) == false)
    #expect(try await gate.close(challenge: challenge, for: account))
    #expect(try await gate.close(challenge: challenge, for: account) == false)  // single use
    #expect(try await store.rowCount(of: "used_once") == 1)
}

/// Wrong proofs sent at once, to two replicas of one store, count at most the limit
/// (the check and the count are one step in the store), and write at most that many
/// audit rows; the rest are rate limited.
@Test(arguments: StoreBackend.all) func wrongProofsSentAtOnceCountAtMostTheLimit(_ backend: StoreBackend) async throws {
    try await backend.withStore { store in
        let secret = ServerSecret.ephemeral()
        let first = try testApplication(database: store, secret: secret), second = try testApplication(database: store, secret: secret)
        let phone = TestDevice("phone"), stranger = RecoveryFixture()
        let account = try await first.test(.router) { client in try await RecoveryFixture().setUp(client, phone).account }
        let base = "/v1/accounts/\(account)/recovery"
        let statuses = try await first.test(.router) { one in
            try await second.test(.router) { two in
                try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    for i in 0..<24 {
                        let client: any TestClientProtocol = i % 2 == 0 ? one : two
                        group.addTask {
                            let challenge = try decode(RecoveryChallenge.self, try await client.execute(uri: base + "/challenge", method: .post)).challenge
                            return try await client.execute(uri: base + "/proof", method: .post,
                                                            body: jsonBody(stranger.proof(challenge, account: account))).status
                        }
                    }
                    return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
                }
            }
        }
        #expect(statuses.filter { $0 == .unauthorized }.count == RecoveryGate.maxFailures, "\(statuses)")
        #expect(statuses.filter { $0 == .tooManyRequests }.count == 24 - RecoveryGate.maxFailures)
        let audit = try await store.audit(account)
        #expect(audit.filter { $0.event == AuditEvent.refusedRecoveryProof.rawValue }.count == RecoveryGate.maxFailures)
    }
}

/// A proof for a challenge this service did not issue for the account (another
/// account's, an expired one, made up) cannot pass, and is refused without being counted.
@Test func aProofForAChallengeNotIssuedHereIsRefusedWithoutCounting() async throws {
    let store = try KeyVaultDatabase.inMemory()
    try await testApplication(database: store).test(.router) { client in
        let phone = TestDevice("phone"), stranger = RecoveryFixture()
        let account = try await RecoveryFixture().setUp(client, phone).account
        let foreign = try RecoveryGate(database: store, secret: .ephemeral()).issueChallenge(for: account).challenge
        for challenge in [foreign, String(repeating: "0", count: 64), "zz"] {
            let response = try await client.execute(uri: "/v1/accounts/\(account)/recovery/proof", method: .post,
                                                    body: jsonBody(stranger.proof(challenge, account: account)))
            #expect(response.status == .unauthorized && errorCode(response) == "bad_recovery_proof")
        }
        #expect(try await store.rowCount(of: "failures") == 0)
    }
}

/// A ticket made with the right key but expiring later than one issued now would (only
/// a holder of the secret file could make one) is refused, so no used one is kept for ever.
@Test func aTicketExpiringBeyondItsLifetimeIsRefused() throws {
    let key = SymmetricKey()
    let account = AccountID(unchecked: String(repeating: "a", count: 32))
    let (stretched, _) = try Ticket(kind: "recovery-token", key: key, lifetime: 1_000_000).issue(for: account)
    let ticket = Ticket(kind: "recovery-token", key: key, lifetime: RecoveryGate.tokenLifetime)
    #expect(ticket.expiry(of: stretched, for: account, now: RecoveryGate.now()) == nil)
    let (fresh, expires) = try ticket.issue(for: account)
    #expect(ticket.expiry(of: fresh, for: account, now: RecoveryGate.now()) == expires)
}
