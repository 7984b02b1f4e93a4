import KeyVaultCrypto
import KeyVaultModel
import Testing
@testable import KeyVaultProtocol

// docs/formats/member-sharing.md: the sharing links of a chain, the contact safety
// code and share boxes, against an independent implementation and rule by rule.

// MARK: Vectors

struct SharingFile: Decodable {
    struct Box: Decodable { let note: String, box: ShareBox, outcome: String, signedBytes: String }
    struct Identity: Decodable { let account: AccountID, identityGeneration: UInt32, signingKey: String, boxKey: String }
    struct Contact: Decodable {
        let initiator: Identity, responder: Identity
        let initiatorNonce: String, responderNonce: String, commitment: String, safetyCode: String, wrongNonce: String
    }
    let account: String, head: String, member: MemberID, grantee: AccountID
    let steps: [ChainFile.Step], boxes: [Box], contacts: [Contact]
}

private func identity(_ v: SharingFile.Identity) throws -> ContactIdentity {
    ContactIdentity(account: v.account, generation: v.identityGeneration,
                    signingKey: try Ed25519.PublicKey(rawRepresentation: Hex.decode(v.signingKey)),
                    boxKey: try X25519.PublicKey(rawRepresentation: Hex.decode(v.boxKey)))
}

/// The sharer's chain, step by step: each valid link with the same signed bytes and
/// hash, each refused one with the same code and the state left as it was.
@Test func sharingLinksMatchTheIndependentImplementation() throws {
    let file = try vectors.load("member-sharing-v1", as: SharingFile.self)
    #expect(Set(file.steps.map(\.outcome)) == ["valid", "no_identity", "stale_generation", "unknown_signer", "malformed_link",
                                                "unknown_contact", "contact_changed", "unknown_member", "grant_exists", "unknown_grant"])
    var state = try ChainState(genesis: try #require(file.steps.first).link)
    for step in file.steps.dropFirst() {
        if step.outcome == "valid" {
            #expect(Hex.encode(step.link.signedBytes) == step.signedBytes, "\(step.note)")
            #expect(step.link.hash == step.hash, "\(step.note)")
        }
        let before = state
        expectOutcome(step.outcome, step.note) { try state.apply(step.link) }
        if step.outcome != "valid" { #expect(state == before, "\(step.note) changed the state") }
    }
    #expect(state.account.rawValue == file.account && state.head == file.head)
    #expect(state.identity?.generation == 2 && state.contacts[file.grantee]?.generation == 2)
    let grant = try #require(state.grants[.init(member: file.member, grantee: file.grantee)])
    #expect(!grant.readOnly && grant.granteeIdentityGeneration == 2)
    #expect(state.revokedGrants.count == 1 && state.revokedGrants[0].readOnly && state.revokedGrants[0].revoked != nil)
}

/// Share boxes judged against the sharer's whole chain, as the independent
/// implementation judges them.
@Test func shareBoxesAreJudgedAsTheIndependentImplementationDoes() throws {
    let file = try vectors.load("member-sharing-v1", as: SharingFile.self)
    let chain = try ChainState(links: file.steps.filter { $0.outcome == "valid" }.map(\.link))
    #expect(Set(file.boxes.map(\.outcome)) == ["valid", "wrong_generation", "unknown_member", "unknown_grant", "bad_signature",
                                                "malformed_box"])
    for vector in file.boxes {
        #expect(Hex.encode(vector.box.signedBytes(sharer: chain.account)) == vector.signedBytes, "\(vector.note)")
        expectOutcome(vector.outcome, vector.note) { try vector.box.verify(in: chain) }
    }
}

/// The commitment and the safety code as the independent implementation computes
/// them; a nonce that does not open the commitment, or any changed part of the
/// transcript, gives something else.
@Test func contactCommitmentAndSafetyCodeMatchTheIndependentImplementation() throws {
    let file = try vectors.load("member-sharing-v1", as: SharingFile.self)
    #expect(file.contacts.count == 3)
    for v in file.contacts {
        let a = try identity(v.initiator), b = try identity(v.responder)
        let rA = try Hex.decode(v.initiatorNonce), rB = try Hex.decode(v.responderNonce), c = try Hex.decode(v.commitment)
        #expect(ContactCommitment.compute(a, nonce: rA) == c)
        #expect(ContactCommitment.opens(c, identity: a, nonce: rA))
        #expect(!ContactCommitment.opens(c, identity: a, nonce: try Hex.decode(v.wrongNonce)))
        #expect(!ContactCommitment.opens(c, identity: b, nonce: rA))
        let code = ContactSafetyCode.compute(initiator: a, commitment: c, initiatorNonce: rA, responder: b, responderNonce: rB)
        #expect(code == v.safetyCode)
        #expect(LinkSAS.digits(try #require(code))?.count == 6)
    }
}

