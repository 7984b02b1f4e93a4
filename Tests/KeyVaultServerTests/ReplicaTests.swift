import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultPostgres
import KeyVaultProtocol
import KeyVaultTestSupport
import Testing
@testable import KeyVaultServer

// Issue 10: replicas share only the store. Two services on one store stand for two
// `keyctl serve` processes behind a load balancer (on PostgreSQL, the real case).

/// Nonces of signed requests are single use across replicas: the store decides.
@Test(arguments: StoreBackend.all) func aSignedRequestReplayedToAnotherReplicaIsRefused(_ backend: StoreBackend) async throws {
    try await backend.withStore { store in
        try await expectReplayRefused(sentTo: testApplication(database: store), replayedTo: testApplication(database: store))
    }
}

/// A link appended through one replica is the head the other judges by, though the
/// other still has the chain cached from before it: a link on the old head is
/// stale_chain there (the store's compare-and-swap refuses it), never a fork.
@Test(arguments: StoreBackend.all) func aLinkAppendedThroughOneReplicaMakesTheOtherRefuseAStaleOne(_ backend: StoreBackend) async throws {
    try await backend.withStore { store in
        let phone = TestDevice("phone"), tablet = TestDevice("tablet"), laptop = TestDevice("laptop")
        let first = try testApplication(database: store), second = try testApplication(database: store)
        // The first replica creates the account and keeps its chain state in memory.
        let genesis = try await first.test(.router) { client in try await client.createAccount(phone) }
        try await second.test(.router) { client in
            var state = genesis
            let added = try await client.append(phone, &state, AppendRequest(link: phone.link(.deviceAdd, after: genesis, body: tablet.deviceFields)))
            #expect(added.status == .created)
        }
        try await first.test(.router) { client in
            var state = genesis
            let fork = try await client.append(phone, &state, AppendRequest(link: phone.link(.deviceAdd, after: genesis, body: laptop.deviceFields)))
            #expect(fork.status == .conflict && errorCode(fork) == "stale_chain")
            let chain = try decode(ChainResponse.self, try await client.signed(phone, .get, "/v1/accounts/\(genesis.account)/chain"))
            #expect(chain.links.map(\.sequence) == [0, 1] && chain.links[1].body == tablet.deviceFields)
        }
    }
}

/// A device revoked through one replica is refused by another on its very next
/// request, though that other replica served it (and cached it) just before.
/// Only stores that several processes share (PostgreSQL) have replicas.
@Test(arguments: StoreBackend.all.filter(\.isShared))
func aDeviceRevokedThroughOneReplicaIsRefusedByAnotherOnItsNextRequest(_ backend: StoreBackend) async throws {
    try await backend.withStore { store in
        let phone = TestDevice("phone"), tablet = TestDevice("tablet")
        let first = try testApplication(database: store), second = try testApplication(database: store)
        var state = try await first.test(.router) { client in try await client.createAccount(phone, adding: tablet) }
        let chainPath = "/v1/accounts/\(state.account)/chain"
        try await second.test(.router) { client in
            let response = try await client.signed(tablet, .get, chainPath)
            #expect(response.status == .ok)
        }
        let revoked = try await first.test(.router) { [state] client in
            var state = state
            let response = try await client.append(phone, &state, AppendRequest(link: phone.link(.deviceRevoke, after: state,
                                                                                                body: ["device": tablet.id.rawValue])))
            return (response.status, state)
        }
        #expect(revoked.0 == .created)
        state = revoked.1
        try await second.test(.router) { client in
            let response = try await client.signed(tablet, .get, chainPath)
            #expect(response.status == .forbidden && errorCode(response) == "device_revoked", "\(response.status)")
        }
    }
}

extension TestClientProtocol {
    /// `phone`'s new account, with `tablet` added.
    fileprivate func createAccount(_ phone: TestDevice, adding tablet: TestDevice) async throws -> ChainState {
        var state = try await createAccount(phone)
        let added = try await append(phone, &state, AppendRequest(link: phone.link(.deviceAdd, after: state, body: tablet.deviceFields)))
        #expect(added.status == .created)
        return state
    }
}

// Sessions and recovery state are shared through the secret file and the store, so a
// client may be sent to any replica for each request.

/// Replicas given one secret file: the secret of a test's "deployment".
private func sharedSecret() throws -> (ServerSecret, TemporaryDirectory) {
    let directory = try TemporaryDirectory("kv-secret")
    return (try ServerSecret.load(orCreateAt: directory.path("secret")), directory)
}

