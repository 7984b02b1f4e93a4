import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import Testing
@testable import KeyVaultServer

/// Each request type's `schema` (``StrictRequest``) lists the fields its body may have
/// (so that a misspelt or newer field is refused instead of dropped); only such types
/// can be decoded from a request. A field added to a request type but not to its
/// schema would be refused; one left in the schema after it left the type would be
/// let through unseen. This keeps the two equal: every field of a fully populated
/// sample of each type, and nothing else, at every level.
@Test func theKnownFieldsOfEveryRequestAreExactlyItsTypesFields() throws {
    let device = TestDevice("phone")
    let state = try ChainState(genesis: device.genesis())
    let link = device.link(.memberAdd, after: state, body: ["member": String(repeating: "a", count: 32), "memberGeneration": "1"])
    let box = KeyBox(generation: 1, sequence: 1, recipient: "recovery", box: "AA==", signer: device.id.rawValue, signature: "AA==")
    let wrap = MemberWrap(member: MemberID(rawValue: String(repeating: "a", count: 32))!, memberGeneration: 1, masterGeneration: 1,
                          envelope: "AA==")
    let slot = RecoverySlot(salt: "00", iterations: 3, memoryKiB: 65536, authKey: "00", boxKey: "00", anchor: "AA==")
    let account = AccountID(rawValue: String(repeating: "b", count: 32))!
    let identityWrap = IdentityWrap(identityGeneration: 1, masterGeneration: 1, envelope: "AA==")
    let shareBox = ShareBox(member: wrap.member, memberGeneration: 1, grantee: account, granteeIdentityGeneration: 1, grant: 2, box: "AA==",
                            signature: "AA==")
    let identity = IdentityKeys(generation: 1, signingKey: "k", boxKey: "b")
    let samples: [(any StrictRequest & Encodable, String)] = [
        (CreateAccountRequest(genesis: device.genesis(), boxes: [box], recovery: slot), "CreateAccountRequest"),
        (AppendRequest(link: link, boxes: [box], wraps: [wrap], recovery: slot, identityWraps: [identityWrap], shareBoxes: [shareBox]),
         "AppendRequest"),
        (ImportAccountRequest(links: [link], boxes: [box], wraps: [wrap], recovery: slot, identityWraps: [identityWrap]),
         "ImportAccountRequest"),
        (RecoveryEnrollRequest(token: "t", link: link, boxes: [box]), "RecoveryEnrollRequest"),
        (RecoveryProof(challenge: "c", signature: "s"), "RecoveryProof"),
        (LinkRequestCreate(device: device.id, name: "n", signingKey: "k", boxKey: "b", commitment: "c"), "LinkRequestCreate"),
        (LinkNonce(nonce: "n"), "LinkNonce"),
        (ContactRequestCreate(to: account, identity: identity, commitment: "c"), "ContactRequestCreate"),
        (ContactResponse(identity: identity, nonce: "n"), "ContactResponse"),
    ]
    for (sample, name) in samples {
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(sample))
        compare(json, type(of: sample).schema, path: name)
        try expectUnknownFieldRefused(sample, name)
    }
}

/// The sample with one more field is refused as `bad_request`, naming the field.
private func expectUnknownFieldRefused<T: StrictRequest & Encodable>(_ sample: T, _ name: String) throws {
    var object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(sample)) as? [String: Any])
    object["unexpected"] = 1
    let error = #expect(throws: APIError.self, "\(name)") { try decodeBody(T.self, from: Array(JSONSerialization.data(withJSONObject: object))) }
    #expect(error?.code == .badRequest && error?.message == "unknown field unexpected", "\(name): \(String(describing: error?.message))")
}

/// Fields of `value` and of `schema` are the same set, recursively where the schema says.
private func compare(_ value: Any, _ schema: FieldSchema, path: String) {
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
