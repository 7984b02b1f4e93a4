import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultPostgres
import KeyVaultProtocol
import KeyVaultStore
import KeyVaultTestSupport
import Testing
@testable import KeyVaultServer

/// An account's chain and what a server keeps with it, built here as devices would on
/// another server: a phone, a laptop it added and then revoked, a recovery code, a member.
private struct Exported {
    let phone = TestDevice("phone"), laptop = TestDevice("laptop")
    let recovery = RecoveryFixture()
    var links: [ChainLink] = []
    var boxes: [KeyBox] = []
    var wraps: [MemberWrap] = []
    var state: ChainState

    init() throws {
        let genesis = phone.genesis()
        state = try ChainState(genesis: genesis)
        links = [genesis]
        boxes = [try phone.box(recovery.masterKey, generation: 1, for: phone, at: 0, account: state.account)]
        try add(phone.link(.deviceAdd, after: state, body: laptop.deviceFields))
        boxes.append(try phone.box(recovery.masterKey, generation: 1, for: laptop, at: state.sequence, account: state.account))
        try add(phone.link(.recoverySet, after: state, body: [
            "authKey": Hex.encode(recovery.authKey.publicKey.rawRepresentation), "boxKey": Hex.encode(recovery.boxKey.publicKey.rawRepresentation),
            "recoveryGeneration": "1"]))
        var codes = KeyBox(generation: 1, sequence: state.sequence, recipient: ChainLink.recoverySigner,
                           box: base64Encode(try recovery.boxKey.publicKey.sealedBox(for: recovery.masterKey)), signer: phone.id.rawValue, signature: "")
        codes.sign(with: phone.signing, account: state.account)
        boxes.append(codes)
        let member = MemberID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))
        try add(phone.link(.memberAdd, after: state, body: ["member": member.rawValue, "memberGeneration": "1"]))
        let context = try EnvelopeContext(purpose: "member-key", ["account": state.account.rawValue, "member": member.rawValue,
                                                                 "member-generation": "1", "master-generation": "1"])
        wraps = [MemberWrap(member: member, memberGeneration: 1, masterGeneration: 1,
                            envelope: try Envelope.seal(SymmetricKey(), under: recovery.masterKey, generation: 1, context: context).base64)]
        try add(phone.link(.deviceRevoke, after: state, body: ["device": laptop.id.rawValue]))
    }

    mutating func add(_ link: ChainLink) throws {
        try state.apply(link)
        links.append(link)
    }

    /// The import of the chain up to link `through` (the whole by default).
    func request(through: Int? = nil) -> ImportAccountRequest {
        let end = through ?? links.count - 1
        return ImportAccountRequest(links: Array(links[...end]), boxes: boxes.filter { $0.sequence <= UInt64(end) },
                                    wraps: end == links.count - 1 ? wraps : [], recovery: end >= 2 ? recovery.slot : nil, identityWraps: [])
    }
}

extension TestClientProtocol {
    /// This service's instance (`GET /v1/server`), which an import names in its signed query.
    fileprivate func instance() async throws -> String {
        try decode([String: String].self, try await execute(uri: "/v1/server", method: .get))["instance"] ?? ""
    }

    fileprivate func importURI() async throws -> String { "/v1/accounts/import?instance=\(try await instance())" }

    fileprivate func importAccount(_ request: ImportAccountRequest, signedBy device: TestDevice) async throws -> TestResponse {
        try await signedJSON(device, .post, try await importURI(), request)
    }
}