/// Each part of the transcript changes the digits: the server cannot swap an
/// account, an identity key, a generation or a nonce and leave the code alone.
@Test func aChangedTranscriptGivesAnotherSafetyCode() throws {
    let file = try vectors.load("member-sharing-v1", as: SharingFile.self)
    let v = try #require(file.contacts.first)
    let a = try identity(v.initiator), b = try identity(v.responder)
    let rA = try Hex.decode(v.initiatorNonce), rB = try Hex.decode(v.responderNonce), c = try Hex.decode(v.commitment)
    let server = ContactIdentity(account: b.account, generation: b.generation, signingKey: Ed25519.PrivateKey().publicKey,
                                 boxKey: X25519.PrivateKey().publicKey)
    var otherAccount = b
    otherAccount.account = a.account
    var otherGeneration = b
    otherGeneration.generation += 1
    var otherBox = a
    otherBox.boxKey = server.boxKey
    for (initiator, commitment, nonceA, responder, nonceB) in [
        (a, c, rA, server, rB), (a, c, rA, otherAccount, rB), (a, c, rA, otherGeneration, rB), (otherBox, c, rA, b, rB),
        (a, rB, rA, b, rB), (a, c, rB, b, rB), (a, c, rA, b, rA), (b, c, rA, a, rB),
    ] {
        #expect(ContactSafetyCode.compute(initiator: initiator, commitment: commitment, initiatorNonce: nonceA,
                                          responder: responder, responderNonce: nonceB) != v.safetyCode)
    }
    #expect(ContactSafetyCode.compute(initiator: a, commitment: c, initiatorNonce: [], responder: b, responderNonce: rB) == nil)
    #expect(ContactCommitment.compute(a, nonce: Array(rA.prefix(31))) == nil)
}

// MARK: Rules, one by one

/// A sharer's account: a laptop, a member, a grantee with two identities, and helpers
/// that append links signed by the laptop (or anyone) and check refusals.
private struct Sharing {
    let laptop = Ed25519.PrivateKey()
    let code = Ed25519.PrivateKey()
    let identityKeys = [Ed25519.PrivateKey(), Ed25519.PrivateKey()]
    let granteeKeys = [Ed25519.PrivateKey(), Ed25519.PrivateKey()]
    let grantee: AccountID
    let member = MemberID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))
    var state: ChainState

    init(grantee: AccountID = AccountID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))) throws {
        self.grantee = grantee
        state = try ChainState(genesis: .genesis(signingKey: laptop, boxKey: X25519.PrivateKey().publicKey, name: "laptop", time: 0))
        try append(.recoverySet, ["authKey": Hex.encode(code.publicKey.rawRepresentation),
                                  "boxKey": Hex.encode(X25519.PrivateKey().publicKey.rawRepresentation), "recoveryGeneration": "1"])
        try append(.memberAdd, ["member": member.rawValue, "memberGeneration": "1"])
    }

    var laptopID: String { deviceID(for: laptop.publicKey).rawValue }

    func link(_ type: LinkType, _ body: [String: String], by key: Ed25519.PrivateKey? = nil, signer: String? = nil) -> ChainLink {
        var link = ChainLink(sequence: state.sequence + 1, previous: state.head, type: type, signer: signer ?? laptopID, time: 0, body: body)
        link.sign(with: key ?? laptop)
        return link
    }

    mutating func append(_ type: LinkType, _ body: [String: String]) throws { try state.apply(link(type, body)) }

    /// Applies `link`, expects `code`, and that nothing changed.
    mutating func refuse(_ link: ChainLink, _ code: ErrorCode, sourceLocation: SourceLocation = #_sourceLocation) {
        let before = state
        let error = #expect(throws: ProtocolError.self, sourceLocation: sourceLocation) { try state.apply(link) }
        #expect(error?.code == code, "\(String(describing: error))", sourceLocation: sourceLocation)
        #expect(state == before, sourceLocation: sourceLocation)
    }

    func identity(_ generation: UInt32, _ key: Ed25519.PrivateKey? = nil) -> [String: String] {
        ["identityGeneration": String(generation), "signingKey": Hex.encode((key ?? identityKeys[Int(generation) - 1]).publicKey.rawRepresentation),
         "boxKey": Hex.encode(X25519.PrivateKey().publicKey.rawRepresentation)]
    }

    func pin(_ generation: UInt32, account: AccountID? = nil) -> [String: String] {
        var body = identity(generation, granteeKeys[Int(generation) - 1])
        body["account"] = (account ?? grantee).rawValue
        return body
    }

    func grant(_ generation: UInt32 = 1, member: MemberID? = nil, readOnly: String = "true") -> [String: String] {
        ["member": (member ?? self.member).rawValue, "grantee": grantee.rawValue, "granteeIdentityGeneration": String(generation),
         "readOnly": readOnly]
    }

    var revoke: [String: String] { ["member": member.rawValue, "grantee": grantee.rawValue] }

    /// An identity, a pinned contact at generation 1 and a grant.
    static func granted(to grantee: AccountID? = nil) throws -> Sharing {
        var s = try grantee.map { try Sharing(grantee: $0) } ?? Sharing()
        try s.append(.identitySet, s.identity(1))
        try s.append(.contactPin, s.pin(1))
        try s.append(.shareGrant, s.grant())
        return s
    }

    /// A share box of the member's generation 1 under the grant, signed by `key`.
    func box(grant: UInt64, signedBy key: Ed25519.PrivateKey? = nil) throws -> ShareBox {
        let sealed = try X25519.PrivateKey().publicKey.sealedBox(for: SystemRandom.bytes(count: 32))
        var box = ShareBox(member: member, memberGeneration: 1, grantee: grantee, granteeIdentityGeneration: 1, grant: grant,
                           box: base64Encode(sealed))
        box.sign(with: key ?? identityKeys[0], sharer: state.account)
        return box
    }
}

