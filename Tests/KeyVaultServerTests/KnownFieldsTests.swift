import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import Testing
@testable import KeyVaultServer

/// `KnownFields` is a hand-kept list of the fields each request body may have (so that
/// a misspelt or newer field is refused instead of dropped). A field added to a
/// request type but not to the list would be refused; one left in the list after it
/// left the type would be let through unseen. This keeps the two equal: every field
/// of a fully populated sample of each type, and nothing else, at every level.
@Test func theKnownFieldsOfEveryRequestAreExactlyItsTypesFields() throws {
    let device = TestDevice("phone")
    let state = try ChainState(genesis: device.genesis())
    let link = device.link(.memberAdd, after: state, body: ["member": String(repeating: "a", count: 32), "memberGeneration": "1"])
    let box = KeyBox(generation: 1, sequence: 1, recipient: "recovery", box: "AA==", signer: device.id.rawValue, signature: "AA==")
    let wrap = MemberWrap(member: MemberID(rawValue: String(repeating: "a", count: 32))!, memberGeneration: 1, masterGeneration: 1,
                          envelope: "AA==")
    let slot = RecoverySlot(salt: "00", iterations: 3, memoryKiB: 65536, authKey: "00", boxKey: "00", anchor: "AA==")
    let samples: [(any Encodable, KnownFields.Schema?, String)] = [
        (CreateAccountRequest(genesis: device.genesis(), boxes: [box], recovery: slot), KnownFields.schema(for: CreateAccountRequest.self), "CreateAccountRequest"),
        (AppendRequest(link: link, boxes: [box], wraps: [wrap], recovery: slot), KnownFields.schema(for: AppendRequest.self), "AppendRequest"),
        (RecoveryEnrollRequest(token: "t", link: link, boxes: [box]), KnownFields.schema(for: RecoveryEnrollRequest.self), "RecoveryEnrollRequest"),
        (RecoveryProof(challenge: "c", signature: "s"), KnownFields.schema(for: RecoveryProof.self), "RecoveryProof"),
        (LinkRequestCreate(device: device.id, name: "n", signingKey: "k", boxKey: "b", commitment: "c"), KnownFields.schema(for: LinkRequestCreate.self), "LinkRequestCreate"),
        (LinkNonce(nonce: "n"), KnownFields.schema(for: LinkNonce.self), "LinkNonce"),
    ]
    for (sample, schema, name) in samples {
        let schema = try #require(schema, "\(name) has no list of known fields")
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(sample))
        compare(json, schema, path: name)
    }
}

/// Fields of `value` and of `schema` are the same set, recursively where the schema says.
private func compare(_ value: Any, _ schema: KnownFields.Schema, path: String) {
    switch schema {
    case .object(let fields):
        guard let object = value as? [String: Any] else { Issue.record("\(path) is not an object"); return }
        #expect(Set(object.keys) == Set(fields.keys), "\(path): the type has \(object.keys.sorted()), the list \(fields.keys.sorted())")
        for (key, child) in fields {
            if let child, let inner = object[key] { compare(inner, child, path: path + "." + key) }
        }
    case .array(let element):
        guard let array = value as? [Any], let first = array.first else { Issue.record("\(path) is not a non-empty array"); return }
        compare(first, element, path: path + "[0]")
    }
}