/// A session opened through one replica is honoured by another, and a session request
/// is single use across them (its nonce is stored, as the session outlives a process).
@Test(arguments: StoreBackend.all) func aSessionOpenedOnOneReplicaIsHonouredByAnotherAndItsRequestsAreSingleUse(_ backend: StoreBackend) async throws {
    let (secret, directory) = try sharedSecret()
    try await backend.withStore { store in
        let phone = TestDevice("phone")
        let first = try testApplication(database: store, secret: secret), second = try testApplication(database: store, secret: secret)
        let (account, session, captured) = try await first.test(.router) { client in
            let state = try await client.createAccount(phone)
            let session = try await client.openSession(phone, account: state.account)
            var captured = HTTPFields()
            for (name, value) in try RequestMAC.headers(method: "GET", path: "/v1/accounts/\(state.account)/chain", query: "", body: [],
                                                         session: session.0, key: session.1, timestamp: Int64(Date().timeIntervalSince1970)) {
                captured[HTTPField.Name(name)!] = value
            }
            #expect(try await client.execute(uri: "/v1/accounts/\(state.account)/chain", method: .get, headers: captured).status == .ok)
            return (state.account, session, captured)
        }
        try await second.test(.router) { client in
            #expect(try await client.macRequest(session, .get, "/v1/accounts/\(account)/chain").status == .ok)
            let replayed = try await client.execute(uri: "/v1/accounts/\(account)/chain", method: .get, headers: captured)
            #expect(replayed.status == .unauthorized && errorCode(replayed) == "replayed_nonce")
        }
        // A replica given another secret does not know the session (the device opens a new one there).
        try await testApplication(database: store).test(.router) { client in
            let response = try await client.macRequest(session, .get, "/v1/accounts/\(account)/chain")
            #expect(response.status == .unauthorized && errorCode(response) == "unknown_session")
        }
    }
    _ = directory
}

/// A replica that served a device (and cached it) lets its next request through only on
/// the store's copy, read in the nonce's own statement: a session (MAC) request, the kind
/// apps make for reads, of a device revoked through another replica is refused, and so is
/// one of a device whose account another replica deleted.
@Test(arguments: StoreBackend.all.filter(\.isShared))
func aReplicaThatCachedADeviceJudgesItsNextSessionRequestByTheStore(_ backend: StoreBackend) async throws {
    let (secret, directory) = try sharedSecret()
    try await backend.withStore { store in
        let phone = TestDevice("phone"), tablet = TestDevice("tablet")
        let first = try testApplication(database: store, secret: secret), second = try testApplication(database: store, secret: secret)
        // A replica whose sessions end with it (a secret of its own): their nonces stay in its memory.
        let third = try testApplication(database: store)
        let state = try await first.test(.router) { client in try await client.createAccount(phone, adding: tablet) }
        let chainPath = "/v1/accounts/\(state.account)/chain"
        let ownSession = try await third.test(.router) { client in
            let session = try await client.openSession(phone, account: state.account)
            #expect(try await client.macRequest(session, .get, chainPath).status == .ok)
            return session
        }
        let (tabletSession, phoneSession) = try await second.test(.router) { client in
            let sessions = (try await client.openSession(tablet, account: state.account), try await client.openSession(phone, account: state.account))
            #expect(try await client.macRequest(sessions.0, .get, chainPath).status == .ok)
            #expect(try await client.macRequest(sessions.1, .get, chainPath).status == .ok)
            return sessions
        }
        let revoked = try await first.test(.router) { client in
            var state = state
            let response = try await client.append(phone, &state, AppendRequest(link: phone.link(.deviceRevoke, after: state,
                                                                                                body: ["device": tablet.id.rawValue])))
            #expect(response.status == .created)
            return state
        }
        try await second.test(.router) { client in
            let response = try await client.macRequest(tabletSession, .get, chainPath)
            #expect(response.status == .forbidden && errorCode(response) == "device_revoked", "\(response.status)")
            #expect(try await client.macRequest(phoneSession, .get, chainPath).status == .ok)
        }
        try await first.test(.router) { client in
            let instance = try decode([String: String].self, try await client.execute(uri: "/v1/server", method: .get))["instance"] ?? ""
            let deleted = try await client.signed(phone, .delete, "/v1/accounts/\(state.account)?instance=\(instance)&head=\(revoked.head)")
            #expect(deleted.status == .noContent)
        }
        try await second.test(.router) { client in
            let response = try await client.macRequest(phoneSession, .get, chainPath)
            #expect(response.status == .unauthorized && errorCode(response) == "unknown_device", "\(response.status)")
        }
        try await third.test(.router) { client in
            let response = try await client.macRequest(ownSession, .get, chainPath)
            #expect(response.status == .unauthorized && errorCode(response) == "unknown_device", "\(response.status)")
        }
    }
    _ = directory
}