/// Issue 22, item 1. `POST /v1/accounts/import` replays the chain and checks every box
/// where it was made, as appends are checked; it is taken only signed by a device
/// active at the head it brings (not the device the chain revoked), and nothing of a
/// refused import is stored. One cut off goes on from the head the server holds; one
/// whose chain is not the stored one's continuation is refused; the revocation the
/// chain carries holds here from the first request.
@Test(arguments: StoreBackend.all) func anImportIsReplayedCheckedAndSignedByADeviceActiveAtItsHead(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let exported = try Exported()
        let account = exported.state.account
        func held() async throws -> TestResponse { try await client.signed(exported.phone, .get, "/v1/accounts/\(account)/chain") }

        // The device the chain revoked cannot place it; nor can anyone with a box moved to another link.
        let byLaptop = try await client.importAccount(exported.request(), signedBy: exported.laptop)
        #expect(byLaptop.status == .forbidden && errorCode(byLaptop) == "wrong_signer")
        var moved = exported.request()
        moved.boxes[1].sequence = 3
        let movedBox = try await client.importAccount(moved, signedBy: exported.phone)
        #expect(movedBox.status == .unauthorized && errorCode(movedBox) == "bad_signature", "\(String(buffer: movedBox.body))")
        var tampered = exported.request()
        tampered.links[3] = exported.laptop.link(.memberAdd, after: try ChainState(links: Array(exported.links[...2])),
                                                 body: ["member": Hex.encode(SystemRandom.bytes(count: 16)), "memberGeneration": "1"])
        let broken = try await client.importAccount(tampered, signedBy: exported.phone)
        #expect(broken.status == .conflict && errorCode(broken) == "stale_chain", "\(String(buffer: broken.body))")
        // The request's signature is checked before the replay, with the key the chain gives
        // the device it names: a stranger (no device of the chain) is refused as one, not
        // after the server checked every link for it.
        let byStranger = try await client.importAccount(tampered, signedBy: TestDevice("stranger"))
        #expect(byStranger.status == .forbidden && errorCode(byStranger) == "wrong_signer", "\(String(buffer: byStranger.body))")
        // What goes beside the chain names the head's keys: a wrap of no member, a slot of another code.
        var stray = exported.request()
        stray.wraps[0].member = MemberID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))
        #expect(try await client.importAccount(stray, signedBy: exported.phone).status == .badRequest)
        var otherCode = exported.request()
        otherCode.recovery = RecoveryFixture().slot
        #expect(try await client.importAccount(otherCode, signedBy: exported.phone).status == .badRequest)
        // Signed, but not this body; signed too long ago; signed again with a nonce used.
        let body = Array(try JSONEncoder().encode(exported.request()))
        var other = exported.request()
        other.wraps = []
        let uri = try await client.importURI()
        var headers = exported.phone.signedHeaders(.post, uri, body: body)
        headers[.contentType] = "application/json"
        let swapped = try await client.execute(uri: uri, method: .post, headers: headers, body: try jsonBody(other))
        #expect(swapped.status == .unauthorized && errorCode(swapped) == "bad_signature")
        var old = exported.phone.signedHeaders(.post, uri, body: body, timestamp: Int64(Date().timeIntervalSince1970) - 3600)
        old[.contentType] = "application/json"
        let late = try await client.execute(uri: uri, method: .post, headers: old, body: ByteBuffer(bytes: body))
        // Signed for another server (replayed here), or for none: refused.
        for other in ["/v1/accounts/import?instance=0123456789abcdef", "/v1/accounts/import"] {
            var elsewhere = exported.phone.signedHeaders(.post, other, body: body)
            elsewhere[.contentType] = "application/json"
            let refused = try await client.execute(uri: other, method: .post, headers: elsewhere, body: ByteBuffer(bytes: body))
            #expect(refused.status == .forbidden && errorCode(refused) == "wrong_server", "\(other)")
        }
        #expect(late.status == .unauthorized && errorCode(late) == "stale_timestamp")
        #expect(try await held().status != .ok, "a refused import left the account here")

        // A part first (an import cut off after link 2), then the whole: brought forward.
        let part = try await client.importAccount(exported.request(through: 2), signedBy: exported.phone)
        #expect(part.status == .created, "\(String(buffer: part.body))")
        // The laptop is active at link 2, and the server is on it: the laptop is served until the rest arrives.
        #expect(try await client.signed(exported.laptop, .get, "/v1/accounts/\(account)/boxes").status == .ok)
        let rest = try await client.importAccount(exported.request(), signedBy: exported.phone)
        #expect(rest.status == .created, "\(String(buffer: rest.body))")
        #expect(try decode(ImportAccountResponse.self, rest).appended == 2)
        let chain = try decode(ChainResponse.self, try await held())
        #expect(chain.links.map(\.hash) == exported.links.map(\.hash) && chain.head == exported.state.head)

        // What went with it: the boxes, the member's wrap, the recovery slot; the revocation holds.
        let boxes = try decode([String: [KeyBox]].self, try await client.signed(exported.phone, .get, "/v1/accounts/\(account)/boxes?recipient=all"))["boxes"] ?? []
        #expect(Set(boxes.map(\.recipient)) == [exported.phone.id.rawValue, exported.laptop.id.rawValue, ChainLink.recoverySigner])
        let member = exported.wraps[0].member
        let wraps = try decode([String: [MemberWrap]].self, try await client.signed(exported.phone, .get, "/v1/accounts/\(account)/wraps?member=\(member)"))
        #expect(wraps["wraps"] == exported.wraps)
        let slot = try decode(RecoverySlot.self, try await client.execute(uri: "/v1/accounts/\(account)/recovery", method: .get))
        #expect(slot.authKey == exported.request().recovery?.authKey)
        let laptop = try await client.signed(exported.laptop, .get, "/v1/accounts/\(account)/boxes")
        #expect(laptop.status == .forbidden || laptop.status == .unauthorized, "the device the chain revoked is served after the import")

        // Again, freshly signed: nothing new. A chain that forks from the one held: refused.
        let again = try await client.importAccount(exported.request(), signedBy: exported.phone)
        #expect(try again.status == .ok && decode(ImportAccountResponse.self, again).appended == 0)
        var fork = exported
        fork.links.removeLast()
        fork.state = try ChainState(links: fork.links)
        try fork.add(fork.phone.link(.memberAdd, after: fork.state, body: ["member": Hex.encode(SystemRandom.bytes(count: 16)), "memberGeneration": "1"]))
        let forked = try await client.importAccount(fork.request(), signedBy: fork.phone)
        #expect(forked.status == .conflict && errorCode(forked) == "account_exists", "\(String(buffer: forked.body))")
        #expect(try decode(ChainResponse.self, try await held()).head == exported.state.head)

        // A replayed import is refused; a deleted account is not founded again by its chain as it
        // stood (a thief's copy from before a revocation), only by one that goes on from there.
        let replayed = try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(bytes: body))
        #expect(replayed.status == .ok)
        let again2 = try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(bytes: body))
        #expect(again2.status == .unauthorized && errorCode(again2) == "replayed_nonce")
        #expect(try await client.signed(exported.phone, .delete, "/v1/accounts/\(account)?instance=\(try await client.instance())&head=\(exported.state.head)").status == .noContent)
        let back = try await client.importAccount(exported.request(), signedBy: exported.phone)
        #expect(back.status == .conflict && String(buffer: back.body).contains("deleted"), "\(String(buffer: back.body))")
        #expect(try await held().status != .ok)
        // A chain that goes on from the head it had when deleted founds it again (moving back),
        // but only imported by the device that deleted it: not by another device of the chain
        // (as a thief's, active there, revoked only on the server the account moved to).
        var later = exported
        let tablet = TestDevice("tablet")
        try later.add(later.phone.link(.deviceAdd, after: later.state, body: tablet.deviceFields))
        later.boxes.append(try later.phone.box(later.recovery.masterKey, generation: 1, for: tablet, at: later.state.sequence, account: later.state.account))
        let byTablet = try await client.importAccount(later.request(), signedBy: tablet)
        #expect(byTablet.status == .conflict && String(buffer: byTablet.body).contains("deleted"), "\(String(buffer: byTablet.body))")
        let returned = try await client.importAccount(later.request(), signedBy: later.phone)
        #expect(returned.status == .created, "\(String(buffer: returned.body))")
    }
}