private func expectRefused(_ box: ShareBox, in state: ChainState, _ code: ErrorCode, sourceLocation: SourceLocation = #_sourceLocation) {
    let error = #expect(throws: ProtocolError.self, sourceLocation: sourceLocation) { try box.verify(in: state) }
    #expect(error?.code == code, "\(String(describing: error))", sourceLocation: sourceLocation)
}

@Test func anIdentityStartsAtGenerationOneAndEachNextFollowsByOne() throws {
    var s = try Sharing()
    s.refuse(s.link(.identitySet, s.identity(2)), .staleGeneration)
    try s.append(.identitySet, s.identity(1))
    #expect(s.state.identity?.generation == 1 && s.state.identity?.link == s.state.sequence)
    s.refuse(s.link(.identitySet, s.identity(1)), .staleGeneration)
    try s.append(.identitySet, s.identity(2))
    #expect(s.state.identity?.signingKey == s.identityKeys[1].publicKey)
}

@Test func theRecoveryKeyNeitherSetsAnIdentityNorPinsAContactNorGrants() throws {
    var s = try Sharing.granted()
    for (type, body) in [(LinkType.identitySet, s.identity(2)), (.contactPin, s.pin(2)), (.shareGrant, s.grant(readOnly: "false")),
                         (.shareRevoke, s.revoke)] {
        s.refuse(s.link(type, body, by: s.code, signer: ChainLink.recoverySigner), .unknownSigner)
    }
}

@Test func anIdentityOrAPinWithABadKeyIsRefused() throws {
    var s = try Sharing()
    var short = s.identity(1)
    short["signingKey"]?.removeLast(2)
    s.refuse(s.link(.identitySet, short), .malformedLink)
    var missing = s.identity(1)
    missing["boxKey"] = nil
    s.refuse(s.link(.identitySet, missing), .malformedLink)
    var noAccount = s.pin(1)
    noAccount["account"] = "not an account"
    s.refuse(s.link(.contactPin, noAccount), .malformedLink)
}

@Test func anAccountCannotPinItself() throws {
    var s = try Sharing()
    s.refuse(s.link(.contactPin, s.pin(1, account: s.state.account)), .malformedLink)
}

