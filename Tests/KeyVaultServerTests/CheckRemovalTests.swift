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

// Issue 8, item 8: server checks that no test noticed when they were removed one at a
// time (docs/security-tests.md lists every check and its test).

/// A device may append only links it signed itself: the phone cannot post a link the
/// tablet signed (one it kept, say), even though the link itself would apply.
@Test func aDeviceCannotAppendALinkAnotherDeviceSigned() async throws {
    try await testApplication().test(.router) { client in
        let phone = TestDevice("phone"), tablet = TestDevice("tablet")
        var state = try await client.createAccount(phone)
        try await client.append(phone, &state, AppendRequest(link: phone.link(.deviceAdd, after: state, body: tablet.deviceFields)))
        let head = state.head
        let byTablet = tablet.link(.masterRotate, after: state, body: ["masterGeneration": "2"])
        let response = try await client.append(phone, &state, AppendRequest(link: byTablet))
        #expect(response.status == .forbidden && errorCode(response) == "wrong_signer", "\(String(buffer: response.body))")
        #expect(state.head == head)
        // The same link from the device that signed it is accepted.
        let accepted = try await client.append(tablet, &state, AppendRequest(link: byTablet))
        #expect(accepted.status == .created, "\(String(buffer: accepted.body))")
    }
}

/// A box stored with a link names that link: one that names an earlier link (where its
/// signer or recipient stood otherwise) is refused, and nothing is stored.
@Test func aBoxThatNamesAnotherLinkThanItsOwnIsRefused() async throws {
    try await testApplication().test(.router) { client in
        let phone = TestDevice("phone")
        var state = try await client.createAccount(phone)
        let head = state.head
        let rotate = phone.link(.masterRotate, after: state, body: ["masterGeneration": "2"])
        var after = state
        try after.apply(rotate)
        let key = SymmetricKey()
        // Generation 2 did not exist at link 0: the box names the link it came with, so it is judged there.
        let early = try phone.box(key, generation: 1, for: phone, at: state.sequence, account: state.account)
        var response = try await client.append(phone, &state, AppendRequest(link: rotate, boxes: [early]))
        #expect(response.status == .badRequest, "\(String(buffer: response.body))")
        #expect(state.head == head)
        response = try await client.append(phone, &state, AppendRequest(
            link: rotate, boxes: [try phone.box(key, generation: 2, for: phone, at: after.sequence, account: state.account)]))
        #expect(response.status == .created, "\(String(buffer: response.body))")
    }
}

/// The recovery slot travels with the recovery.set link that names its keys: a slot
/// whose keys are not the link's (the server would then hand out a slot, and an
/// anchor, that the chain does not vouch for) is refused, and nothing is stored.
@Test func aRecoverySlotWhoseKeysTheLinkDoesNotNameIsRefused() async throws {
    try await testApplication().test(.router) { client in
        let phone = TestDevice("phone")
        let fixture = RecoveryFixture(), other = RecoveryFixture()
        var state = try await client.createAccount(phone, masterKey: fixture.masterKey)
        let head = state.head
        let link = phone.link(.recoverySet, after: state, body: [
            "authKey": Hex.encode(fixture.authKey.publicKey.rawRepresentation), "boxKey": Hex.encode(fixture.boxKey.publicKey.rawRepresentation),
            "recoveryGeneration": "1"])
        let response = try await client.append(phone, &state, AppendRequest(link: link, recovery: other.slot))
        #expect(response.status == .badRequest, "\(String(buffer: response.body))")
        #expect(state.head == head)
        let slot = try await client.execute(uri: "/v1/accounts/\(state.account)/recovery", method: .get)
        #expect(slot.status == .notFound)
        #expect(try await client.append(phone, &state, AppendRequest(link: link, recovery: fixture.slot)).status == .created)
    }
}

/// Holds requests in their last-seen update while set.
private final class Hold: Sendable {
    private let held = Locked(false)
    var isHeld: Bool { held.withLock { $0 } }
    func set(_ value: Bool) { held.withLock { $0 = value } }
}

/// A request of a device that is suspended (here, in its last-seen update) while the
/// device's revocation commits is refused when it resumes: the revocation wins over a
/// request in flight, not only over the requests that start after it.
@Test func aRequestInFlightWhenItsDeviceIsRevokedIsRefusedWhenItResumes() async throws {
    var configuration = ServerConfiguration()
    configuration.databasePath = "/unused"
    var service = try ServiceState(configuration: configuration, database: try KeyVaultDatabase.inMemory())
    let gate = TouchGate(), hold = Hold()
    service.authenticator.beforeTouch = {
        gate.enter()
        while hold.isHeld { try? await Task.sleep(for: .milliseconds(2)) }
    }
    try await testApplication(service).test(.router) { client in
        let phone = TestDevice("phone"), tablet = TestDevice("tablet")
        var state = try await client.createAccount(phone)
        _ = try await client.signed(phone, .get, "/v1/accounts/\(state.account)/chain")  // the phone's own last-seen, out of the way
        try await client.append(phone, &state, AppendRequest(link: phone.link(.deviceAdd, after: state, body: tablet.deviceFields)))
        let uri = "/v1/accounts/\(state.account)/devices"
        hold.set(true)
        let before = gate.count
        async let inFlight = client.signed(tablet, .get, uri)
        while gate.count == before { try await Task.sleep(for: .milliseconds(1)) }
        let revoked = try await client.append(phone, &state, AppendRequest(link: phone.link(.deviceRevoke, after: state, body: ["device": tablet.id.rawValue])))
        #expect(revoked.status == .created)
        hold.set(false)
        let response = try await inFlight
        #expect(response.status == .forbidden && errorCode(response) == "device_revoked", "\(response.status)")
    }
}

