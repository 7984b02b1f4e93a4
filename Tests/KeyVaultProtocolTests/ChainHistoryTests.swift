import KeyVaultCrypto
import KeyVaultModel
import Testing
@testable import KeyVaultProtocol

/// A device of a test chain: its keys, and the fields that add it (also AuthorityTests).
struct Signer {
    let signing = Ed25519.PrivateKey()
    let box = X25519.PrivateKey()
    var id: DeviceID { deviceID(for: signing.publicKey) }
    func fields(_ name: String) -> [String: String] { ChainLink.deviceFields(signingKey: signing.publicKey, boxKey: box.publicKey, name: name) }
}

private struct Code {
    let auth = Ed25519.PrivateKey()
    let box = X25519.PrivateKey()
    func fields(_ generation: UInt32) -> [String: String] {
        ["authKey": Hex.encode(auth.publicKey.rawRepresentation), "boxKey": Hex.encode(box.publicKey.rawRepresentation),
         "recoveryGeneration": String(generation)]
    }
}

private func link(_ type: LinkType, _ body: [String: String], after state: ChainState, by key: Ed25519.PrivateKey, signer: String) -> ChainLink {
    var link = ChainLink(sequence: state.sequence + 1, previous: state.head, type: type, signer: signer, time: 0, body: body)
    link.sign(with: key)
    return link
}

private func append(_ state: inout ChainState, _ type: LinkType, _ body: [String: String], by device: Signer) throws {
    try state.apply(link(type, body, after: state, by: device.signing, signer: device.id.rawValue))
}

private func append(_ state: inout ChainState, _ type: LinkType, _ body: [String: String], by code: Code) throws {
    try state.apply(link(type, body, after: state, by: code.auth, signer: ChainLink.recoverySigner))
}

@Test func theChainRemembersWhoAddedEachDeviceAndWhoSetEachCode() throws {
    let laptop = Signer(), phone = Signer(), tablet = Signer(), desk = Signer()
    let first = Code(), second = Code()
    var state = try ChainState(genesis: .genesis(signingKey: laptop.signing, boxKey: laptop.box.publicKey, name: "laptop", time: 0))
    try append(&state, .recoverySet, first.fields(1), by: laptop)
    try append(&state, .deviceAdd, phone.fields("phone"), by: first)          // with the laptop's code: added by the laptop
    try append(&state, .deviceAdd, tablet.fields("tablet"), by: phone)        // approved by the phone
    try append(&state, .recoverySet, second.fields(2), by: first)             // the code replaces itself: still the laptop's
    try append(&state, .deviceAdd, desk.fields("desk"), by: second)
    #expect(state.devices[laptop.id]?.addedBy == nil)
    #expect(state.devices[phone.id]?.addedBy == laptop.id)
    #expect(state.devices[tablet.id]?.addedBy == phone.id)
    #expect(state.devices[desk.id]?.addedBy == laptop.id)
    #expect(state.recovery?.setBy == laptop.id && state.recovery?.set == 4)
    #expect(Set(state.devicesAdded(by: laptop.id).map(\.id)) == [phone.id, desk.id])
    #expect(state.recoveryCompromised(byRevoking: laptop.id) && !state.recoveryCompromised(byRevoking: phone.id))
}

@Test func revokingTheDeviceThatAddedTheCodesSetterCompromisesTheCode() throws {
    let laptop = Signer(), phone = Signer(), tablet = Signer(), intruder = Signer()
    let first = Code(), thief = Code(), fresh = Code()
    var state = try ChainState(genesis: .genesis(signingKey: laptop.signing, boxKey: laptop.box.publicKey, name: "laptop", time: 0))
    try append(&state, .recoverySet, first.fields(1), by: laptop)
    try append(&state, .deviceAdd, phone.fields("phone"), by: laptop)
    try append(&state, .deviceAdd, tablet.fields("tablet"), by: phone)
    try append(&state, .recoverySet, thief.fields(2), by: tablet)             // set by a device the phone added
    try append(&state, .deviceRevoke, ["device": phone.id.rawValue], by: laptop)
    #expect(state.recovery?.compromised == state.sequence)
    // The chain refuses everything the compromised code signs, and nothing of it changes.
    let before = state
    for (type, body) in [(LinkType.deviceAdd, intruder.fields("intruder")), (.recoverySet, fresh.fields(3))] {
        let error = #expect(throws: ProtocolError.self) { try append(&state, type, body, by: thief) }
        #expect(error?.code == .recoveryCompromised)
    }
    #expect(state == before)
    // A device sets a new code, which is trusted again.
    try append(&state, .recoverySet, fresh.fields(3), by: laptop)
    #expect(state.recovery?.isCompromised == false && state.recovery?.setBy == laptop.id)
    #expect(state.recoveries.map(\.compromised).map { $0 != nil } == [false, true, false])
}

@Test func revokingAnUnrelatedDeviceLeavesTheCodeAlone() throws {
    let laptop = Signer(), phone = Signer()
    var state = try ChainState(genesis: .genesis(signingKey: laptop.signing, boxKey: laptop.box.publicKey, name: "laptop", time: 0))
    try append(&state, .recoverySet, Code().fields(1), by: laptop)
    try append(&state, .deviceAdd, phone.fields("phone"), by: laptop)
    try append(&state, .deviceRevoke, ["device": phone.id.rawValue], by: laptop)
    #expect(state.recovery?.isCompromised == false)
}
