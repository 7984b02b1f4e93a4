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

/// A link `apply` refuses changes nothing, whichever check refuses it and however far
/// the link got: the cache and every append judge the next link by the state it left.
/// (Each case below fails after the link's earlier changes would have been made, in an
/// `apply` that changed the state as it went.)
@Test func aRefusedLinkLeavesTheChainStateAsItWas() throws {
    let phone = TestDevice("phone"), tablet = TestDevice("tablet")
    var state = try ChainState(genesis: phone.genesis())
    try state.apply(phone.link(.deviceAdd, after: state, body: tablet.deviceFields))
    let member = Hex.encode(SystemRandom.bytes(count: 16))
    try state.apply(phone.link(.memberAdd, after: state, body: ["member": member, "memberGeneration": "1"]))
    let refused: [(String, ChainLink)] = [
        ("a master rotation with a malformed check", phone.link(.masterRotate, after: state, body: ["masterGeneration": "2", "masterKeyCheck": "not hex"])),
        ("a reset whose recovery generation skips", phone.link(.accountReset, after: state, body: [
            "masterGeneration": "2", "masterKeyCheck": String(repeating: "ab", count: 16), "recoveryGeneration": "5",
            "authKey": Hex.encode(Ed25519.PrivateKey().publicKey.rawRepresentation), "boxKey": Hex.encode(X25519.PrivateKey().publicKey.rawRepresentation)])),
        ("a member added twice", phone.link(.memberAdd, after: state, body: ["member": member, "memberGeneration": "1"])),
        ("a rotation that skips", phone.link(.memberRotate, after: state, body: ["member": member, "memberGeneration": "3"])),
        ("a device added twice", phone.link(.deviceAdd, after: state, body: tablet.deviceFields)),
        ("a contact pin with a malformed key", phone.link(.contactPin, after: state, body: [
            "account": Hex.encode(SystemRandom.bytes(count: 16)), "identityGeneration": "1", "signingKey": "00", "boxKey": "00"])),
    ]
    for (what, link) in refused {
        var after = state
        #expect(throws: (any Error).self, "\(what) was taken") { try after.apply(link) }
        #expect(after == state, "\(what) changed the state it was refused by")
    }
    // A revocation refused at its last check: the last active device.
    let alone = try ChainState(genesis: phone.genesis())
    var after = alone
    #expect(throws: (any Error).self) { try after.apply(phone.link(.deviceRevoke, after: alone, body: ["device": phone.id.rawValue])) }
    #expect(after == alone, "a refused revocation changed the state")
}