/// On a server that takes new accounts by invitation, an import that creates one takes the token as creation does.
@Test(arguments: StoreBackend.all) func anImportThatCreatesAnAccountTakesTheInviteToken(_ backend: StoreBackend) async throws {
    try await testApplication(backend) { $0.inviteToken = "family-invite-0123456789" }.test(.router) { client in
        let exported = try Exported()
        let refused = try await client.importAccount(exported.request(), signedBy: exported.phone)
        #expect(refused.status == .forbidden && errorCode(refused) == "invite_required")
        let body = Array(try JSONEncoder().encode(exported.request()))
        let uri = try await client.importURI()
        var headers = exported.phone.signedHeaders(.post, uri, body: body)
        headers[.contentType] = "application/json"
        headers[HTTPField.Name("KeyVault-Invite")!] = "family-invite-0123456789"
        #expect(try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(bytes: body)).status == .created)

        // Second review of the service, finding 1: without the token nothing else is looked at
        // first. Replaying a chain costs a signature check per link (and more per member): an
        // anonymous client must not make an invitation-only server do that work for free.
        var other = try Exported()
        other.links[2].signature = exported.links[2].signature
        let stranger = TestDevice("stranger")
        let unread = try await client.importAccount(other.request(), signedBy: stranger)
        #expect(unread.status == .forbidden && errorCode(unread) == "invite_required", "\(String(buffer: unread.body))")
        // Nor is its body read: over the route's limit, it is still refused for the token (it was 413).
        let huge = [UInt8](repeating: 32, count: ImportAccountRequest.maxBytes + 1)
        var hugeHeaders = stranger.signedHeaders(.post, uri, body: huge)
        hugeHeaders[.contentType] = "application/json"
        let notRead = try await client.execute(uri: uri, method: .post, headers: hugeHeaders, body: ByteBuffer(bytes: huge))
        #expect(notRead.status == .forbidden && errorCode(notRead) == "invite_required", "\(notRead.status)")
    }
}
