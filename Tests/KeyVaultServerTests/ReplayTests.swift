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
    let phone = TestDevice("phone")
    let account = ChainLink.genesis(signingKey: phone.signing, boxKey: phone.agreement.publicKey, name: phone.name, time: 1_700_000_000)
    let uri = "/v1/accounts/\(try ChainState(genesis: account).account)/chain"
    let captured = phone.signedHeaders(.get, uri, body: [])
    try await testApplication(onFile: path).test(.router) { client in
        _ = try await client.createAccount(phone)
        #expect(try await client.execute(uri: uri, method: .get, headers: captured).status == .ok)
    }
    // A restart: a new service (new memory) on the same database file.
    try await testApplication(onFile: path).test(.router) { client in
        let replayed = try await client.execute(uri: uri, method: .get, headers: captured)
        #expect(replayed.status == .unauthorized && errorCode(replayed) == "replayed_nonce")
        // A fresh request of the same device still goes through.
        #expect(try await client.signed(phone, .get, uri).status == .ok)
    }
}