/// A recovery challenge issued by one replica is answered on another, its token taken
/// on a third, and each is single use across all of them.
@Test(arguments: StoreBackend.all) func aRecoveryEnrollmentMovesBetweenReplicasAndStaysSingleUse(_ backend: StoreBackend) async throws {
    let (secret, directory) = try sharedSecret()
    try await backend.withStore { store in
        let phone = TestDevice("phone"), laptop = TestDevice("laptop")
        let fixture = RecoveryFixture()
        let replicas = try (0..<3).map { _ in try testApplication(database: store, secret: secret) }
        let state = try await replicas[0].test(.router) { client in try await fixture.setUp(client, phone) }
        let base = "/v1/accounts/\(state.account)/recovery"
        let challenge = try await replicas[0].test(.router) { client in
            try decode(RecoveryChallenge.self, try await client.execute(uri: base + "/challenge", method: .post)).challenge
        }
        let proof = try jsonBody(fixture.proof(challenge, account: state.account))
        let session = try await replicas[1].test(.router) { client in
            let proven = try await client.execute(uri: base + "/proof", method: .post, body: proof)
            #expect(proven.status == .ok, "\(String(buffer: proven.body))")
            return try decode(RecoverySession.self, proven)
        }
        try await replicas[0].test(.router) { client in
            let replay = try await client.execute(uri: base + "/proof", method: .post, body: proof)
            #expect(replay.status == .unauthorized && errorCode(replay) == "bad_recovery_proof", "\(replay.status): \(String(buffer: replay.body))")
        }
        let enroll = try fixture.enrollment(of: laptop, after: state, token: session.token)
        try await replicas[2].test(.router) { client in
            let enrolled = try await client.execute(uri: base + "/enroll", method: .post, body: jsonBody(enroll))
            #expect(enrolled.status == .created, "\(String(buffer: enrolled.body))")
        }
        // Another device's enrollment after the new head, with the same token.
        var after = state
        try after.apply(enroll.link)
        let another = try jsonBody(try fixture.enrollment(of: TestDevice("tablet"), after: after, token: session.token))
        try await replicas[1].test(.router) { client in
            let again = try await client.execute(uri: base + "/enroll", method: .post, body: another)
            #expect(again.status == .unauthorized && errorCode(again) == "bad_recovery_token", "\(String(buffer: again.body))")
        }
    }
    _ = directory
}

/// Failed recovery proofs counted by one replica limit the next failure on another.
@Test(arguments: StoreBackend.all) func failedRecoveryProofsOnOneReplicaLimitTheOthers(_ backend: StoreBackend) async throws {
    let (secret, directory) = try sharedSecret()
    try await backend.withStore { store in
        let phone = TestDevice("phone"), stranger = RecoveryFixture()
        let first = try testApplication(database: store, secret: secret), second = try testApplication(database: store, secret: secret)
        let account = try await first.test(.router) { client in
            let account = try await RecoveryFixture().setUp(client, phone).account
            for _ in 0..<RecoveryGate.maxFailures {
                let challenge = try decode(RecoveryChallenge.self, try await client.execute(
                    uri: "/v1/accounts/\(account)/recovery/challenge", method: .post)).challenge
                let refused = try await client.execute(uri: "/v1/accounts/\(account)/recovery/proof", method: .post,
                                                       body: jsonBody(stranger.proof(challenge, account: account)))
                #expect(refused.status == .unauthorized)
            }
            return account
        }
        try await second.test(.router) { client in
            let challenge = try decode(RecoveryChallenge.self, try await client.execute(
                uri: "/v1/accounts/\(account)/recovery/challenge", method: .post)).challenge
            let limited = try await client.execute(uri: "/v1/accounts/\(account)/recovery/proof", method: .post,
                                                   body: jsonBody(stranger.proof(challenge, account: account)))
            #expect(limited.status == .tooManyRequests && limited.headers[.retryAfter] != nil)
        }
    }
    _ = directory
}

/// A replica judges by the chain as stored, not as it cached it: once a device set a
/// new recovery code through one replica, another that cached the chain before refuses
/// the old code's proof and accepts the new one's.
@Test(arguments: StoreBackend.all.filter(\.isShared))
func aReplicaJudgesByTheStoredChainNotTheOneItCached(_ backend: StoreBackend) async throws {
    let (secret, directory) = try sharedSecret()
    try await backend.withStore { store in
        let phone = TestDevice("phone"), old = RecoveryFixture(), new = RecoveryFixture()
        let first = try testApplication(database: store, secret: secret), second = try testApplication(database: store, secret: secret)
        let state = try await first.test(.router) { client in try await old.setUp(client, phone) }
        let account = state.account, base = "/v1/accounts/\(account)/recovery"
        @Sendable func prove(_ fixture: RecoveryFixture, _ client: some TestClientProtocol) async throws -> TestResponse {
            let challenge = try decode(RecoveryChallenge.self, try await client.execute(uri: base + "/challenge", method: .post)).challenge
            return try await client.execute(uri: base + "/proof", method: .post, body: jsonBody(fixture.proof(challenge, account: account)))
        }
        try await second.test(.router) { client async throws in
            #expect(try await prove(old, client).status == .ok)  // the second replica caches the chain now
        }
        try await first.test(.router) { client in
            var state = state
            try await new.set(client, phone, &state, generation: 2)
        }
        try await second.test(.router) { client in
            let stale = try await prove(old, client)
            #expect(stale.status == .unauthorized && errorCode(stale) == "bad_recovery_proof", "\(stale.status)")
            let current = try await prove(new, client)
            #expect(current.status == .ok, "\(String(buffer: current.body))")
        }
    }
    _ = directory
}
