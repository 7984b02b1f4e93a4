import KeyVaultCrypto
import KeyVaultModel
import Testing
@testable import KeyVaultProtocol

// docs/formats/account-chain.md, "Authority": every link type the chain accepts has a
// row saying what it grants and what revoking its signer does to it, and the
// revocation computed from the table takes back what a revoked device signed.

/// An account: the laptop (genesis), a phone the laptop added, a member and an identity.
private struct Account {
    let laptop = Signer(), phone = Signer()
    let member = MemberID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))
    var state: ChainState

    init() throws {
        state = try ChainState(genesis: .genesis(signingKey: laptop.signing, boxKey: laptop.box.publicKey, name: "laptop", time: 0))
        try append(.deviceAdd, phone.fields("phone"), by: laptop)
        try append(.memberAdd, ["member": member.rawValue, "memberGeneration": "1"], by: laptop)
        try append(.identitySet, Self.identity(1), by: laptop)
    }

    func link(_ type: LinkType, _ body: [String: String], by device: Signer) -> ChainLink {
        var link = ChainLink(sequence: state.sequence + 1, previous: state.head, type: type, signer: device.id.rawValue, time: 0, body: body)
        link.sign(with: device.signing)
        return link
    }

    mutating func append(_ type: LinkType, _ body: [String: String], by device: Signer) throws {
        try state.apply(link(type, body, by: device))
    }

    static func identity(_ generation: UInt32) -> [String: String] {
        ["identityGeneration": String(generation), "signingKey": Hex.encode(Ed25519.PrivateKey().publicKey.rawRepresentation),
         "boxKey": Hex.encode(X25519.PrivateKey().publicKey.rawRepresentation)]
    }

    static func pin(_ contact: AccountID) -> [String: String] {
        var body = identity(1)
        body["account"] = contact.rawValue
        return body
    }

    func grant(_ grantee: AccountID) -> [String: String] {
        ["member": member.rawValue, "grantee": grantee.rawValue, "granteeIdentityGeneration": "1", "readOnly": "false"]
    }

    /// Carries out `revocation` as a client does: the devices, then the grants, then the pins.
    mutating func carryOut(_ revocation: ChainState.Revocation) throws {
        for device in revocation.devices { try append(.deviceRevoke, ["device": device.id.rawValue], by: laptop) }
        for item in revocation.ended {
            if case .shareGrant(let key) = item.subject {
                try append(.shareRevoke, ["member": key.member.rawValue, "grantee": key.grantee.rawValue], by: laptop)
            }
        }
        for item in revocation.ended {
            if case .contactPin(let contact) = item.subject { try append(.contactUnpin, ["account": contact.rawValue], by: laptop) }
        }
    }
}

private func someAccount() -> AccountID { AccountID(unchecked: Hex.encode(SystemRandom.bytes(count: 16))) }

