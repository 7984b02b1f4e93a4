import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultTestSupport
import Testing
@testable import KeyVaultServer
@testable import KeyVaultStore

/// Item 6 of issue 8: the nonce ledger of Ed25519-signed requests outlives the process.
@Test func aSignedRequestCapturedBeforeARestartIsRefusedAfterIt() async throws {
    let directory = try TemporaryDirectory("kv-server")
    let path = directory.path("keyvault.sqlite")
    // A restart: a new service (new memory) on the same database file.
    try await expectReplayRefused(sentTo: testApplication(onFile: path), replayedTo: testApplication(onFile: path))
}

/// Creates an account through `first` and sends it a signed request, then replays that
/// request to `second`: refused as replayed, while a fresh request of the device goes through.
func expectReplayRefused(sentTo first: some ApplicationProtocol, replayedTo second: some ApplicationProtocol) async throws {
    let phone = TestDevice("phone")
    let uri = "/v1/accounts/\(try ChainState(genesis: phone.genesis()).account)/chain"
    let captured = phone.signedHeaders(.get, uri, body: [])
    try await first.test(.router) { client in
        _ = try await client.createAccount(phone)
        #expect(try await client.execute(uri: uri, method: .get, headers: captured).status == .ok)
    }
    try await second.test(.router) { client in
        let replayed = try await client.execute(uri: uri, method: .get, headers: captured)
        #expect(replayed.status == .unauthorized && errorCode(replayed) == "replayed_nonce")
        #expect(try await client.signed(phone, .get, uri).status == .ok)
    }
}
