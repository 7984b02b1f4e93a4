import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultModel
import KeyVaultPostgres
import KeyVaultProtocol
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
        var state = try await first.test(.router) { client in
            var state = try await client.createAccount(phone)
            let added = try await client.append(phone, &state, AppendRequest(link: phone.link(.deviceAdd, after: state, body: tablet.deviceFields)))
            #expect(added.status == .created)
            return state
        }
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