@Test func pinningTheSameAccountAgainReplacesThePin() throws {
    var s = try Sharing()
    try s.append(.contactPin, s.pin(1))
    try s.append(.contactPin, s.pin(2))
    #expect(s.state.contacts.count == 1)
    #expect(s.state.contacts[s.grantee]?.generation == 2 && s.state.contacts[s.grantee]?.signingKey == s.granteeKeys[1].publicKey)
    #expect(s.state.contacts[s.grantee]?.link == s.state.sequence)
}

@Test func aGrantBeforeTheAccountHasAnIdentityIsRefused() throws {
    var s = try Sharing()
    try s.append(.contactPin, s.pin(1))
    s.refuse(s.link(.shareGrant, s.grant()), .noIdentity)
}

@Test func aGrantToAnAccountThatIsNotPinnedIsRefused() throws {
    var s = try Sharing()
    try s.append(.identitySet, s.identity(1))
    s.refuse(s.link(.shareGrant, s.grant()), .unknownContact)
}

@Test func aGrantNamingAnIdentityOtherThanThePinnedOneIsRefused() throws {
    var s = try Sharing()
    try s.append(.identitySet, s.identity(1))
    try s.append(.contactPin, s.pin(1))
    s.refuse(s.link(.shareGrant, s.grant(2)), .contactChanged)
    try s.append(.contactPin, s.pin(2))
    s.refuse(s.link(.shareGrant, s.grant(1)), .contactChanged)
    try s.append(.shareGrant, s.grant(2))
}

@Test func aGrantOfAMemberTheAccountDoesNotHaveIsRefused() throws {
    var s = try Sharing()
    try s.append(.identitySet, s.identity(1))
    try s.append(.contactPin, s.pin(1))
    s.refuse(s.link(.shareGrant, s.grant(member: MemberID(unchecked: String(repeating: "a", count: 32)))), .unknownMember)
}

@Test func aGrantIsReadOnlyOrNotAndNothingElse() throws {
    var s = try Sharing()
    try s.append(.identitySet, s.identity(1))
    try s.append(.contactPin, s.pin(1))
    for bad in ["yes", "True", "1", ""] { s.refuse(s.link(.shareGrant, s.grant(readOnly: bad)), .malformedLink) }
    var missing = s.grant()
    missing["readOnly"] = nil
    s.refuse(s.link(.shareGrant, missing), .malformedLink)
    try s.append(.shareGrant, s.grant(readOnly: "false"))
    #expect(s.state.grants.values.first?.readOnly == false)
}

@Test func aSecondGrantOfTheSameMemberToTheSameAccountIsRefused() throws {
    var s = try Sharing.granted()
    s.refuse(s.link(.shareGrant, s.grant(readOnly: "false")), .grantExists)
}

@Test func aRevokeWithoutAGrantInForceIsRefused() throws {
    var s = try Sharing()
    try s.append(.identitySet, s.identity(1))
    s.refuse(s.link(.shareRevoke, s.revoke), .unknownGrant)
    s = try Sharing.granted()
    try s.append(.shareRevoke, s.revoke)
    #expect(s.state.grants.isEmpty && s.state.revokedGrants.map(\.revoked) == [s.state.sequence])
    s.refuse(s.link(.shareRevoke, s.revoke), .unknownGrant)
}

@Test func aRevokedShareCanBeGrantedAgain() throws {
    var s = try Sharing.granted()
    let first = s.state.sequence
    try s.append(.shareRevoke, s.revoke)
    try s.append(.shareGrant, s.grant(readOnly: "false"))
    let grant = try #require(s.state.grants[.init(member: s.member, grantee: s.grantee)])
    #expect(grant.granted == s.state.sequence && grant.granted != first && !grant.readOnly)
}

@Test func aShareBoxUnderTheGrantSignedByTheSharersIdentityVerifies() throws {
    let s = try Sharing.granted()
    try s.box(grant: s.state.sequence).verify(in: s.state)
}

@Test func aShareBoxSignedByAnotherIdentityIsRefused() throws {
    var s = try Sharing.granted()
    let grant = s.state.sequence
    expectRefused(try s.box(grant: grant, signedBy: Ed25519.PrivateKey()), in: s.state, .badSignature)
    expectRefused(try s.box(grant: grant, signedBy: s.laptop), in: s.state, .badSignature)
    // Once the identity moves on, a box signed by the previous one is refused.
    let old = try s.box(grant: grant)
    try s.append(.identitySet, s.identity(2))
    expectRefused(old, in: s.state, .badSignature)
    try s.box(grant: grant, signedBy: s.identityKeys[1]).verify(in: s.state)
}