/// What each rule promises, shown on a chain where the phone signed a link of that
/// type and the laptop then revokes the phone as the table says. A link type with no
/// row, or a row with no scenario here, fails: the next feature cannot forget its rule.
private let scenarios: [LinkType: @Sendable (inout Account) throws -> Void] = [
    .deviceAdd: { a in
        let sleeper = Signer()
        try a.append(.deviceAdd, sleeper.fields("sleeper"), by: a.phone)
        let plan = a.state.revocation(of: [try #require(a.state.devices[a.phone.id])], by: a.laptop.id)
        #expect(plan.devices.map(\.id) == [a.phone.id, sleeper.id])
        try a.carryOut(plan)
        #expect(a.state.devices[sleeper.id]?.isActive == false)
    },
    .recoverySet: { a in
        try a.append(.recoverySet, ["authKey": Hex.encode(Ed25519.PrivateKey().publicKey.rawRepresentation),
                                    "boxKey": Hex.encode(X25519.PrivateKey().publicKey.rawRepresentation), "recoveryGeneration": "1"], by: a.phone)
        let plan = a.state.revocation(of: [try #require(a.state.devices[a.phone.id])], by: a.laptop.id)
        #expect(plan.compromisesRecovery)
        try a.carryOut(plan)
        #expect(a.state.recovery?.isCompromised == true)
    },
    .accountReset: { a in
        // The phone resets the account: the laptop revoked, the member removed, the identity retired.
        try a.append(.accountReset, ["masterGeneration": "2", "masterKeyCheck": Hex.encode(SystemRandom.bytes(count: 16)),
                                     "authKey": Hex.encode(Ed25519.PrivateKey().publicKey.rawRepresentation),
                                     "boxKey": Hex.encode(X25519.PrivateKey().publicKey.rawRepresentation), "recoveryGeneration": "1"], by: a.phone)
        #expect(a.state.devices[a.laptop.id]?.isActive == false && a.state.members.isEmpty && a.state.identity == nil)
        #expect(a.state.masterGeneration == 2 && a.state.recovery?.setBy == a.phone.id)
        // A device the phone adds later revokes it: the code the reset set is compromised with it.
        let tablet = Signer()
        try a.append(.deviceAdd, tablet.fields("tablet"), by: a.phone)
        #expect(a.state.revocation(of: [try #require(a.state.devices[a.phone.id])], by: tablet.id).compromisesRecovery)
        try a.append(.deviceRevoke, ["device": a.phone.id.rawValue], by: tablet)
        #expect(a.state.recovery?.isCompromised == true)
        // A new sharing identity follows the one the reset retired: contacts never see a generation go back.
        #expect(throws: ProtocolError.self) { try a.append(.identitySet, Account.identity(1), by: tablet) }
        try a.append(.identitySet, Account.identity(2), by: tablet)
    },
    .identitySet: { a in
        try a.append(.identitySet, Account.identity(2), by: a.phone)
        let identity = try #require(a.state.identity)
        try a.carryOut(a.state.revocation(of: [try #require(a.state.devices[a.phone.id])], by: a.laptop.id))
        #expect(a.state.exposedSince(identity), "an identity the revoked phone made is still trusted")
    },
    .contactPin: { a in
        let thief = someAccount()
        try a.append(.contactPin, Account.pin(thief), by: a.phone)
        let plan = a.state.revocation(of: [try #require(a.state.devices[a.phone.id])], by: a.laptop.id)
        #expect(plan.ended.map(\.subject) == [.contactPin(thief)])
        try a.carryOut(plan)
        #expect(a.state.contacts[thief] == nil && a.state.orphaned.isEmpty)
    },
    .shareGrant: { a in
        let friend = someAccount()
        try a.append(.contactPin, Account.pin(friend), by: a.laptop)
        try a.append(.shareGrant, a.grant(friend), by: a.phone)
        let plan = a.state.revocation(of: [try #require(a.state.devices[a.phone.id])], by: a.laptop.id)
        #expect(plan.ended.map(\.subject) == [.shareGrant(.init(member: a.member, grantee: friend))])
        try a.carryOut(plan)
        #expect(a.state.grants.isEmpty && a.state.contacts[friend] != nil && a.state.orphaned.isEmpty)
    },
]

@Test func everyLinkTypeTheChainAcceptsHasAnAuthorityRule() throws {
    for type in LinkType.allCases {
        let row = try #require(type.authority, "\(type.rawValue) has no row in LinkAuthority.table: say what it grants and what revocation does to it")
        #expect(row.grants == .nothing || row.onRevocation != .nothing || type == .genesis,
                "\(type.rawValue) grants \(row.grants.rawValue) but revocation does nothing to it")
        // The plan carries out these two rules on one kind of grant each (it walks who added which
        // device, and who set the code): a row that pairs one with another grant would be ignored
        // by it (third review, F3).
        if row.onRevocation == .revokedWithSigner {
            #expect(row.grants == .device, "\(type.rawValue): the plan revokes devices with their signer, not a \(row.grants.rawValue)")
        }
        if row.onRevocation == .compromised {
            #expect(row.grants == .recoveryCode, "\(type.rawValue): the plan compromises recovery codes, not a \(row.grants.rawValue)")
        }
        // Every rule that takes something back when its signer is revoked is shown working.
        if [.revokedWithSigner, .compromised, .ended].contains(row.onRevocation) || type == .identitySet {
            let scenario = try #require(scenarios[type], "\(type.rawValue) says \(row.onRevocation.rawValue) but has no revocation scenario")
            var account = try Account()
            try scenario(&account)
        }
    }
}

/// The thief's story on the chain: the phone pins the thief's account and shares a
/// member with it; the laptop's own pin and grant of another contact stay, unless kept.
@Test func revokingADeviceEndsThePinsAndGrantsItSignedAndNoOthers() throws {
    var a = try Account()
    let thief = someAccount(), grandma = someAccount()
    try a.append(.contactPin, Account.pin(thief), by: a.phone)
    try a.append(.shareGrant, a.grant(thief), by: a.phone)
    try a.append(.contactPin, Account.pin(grandma), by: a.laptop)
    try a.append(.shareGrant, a.grant(grandma), by: a.laptop)
    let phone = try #require(a.state.devices[a.phone.id])
    #expect(a.state.orphaned.isEmpty)

    let plan = a.state.revocation(of: [phone], by: a.laptop.id)
    #expect(Set(plan.ended.map(\.account)) == [thief] && plan.ended.count == 2 && plan.kept.isEmpty)
    let keeping = a.state.revocation(of: [phone], keepingContacts: [thief], by: a.laptop.id)
    #expect(keeping.ended.isEmpty && keeping.kept.count == 2)

    // Revoked and not yet ended: what the audit reports.
    try a.append(.deviceRevoke, ["device": a.phone.id.rawValue], by: a.laptop)
    #expect(Set(a.state.orphaned.map(\.account)) == [thief])
    try a.carryOut(ChainState.Revocation(devices: [], keptDevices: [], ended: a.state.revocation(of: [], by: a.laptop.id).ended,
                                         kept: [], compromisesRecovery: false))
    #expect(a.state.orphaned.isEmpty && a.state.contacts.keys.sorted { $0.rawValue < $1.rawValue } == [grandma])
    #expect(a.state.grants.keys.map(\.grantee) == [grandma])
}

/// A grant the laptop made rests on a pin the phone made: it ends with the pin.
@Test func aGrantRestingOnAPinTheRevokedDeviceMadeEndsWithIt() throws {
    var a = try Account()
    let thief = someAccount()
    try a.append(.contactPin, Account.pin(thief), by: a.phone)
    try a.append(.shareGrant, a.grant(thief), by: a.laptop)
    let plan = a.state.revocation(of: [try #require(a.state.devices[a.phone.id])], by: a.laptop.id)
    #expect(plan.ended.map(\.subject) == [.contactPin(thief), .shareGrant(.init(member: a.member, grantee: thief))])
    try a.carryOut(plan)
    #expect(a.state.contacts.isEmpty && a.state.grants.isEmpty)
}

@Test func aPinEndsOnlyAfterItsGrantsAndOnlyIfItIsInForce() throws {
    var a = try Account()
    let friend = someAccount()
    let unpin = ["account": friend.rawValue]
    #expect(throws: ProtocolError.self) { try a.state.apply(a.link(.contactUnpin, unpin, by: a.laptop)) }
    try a.append(.contactPin, Account.pin(friend), by: a.laptop)
    try a.append(.shareGrant, a.grant(friend), by: a.laptop)
    let before = a.state
    let error = #expect(throws: ProtocolError.self) { try a.state.apply(a.link(.contactUnpin, unpin, by: a.laptop)) }
    #expect(error?.code == .grantExists && a.state == before)
    try a.append(.shareRevoke, ["member": a.member.rawValue, "grantee": friend.rawValue], by: a.laptop)
    try a.append(.contactUnpin, unpin, by: a.laptop)
    #expect(a.state.contacts.isEmpty)
}

/// Issue 19, item 6: keeping a device that itself added devices keeps those too (the
/// line stops at an active intermediate, which answers for its own descendants).
@Test func keepingADeviceThatAddedDevicesKeepsWhatItAdded() throws {
    var a = try Account()
    let kept = Signer(), added = Signer()
    try a.append(.deviceAdd, kept.fields("kept"), by: a.phone)
    try a.append(.deviceAdd, added.fields("added by kept"), by: kept)
    let plan = a.state.revocation(of: [try #require(a.state.devices[a.phone.id])], keeping: [kept.id], by: a.laptop.id)
    #expect(plan.devices.map(\.id) == [a.phone.id], "revoking the phone while keeping \(kept.id) revoked more: \(plan.devices.map(\.name))")
    #expect(plan.keptDevices.map(\.id) == [kept.id])
}

/// Issue 19, item 5: a signed field the link type does not name is refused, on every type.
@Test func aLinkWithAFieldItsTypeDoesNotNameIsRefused() throws {
    var a = try Account()
    let friend = someAccount()
    let bodies: [(LinkType, [String: String])] = [
        (.deviceAdd, Signer().fields("tablet")), (.memberRotate, ["member": a.member.rawValue, "memberGeneration": "2"]),
        (.contactPin, Account.pin(friend)), (.shareGrant, a.grant(friend)),
    ]
    for (type, body) in bodies {
        var extra = body
        extra["note"] = "anything"
        let before = a.state
        let error = #expect(throws: ProtocolError.self) { try a.state.apply(a.link(type, extra, by: a.laptop)) }
        #expect(error?.code == .malformedLink && a.state == before, "\(type.rawValue)")
        try a.append(type, body, by: a.laptop)
    }
    var genesis = ChainLink.genesis(signingKey: a.laptop.signing, boxKey: a.laptop.box.publicKey, name: "laptop", time: 0)
    genesis.body["extra"] = "x"
    genesis.sign(with: a.laptop.signing)
    #expect(throws: ProtocolError.self) { try ChainState(genesis: genesis) }
}

// MARK: Vectors

private struct AuthorityFile: Decodable {
    struct Standing: Decodable, Equatable { let kind: String, account: AccountID, signer: DeviceID, link: UInt64 }
    let account: String, head: String, contact: AccountID, member: MemberID, laptop: DeviceID, phone: DeviceID
    let standing: [String: [Standing]]
    let steps: [ChainFile.Step]
}

/// The independent implementation's chain: extra fields refused on every type it
/// tries, `contact.unpin` only after the grants, and each pin and grant with its signer.
@Test func authorityRulesMatchTheIndependentImplementation() throws {
    let file = try vectors.load("authority-v1", as: AuthorityFile.self)
    #expect(Set(file.steps.map(\.outcome)) == ["valid", "malformed_link", "unknown_contact", "grant_exists"])
    var valid = 0
    let state = try replay(file.steps) { step, current in
        guard step.outcome == "valid" else { return }
        valid += 1
        // After the grant: the pin and the grant, both signed by the phone, as the vectors list them.
        if current.grants[.init(member: file.member, grantee: file.contact)] != nil, current.devices[file.phone]?.isActive == true {
            let listed = current.standing.map {
                AuthorityFile.Standing(kind: $0.type == .contactPin ? "pin" : "share", account: $0.account, signer: $0.signer, link: $0.link)
            }
            #expect(listed == file.standing["grant"])
        }
    }
    let end = try #require(state)
    #expect(end.account.rawValue == file.account && end.head == file.head && valid == file.steps.filter { $0.outcome == "valid" }.count)
    #expect(end.standing.isEmpty && end.orphaned.isEmpty && file.standing["unpin"]?.isEmpty == true)
}

private struct MemberLifecycleFile: Decodable {
    struct Renamed: Decodable { let name: String, envelope: String, generation: UInt32 }
    let account: String, head: String, member: MemberID, memberKeys: [String: String], renamed: Renamed
    let steps: [ChainFile.Step]
}

/// `member.rename` and `member.remove` as the independent implementation builds them:
/// a name sealed under a generation the member has, a removal only once the member's
/// shares have ended, and a removed member neither renamed, rotated nor added again.
@Test func memberRenameAndRemoveMatchTheIndependentImplementation() throws {
    let file = try vectors.load("member-lifecycle-v1", as: MemberLifecycleFile.self)
    #expect(Set(file.steps.map(\.outcome)) == ["valid", "malformed_link", "stale_generation", "unknown_member", "grant_exists", "member_exists"])
    let state = try replay(file.steps) { step, current in
        // After the rename: the name the chain holds is the renamed one, under generation 2.
        if step.link.type == .memberRename, step.outcome == "valid", let member = current.members[file.member] {
            #expect(member.name == file.renamed.envelope && member.nameGeneration == file.renamed.generation)
            let key = try SymmetricKey(SecureBytes(copying: Hex.decode(try #require(file.memberKeys[String(file.renamed.generation)]))))
            let context = try EnvelopeContext(purpose: "member-name", ["account": file.account, "member": file.member.rawValue])
            let opened = try Envelope(base64: member.name).open(using: key, context: context)
            #expect(String(decoding: opened.unprotectedCopy(), as: UTF8.self) == file.renamed.name)
        }
    }
    let end = try #require(state)
    #expect(end.account.rawValue == file.account && end.head == file.head)
    #expect(end.members.isEmpty && end.removedMembers[file.member] != nil)
}

/// Replays vector steps: each valid link gives the same signed bytes and hash, each
/// refused one its error code and no change; `after` sees the state after each step.
private func replay(_ steps: [ChainFile.Step], after: (ChainFile.Step, ChainState) throws -> Void) throws -> ChainState? {
    var state: ChainState?
    for step in steps {
        if step.outcome == "valid" {
            #expect(Hex.encode(step.link.signedBytes) == step.signedBytes && step.link.hash == step.hash, "\(step.note)")
        }
        let before = state
        var change: ChainChange?
        expectOutcome(step.outcome, step.note) {
            if var current = state { change = try current.apply(step.link); state = current } else { state = try ChainState(genesis: step.link) }
        }
        if step.outcome != "valid" { #expect(state == before, "\(step.note) changed the state") }
        // What apply says it changed is what the two states differ by (stores write it).
        if let change, let before, let state {
            let diff = (added: state.devices.keys.filter { before.devices[$0] == nil },
                        revoked: state.devices.values.filter { !$0.isActive && before.devices[$0.id]?.isActive == true }.map(\.id),
                        removed: before.members.keys.filter { state.members[$0] == nil },
                        ended: before.grants.filter { state.grants[$0.key] == nil }.keys)
            #expect(change.addedDevice.map { [$0.id] } ?? [] == diff.added && change.addedDevice.map { state.devices[$0.id] == $0 } != false, "\(step.note)")
            #expect(Set(change.revokedDevices) == Set(diff.revoked) && change.revokedDevices.count == diff.revoked.count, "\(step.note)")
            #expect(Set(change.removedMembers) == Set(diff.removed) && change.removedMembers.count == diff.removed.count, "\(step.note)")
            #expect(Set(change.endedGrants.map { ChainState.GrantKey(member: $0.member, grantee: $0.grantee) }) == Set(diff.ended)
                    && change.endedGrants.allSatisfy { before.grants[.init(member: $0.member, grantee: $0.grantee)]?.readOnly == $0.readOnly },
                    "\(step.note)")
        }
        if let current = state { try after(step, current) }
    }
    return state
}

private struct AccountResetFile: Decodable {
    let account: String, head: String, member: MemberID, contact: AccountID, laptop: DeviceID, phone: DeviceID, reset: UInt64
    let steps: [ChainFile.Step]
}

/// `account.reset` as the independent implementation builds it: one link that revokes
/// every other device, removes every member, ends every share and contact, retires the
/// identity and sets a new master key and code, signed by a device and never by the code.
@Test func accountResetMatchesTheIndependentImplementation() throws {
    let file = try vectors.load("account-reset-v1", as: AccountResetFile.self)
    #expect(Set(file.steps.map(\.outcome)) == ["valid", "malformed_link", "stale_generation", "unknown_signer", "signer_revoked",
                                               "bad_signature", "member_exists", "unknown_grant"])
    let state = try replay(file.steps) { step, current in
        guard step.outcome == "valid", step.link.sequence == file.reset else { return }
        #expect(current.devices[file.laptop]?.revoked == file.reset && current.devices[file.phone]?.isActive == true)
        #expect(current.members.isEmpty && current.removedMembers[file.member] == file.reset)
        #expect(current.grants.isEmpty && current.contacts.isEmpty && current.revokedGrants.last?.revoked == file.reset)
        #expect(current.identity == nil && current.retiredIdentityGeneration == 1)
        #expect(current.masterGeneration == 2 && current.recovery?.generation == 2 && current.recovery?.setBy == file.phone)
    }
    let end = try #require(state)
    #expect(end.account.rawValue == file.account && end.head == file.head && end.identity?.generation == 2)
}
