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

// Proofs of concept from the security review of branch sec-review (round after issue 8).
// Each test states what SHOULD hold; it fails on the code reviewed.

/// SEC-2. Link requests are unauthenticated and limited to 5 pending per client address
/// (IPv6 /64) and 10 000 pending on the whole server. 2 000 addresses (one IPv6 /53; a
/// free tunnel-broker /48 has 65 536 /64s) fill the server-wide cap for 10 minutes, renewable,
/// and from then on every account's `keyctl device link` gets 429. The stranger needs
/// only an account id (its own account will do: creating one is unauthenticated).
/// Each request also writes a `link_request.created` row into the target account's audit
/// log, which nothing prunes: strangers grow a victim's audit log at up to 10 000 rows
/// per 10 minutes.
@Test func secReviewStrangersWithManyAddressesCannotStopEveryonesDeviceLink() async throws {
    let database = try KeyVaultDatabase.inMemory()
    try await testApplication(database: database).test(.router) { client in
        let victim = try await client.createAccount(TestDevice("owner's phone"))
        let attacker = try await client.createAccount(TestDevice("stranger"))
        // What POST /v1/accounts/{attacker}/link-requests stores for 2 000 distinct /64s, 5 each
        // (the same well-formed body may be posted again and again).
        let spam = TestDevice("spam").linkRequest(account: attacker.account)
        let expires = Int64(Date().timeIntervalSince1970) + KeyService.linkRequestLifetime
        var stored = 0
        outer: for prefix in 0..<(KeyService.maxPendingLinkRequests / KeyService.maxPendingLinkRequestsPerClient) {
            let bucket = KeyService.addressBucket("2001:db8:\(String(prefix, radix: 16))::1")
            for i in 0..<KeyService.maxPendingLinkRequestsPerClient {
                do {
                    try await database.createLinkRequest(attacker.account, code: String(format: "S%04X%05X", prefix, i).prefix(10).description,
                                                         expires: expires, request: spam, client: bucket,
                                                         perClient: KeyService.maxPendingLinkRequestsPerClient,
                                                         total: KeyService.maxPendingLinkRequests)
                    stored += 1
                } catch { break outer }
            }
        }
        #expect(stored == KeyService.maxPendingLinkRequests)

        // The owner's new tablet, from its own address, on another account, asks to join.
        let owner = try await client.execute(uri: "/v1/accounts/\(victim.account)/link-requests", method: .post,
                                             body: jsonBody(TestDevice("owner's tablet").linkRequest(account: victim.account)))
        #expect(owner.status == .created, "the owner's device link was refused: \(owner.status) \(errorCode(owner) ?? "")")
    }
}

/// SEC-4. Behind a trusted proxy, an X-Forwarded-For entry that does not parse as a bare
/// address ("203.0.113.9:51234", "[2001:db8::1]:443", "unknown", as some proxies and load
/// balancers write them) makes the client the proxy itself: every such client then shares
/// one bucket, i.e. 5 pending link requests and 5 failed recovery proofs per 15 minutes for
/// everyone behind the proxy. Expected: an unparsable entry from the proxy is its own bucket
/// (or the port is stripped), never the proxy's address.
@Test func secReviewAForwardedAddressWithAPortIsNotCountedAsTheProxy() {
    let trusted = [IPNetwork("10.0.0.0/8")!]
    for entry in ["203.0.113.9:51234", "[2001:db8::1]:443"] {
        let client = ClientAddress.resolve(peer: "10.0.0.2", forwardedFor: [entry], trusted: trusted)
        #expect(client != "10.0.0.2", "\(entry) was counted as the proxy 10.0.0.2")
    }
}