@Test func aShareBoxMovedToAnotherMemberOrGranteeIsRefused() throws {
    var s = try Sharing.granted()
    let grant = s.state.sequence
    let other = MemberID(unchecked: String(repeating: "b", count: 32))
    try s.append(.memberAdd, ["member": other.rawValue, "memberGeneration": "1"])
    let box = try s.box(grant: grant)
    var moved = box
    moved.member = other
    expectRefused(moved, in: s.state, .unknownGrant)
    moved = box
    moved.grantee = AccountID(unchecked: String(repeating: "c", count: 32))
    expectRefused(moved, in: s.state, .unknownGrant)
    moved = box
    moved.grant = grant - 1
    expectRefused(moved, in: s.state, .unknownGrant)
    // The same grant slot, another generation or another sealed box: the signature no longer covers it.
    try s.append(.memberRotate, ["member": s.member.rawValue, "memberGeneration": "2"])
    moved = box
    moved.memberGeneration = 2
    expectRefused(moved, in: s.state, .badSignature)
    moved = box
    moved.box = base64Encode(try X25519.PrivateKey().publicKey.sealedBox(for: SystemRandom.bytes(count: 32)))
    expectRefused(moved, in: s.state, .badSignature)
    try box.verify(in: s.state)
}

@Test func aShareBoxOfARevokedGrantIsRefusedEvenAfterANewGrant() throws {
    var s = try Sharing.granted()
    let box = try s.box(grant: s.state.sequence)
    try s.append(.shareRevoke, s.revoke)
    expectRefused(box, in: s.state, .unknownGrant)
    try s.append(.shareGrant, s.grant())
    expectRefused(box, in: s.state, .unknownGrant)
    try s.box(grant: s.state.sequence).verify(in: s.state)
}

@Test func aShareBoxForAnotherIdentityGenerationOrAMemberGenerationNotYetMadeIsRefused() throws {
    let s = try Sharing.granted()
    var box = try s.box(grant: s.state.sequence)
    box.granteeIdentityGeneration = 2
    box.sign(with: s.identityKeys[0], sharer: s.state.account)
    expectRefused(box, in: s.state, .wrongGeneration)
    box = try s.box(grant: s.state.sequence)
    box.memberGeneration = 2
    box.sign(with: s.identityKeys[0], sharer: s.state.account)
    expectRefused(box, in: s.state, .wrongGeneration)
    box.memberGeneration = 0
    box.sign(with: s.identityKeys[0], sharer: s.state.account)
    expectRefused(box, in: s.state, .wrongGeneration)
}

@Test func aShareBoxThatIsNotASealedBoxIsRefused() throws {
    let s = try Sharing.granted()
    var box = try s.box(grant: s.state.sequence)
    for bad in ["", "not base64!", base64Encode(Array(repeating: 1, count: 47)), base64Encode(Array(repeating: 1, count: 4097))] {
        box.box = bad
        expectRefused(box, in: s.state, .malformedBox)
    }
}

// MARK: The grantee's side

/// The grantee's own account: a phone, an identity (generation 1) and, once pinned,
/// the sharer's identity as the sharer's chain sets it.
private struct Grantee {
    let phone = Ed25519.PrivateKey()
    var state: ChainState

    init() throws {
        state = try ChainState(genesis: .genesis(signingKey: phone, boxKey: X25519.PrivateKey().publicKey, name: "phone", time: 0))
        try append(.identitySet, ["identityGeneration": "1", "signingKey": Hex.encode(Ed25519.PrivateKey().publicKey.rawRepresentation),
                                  "boxKey": Hex.encode(X25519.PrivateKey().publicKey.rawRepresentation)])
    }

    mutating func append(_ type: LinkType, _ body: [String: String]) throws {
        var link = ChainLink(sequence: state.sequence + 1, previous: state.head, type: type,
                             signer: deviceID(for: phone.publicKey).rawValue, time: 0, body: body)
        link.sign(with: phone)
        try state.apply(link)
    }

    mutating func pin(_ sharer: ChainState) throws {
        let identity = try #require(sharer.identity)
        try append(.contactPin, ["account": sharer.account.rawValue, "identityGeneration": String(identity.generation),
                                 "signingKey": Hex.encode(identity.signingKey.rawRepresentation),
                                 "boxKey": Hex.encode(identity.boxKey.rawRepresentation)])
    }
}

