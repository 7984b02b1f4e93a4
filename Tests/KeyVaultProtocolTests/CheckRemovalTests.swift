import KeyVaultCrypto
import KeyVaultModel
import Testing
@testable import KeyVaultProtocol

// Issue 8, item 8: chain checks that no test noticed when they were removed one at a
// time (docs/security-tests.md lists every check and its test).

private func signed(_ type: LinkType, _ body: [String: String], after state: ChainState, by key: Ed25519.PrivateKey,
                    signer: String) -> ChainLink {
    var link = ChainLink(sequence: state.sequence + 1, previous: state.head, type: type, signer: signer, time: 0, body: body)
    link.sign(with: key)
    return link
}

private func laptopChain() throws -> (ChainState, Ed25519.PrivateKey) {
    let key = Ed25519.PrivateKey()
    return (try ChainState(genesis: .genesis(signingKey: key, boxKey: X25519.PrivateKey().publicKey, name: "laptop", time: 0)), key)
}

/// Only the first link founds an account: a validly signed genesis link later in the
/// chain is refused, not applied as a no-op.
@Test func aSecondGenesisLinkIsRefused() throws {
    let (start, key) = try laptopChain()
    var state = start
    let genesis = ChainLink.genesis(signingKey: key, boxKey: X25519.PrivateKey().publicKey, name: "laptop", time: 1)
    let again = signed(.genesis, genesis.body, after: state, by: key, signer: genesis.signer)
    let before = state
    let error = #expect(throws: ProtocolError.self) { try state.apply(again) }
    #expect(error?.code == .malformedLink, "\(String(describing: error))")
    #expect(state == before)
}

/// The recovery key may add a device or set a new code, nothing else: a holder of the
/// code cannot revoke devices, rotate keys or add members.
@Test func theRecoveryKeySignsOnlyDeviceAddAndRecoverySet() throws {
    let (start, key) = try laptopChain()
    var state = start
    let phone = Ed25519.PrivateKey()
    let code = Ed25519.PrivateKey()
    let laptop = state.activeDevices[0].id
    try state.apply(signed(.recoverySet, ["authKey": Hex.encode(code.publicKey.rawRepresentation),
                                          "boxKey": Hex.encode(X25519.PrivateKey().publicKey.rawRepresentation), "recoveryGeneration": "1"],
                           after: state, by: key, signer: laptop.rawValue))
    try state.apply(signed(.deviceAdd, ChainLink.deviceFields(signingKey: phone.publicKey, boxKey: X25519.PrivateKey().publicKey, name: "phone"),
                           after: state, by: code, signer: ChainLink.recoverySigner))
    let before = state
    for (type, body) in [(LinkType.deviceRevoke, ["device": laptop.rawValue]), (.masterRotate, ["masterGeneration": "2"]),
                         (.memberAdd, ["member": String(repeating: "ab", count: 16), "memberGeneration": "1"])] {
        let error = #expect(throws: ProtocolError.self) {
            try state.apply(signed(type, body, after: state, by: code, signer: ChainLink.recoverySigner))
        }
        #expect(error?.code == .unknownSigner, "\(type): \(String(describing: error))")
    }
    #expect(state == before)
}

/// A box that names a link from before its signer joined is refused as signed by a
/// stranger (`unknown_signer`), not as by a revoked device: at that link the signer was
/// not of the account. (Without the check the box is still refused, by the activity
/// test, but the error would accuse a device that was never revoked.)
@Test func aBoxNamingALinkBeforeItsSignerJoinedIsRefusedAsAStrangers() throws {
    let (start, key) = try laptopChain()
    var state = start
    let phone = Ed25519.PrivateKey(), phoneBox = X25519.PrivateKey()
    let laptop = state.activeDevices[0].id
    try state.apply(signed(.deviceAdd, ChainLink.deviceFields(signingKey: phone.publicKey, boxKey: phoneBox.publicKey, name: "phone"),
                           after: state, by: key, signer: laptop.rawValue))
    var box = KeyBox(generation: 1, sequence: 0, recipient: laptop.rawValue,
                     box: base64Encode(try X25519.PrivateKey().publicKey.sealedBox(for: SymmetricKey())),
                     signer: deviceID(for: phone.publicKey).rawValue, signature: "")
    box.sign(with: phone, account: state.account)
    let error = #expect(throws: ProtocolError.self) { try box.verify(in: state) }
    #expect(error?.code == .unknownSigner, "\(String(describing: error))")
    box.sequence = 1
    box.sign(with: phone, account: state.account)
    try box.verify(in: state)
}

/// Links that repeat what the chain already holds, or skip a generation, are refused
/// and change nothing: a device added twice, a device revoked twice, a recovery or
/// member generation that does not follow.
@Test func linksThatRepeatOrSkipAreRefused() throws {
    let (start, key) = try laptopChain()
    var state = start
    let laptop = state.activeDevices[0].id.rawValue
    let phone = Ed25519.PrivateKey(), tablet = Ed25519.PrivateKey()
    let member = String(repeating: "cd", count: 16)
    func fields(_ key: Ed25519.PrivateKey, _ name: String) -> [String: String] {
        ChainLink.deviceFields(signingKey: key.publicKey, boxKey: X25519.PrivateKey().publicKey, name: name)
    }
    func code(_ generation: String) -> [String: String] {
        ["authKey": Hex.encode(Ed25519.PrivateKey().publicKey.rawRepresentation),
         "boxKey": Hex.encode(X25519.PrivateKey().publicKey.rawRepresentation), "recoveryGeneration": generation]
    }
    for (type, body) in [(LinkType.deviceAdd, fields(phone, "phone")), (.deviceAdd, fields(tablet, "tablet")),
                         (.deviceRevoke, ["device": deviceID(for: tablet.publicKey).rawValue]), (.recoverySet, code("1")),
                         (.memberAdd, ["member": member, "memberGeneration": "1"])] {
        try state.apply(signed(type, body, after: state, by: key, signer: laptop))
    }
    let before = state
    for (type, body, expected) in [(LinkType.deviceAdd, fields(phone, "phone again"), "device_exists"),
                                   (.deviceRevoke, ["device": deviceID(for: tablet.publicKey).rawValue], "already_revoked"),
                                   (.recoverySet, code("3"), "stale_generation"),
                                   (.memberRotate, ["member": member, "memberGeneration": "3"], "stale_generation")] {
        let error = #expect(throws: ProtocolError.self) { try state.apply(signed(type, body, after: state, by: key, signer: laptop)) }
        #expect(error?.code.rawValue == expected, "\(type): \(String(describing: error))")
    }
    #expect(state == before)
}
