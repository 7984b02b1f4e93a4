import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import Testing
@testable import KeyVaultServer
import KeyVaultStore

/// Item 7 of issue 8: a cached chain state behind the database (a slow request
/// storing its older state after a newer one) must not refuse every later write.
@Test func aStaleCachedChainNeverKeepsRefusingWrites() async throws {
    var configuration = ServerConfiguration()
    configuration.databasePath = "/unused"
    let service = try ServiceState(configuration: configuration, database: try KeyVaultDatabase.inMemory())
    try await testApplication(service).test(.router) { client in
        let phone = TestDevice("phone")
        var state = try await client.createAccount(phone)
        let genesis = state
        var response = try await client.append(phone, &state, AppendRequest(link: phone.link(.masterRotate, after: state, body: ["masterGeneration": "2"])))
        #expect(response.status == .created)
        // The cache goes back to the genesis state, as a late store would leave it.
        await service.chains.forget(state.account)
        await service.chains.store(genesis)
        response = try await client.append(phone, &state, AppendRequest(link: phone.link(.masterRotate, after: state, body: ["masterGeneration": "3"])))
        #expect(response.status == .created, "\(String(buffer: response.body))")
        // And a late store of an older state does not replace a newer one.
        await service.chains.store(genesis)
        response = try await client.append(phone, &state, AppendRequest(link: phone.link(.masterRotate, after: state, body: ["masterGeneration": "4"])))
        #expect(response.status == .created, "\(String(buffer: response.body))")
    }
}