private func expectRefused(_ box: ShareBox, from sharer: ChainState, for grantee: ChainState, _ code: ErrorCode,
                           sourceLocation: SourceLocation = #_sourceLocation) {
    let error = #expect(throws: ProtocolError.self, sourceLocation: sourceLocation) { try box.verify(from: sharer, for: grantee) }
    #expect(error?.code == code, "\(String(describing: error))", sourceLocation: sourceLocation)
}

@Test func theGranteeOpensOnlyABoxFromTheIdentityItPinned() throws {
    var g = try Grantee()
    var s = try Sharing.granted(to: g.state.account)
    let grant = s.state.sequence
    // Not yet a contact of the grantee: refused, whatever the sharer's chain says.
    expectRefused(try s.box(grant: grant), from: s.state, for: g.state, .unknownContact)
    try g.pin(s.state)
    try s.box(grant: grant).verify(from: s.state, for: g.state)
    // Another account the server presents, with a grant and an identity of its own: not pinned.
    let forged = try Sharing.granted(to: g.state.account)
    expectRefused(try forged.box(grant: forged.state.sequence), from: forged.state, for: g.state, .unknownContact)
    // The sharer's identity changes: refused loudly until verified again, even a box the new identity signed.
    try s.append(.identitySet, s.identity(2))
    let resigned = try s.box(grant: grant, signedBy: s.identityKeys[1])
    try resigned.verify(in: s.state)
    expectRefused(resigned, from: s.state, for: g.state, .contactChanged)
    try g.pin(s.state)
    try resigned.verify(from: s.state, for: g.state)
}

@Test func theGranteeRefusesABoxForAnotherAccountOrAnotherOfItsIdentities() throws {
    var g = try Grantee()
    let s = try Sharing.granted(to: g.state.account)
    try g.pin(s.state)
    let box = try s.box(grant: s.state.sequence)
    // Another account that pinned the same sharer: the box names someone else.
    var other = try Grantee()
    try other.pin(s.state)
    expectRefused(box, from: s.state, for: other.state, .unknownGrant)
    // The grantee's identity moved on: a box sealed to the previous one is refused.
    try g.append(.identitySet, ["identityGeneration": "2", "signingKey": Hex.encode(Ed25519.PrivateKey().publicKey.rawRepresentation),
                                "boxKey": Hex.encode(X25519.PrivateKey().publicKey.rawRepresentation)])
    expectRefused(box, from: s.state, for: g.state, .wrongGeneration)
}

/// Issue 19, item 6: a fork of the sharer's chain (a revoked device and the server)
/// can present the pinned identity generation with other keys, to a grantee device
/// that never read that chain. The pin's keys decide, not its generation alone.
@Test func aSharerIdentityOfThePinnedGenerationWithOtherKeysIsRefused() throws {
    var g = try Grantee()
    let s = try Sharing.granted(to: g.state.account)
    let box = try s.box(grant: s.state.sequence)
    try box.verify(in: s.state)
    // The grantee pinned generation 1 of the sharer, but with keys the fork does not have.
    try g.append(.contactPin, ["account": s.state.account.rawValue, "identityGeneration": "1",
                               "signingKey": Hex.encode(Ed25519.PrivateKey().publicKey.rawRepresentation),
                               "boxKey": Hex.encode(X25519.PrivateKey().publicKey.rawRepresentation)])
    expectRefused(box, from: s.state, for: g.state, .contactChanged)
}

/// Issue 19, item 2: a sharer whose recovery code was replaced after its identity was
/// set is refused until the identity is renewed: the old code (with the server's
/// wraps) reaches the identity, as a revoked device would.
@Test func aSharerThatReplacedItsRecoveryCodeSinceItsIdentityIsRefused() throws {
    var g = try Grantee()
    var s = try Sharing.granted(to: g.state.account)
    let grant = s.state.sequence
    try g.pin(s.state)
    let box = try s.box(grant: grant)
    try box.verify(from: s.state, for: g.state)
    try s.append(.recoverySet, ["authKey": Hex.encode(Ed25519.PrivateKey().publicKey.rawRepresentation),
                                "boxKey": Hex.encode(X25519.PrivateKey().publicKey.rawRepresentation), "recoveryGeneration": "2"])
    #expect(s.state.exposedSince(try #require(s.state.identity)))
    expectRefused(box, from: s.state, for: g.state, .contactChanged)
}