/// The service keeps the Argon2id floor too: a recovery slot below it is refused
/// (`weak_kdf`), so that no device can be handed a cheap-to-guess slot from here.
@Test func aRecoverySlotBelowTheArgon2idFloorIsNotStored() async throws {
    try await testApplication().test(.router) { client in
        let phone = TestDevice("phone")
        let fixture = RecoveryFixture()
        var state = try await client.createAccount(phone, masterKey: fixture.masterKey)
        let link = phone.link(.recoverySet, after: state, body: [
            "authKey": Hex.encode(fixture.authKey.publicKey.rawRepresentation), "boxKey": Hex.encode(fixture.boxKey.publicKey.rawRepresentation),
            "recoveryGeneration": "1"])
        var weak = fixture.slot
        weak.iterations = 1
        weak.memoryKiB = 8
        let response = try await client.append(phone, &state, AppendRequest(link: link, recovery: weak))
        #expect(response.status == .badRequest && errorCode(response) == "weak_kdf", "\(String(buffer: response.body))")
        #expect(try await client.execute(uri: "/v1/accounts/\(state.account)/recovery", method: .get).status == .notFound)
        #expect(try await client.append(phone, &state, AppendRequest(link: link, recovery: fixture.slot)).status == .created)
    }
}

/// A link request from a device already in the account is refused when it is made
/// (`device_exists`), not left pending for an approver to find that the chain refuses
/// it; and nothing is stored: the account's pending requests stay empty.
@Test func aLinkRequestFromADeviceAlreadyInTheAccountIsRefusedAtOnce() async throws {
    try await testApplication().test(.router) { client in
        let phone = TestDevice("phone")
        let state = try await client.createAccount(phone)
        let base = "/v1/accounts/\(state.account)/link-requests"
        let again = try await client.execute(uri: base, method: .post, body: jsonBody(phone.linkRequest(account: state.account)))
        #expect(again.status == .conflict && errorCode(again) == "device_exists", "\(again.status) \(String(buffer: again.body))")
        #expect(try decode([String: [LinkRequestInfo]].self, try await client.signed(phone, .get, base))["requests"] == [])
    }
}

/// A recovery enrollment appends one device.add signed with the recovery key and nothing
/// else. First its link is a device.add the phone signed at the current head (one it
/// made for a link it never sent, say), which the chain alone would take: the token
/// must not let it in. Then a recovery.set the recovery key signed (the chain lets that
/// key set a code), with a device field and a box so that nothing else refuses it first.
/// Each is refused as malformed, for what it is, and the chain stays as it was.
@Test func aRecoveryEnrollmentOfALinkTheRecoveryKeyDidNotSignIsRefused() async throws {
    try await testApplication().test(.router) { client in
        let phone = TestDevice("phone"), laptop = TestDevice("laptop")
        let fixture = RecoveryFixture()
        let state = try await fixture.setUp(client, phone)
        let session = try await fixture.prove(client, account: state.account)
        let honest = try fixture.enrollment(of: laptop, after: state, token: session.token)
        var byPhone = honest
        byPhone.link = phone.link(.deviceAdd, after: state, body: laptop.deviceFields)
        var setsACode = honest
        setsACode.link = ChainLink(sequence: state.sequence + 1, previous: state.head, type: .recoverySet, signer: ChainLink.recoverySigner,
                                   time: 1_700_000_200, body: ["device": laptop.id.rawValue, "authKey": Hex.encode(Ed25519.PrivateKey().publicKey.rawRepresentation),
                                                               "boxKey": Hex.encode(X25519.PrivateKey().publicKey.rawRepresentation), "recoveryGeneration": "2"])
        setsACode.link.sign(with: fixture.authKey)
        for request in [byPhone, setsACode] {
            let refused = try await client.execute(uri: "/v1/accounts/\(state.account)/recovery/enroll", method: .post, body: jsonBody(request))
            #expect(refused.status == .badRequest && errorCode(refused) == "malformed_link"
                    && String(buffer: refused.body).contains("signed with the recovery key"), "\(refused.status) \(String(buffer: refused.body))")
        }
        let chain = try decode(ChainResponse.self, try await client.signed(phone, .get, "/v1/accounts/\(state.account)/chain"))
        #expect(chain.head == state.head && chain.links.count == Int(state.sequence) + 1)
    }
}
