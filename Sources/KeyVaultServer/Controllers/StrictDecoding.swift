import Foundation
import KeyVaultModel

/// A request body the service decodes strictly: its ``schema`` names every field it
/// may have, and a body with any other field is refused (400 `bad_request`).
///
/// Unknown fields are refused where they matter: in the signed and keyed objects, a
/// field the server would silently drop (a misspelt "boxes", a newer format) would
/// leave the client believing it was stored. ``decodeBody(_:from:)`` takes only
/// these types, so no request type can be decoded without its schema.
protocol StrictRequest: Decodable {
    static var schema: FieldSchema { get }
}

/// The fields a JSON value may have, at every level where it matters.
indirect enum FieldSchema: Sendable {
    case object([String: FieldSchema?])  // nil: any value (checked by the decoder)
    case array(FieldSchema)

    static let link: FieldSchema = .object(["version": nil, "sequence": nil, "previous": nil, "type": nil, "signer": nil,
                                            "time": nil, "body": nil, "signature": nil])
    static let box: FieldSchema = .object(["generation": nil, "sequence": nil, "recipient": nil, "box": nil, "signer": nil,
                                           "signature": nil])
    static let wrap: FieldSchema = .object(["member": nil, "memberGeneration": nil, "masterGeneration": nil, "envelope": nil])
    static let identityWrap: FieldSchema = .object(["identityGeneration": nil, "masterGeneration": nil, "envelope": nil])
    static let shareBox: FieldSchema = .object(["member": nil, "memberGeneration": nil, "grantee": nil, "granteeIdentityGeneration": nil,
                                                "grant": nil, "box": nil, "signature": nil])
    static let identityKeys: FieldSchema = .object(["generation": nil, "signingKey": nil, "boxKey": nil])
    static let slot: FieldSchema = .object(["salt": nil, "iterations": nil, "memoryKiB": nil, "authKey": nil, "boxKey": nil,
                                            "anchor": nil])

    /// Refuses the first field of `value` that the schema does not name.
    func check(_ value: Any, path: String = "") throws {
        switch self {
        case .object(let fields):
            guard let object = value as? [String: Any] else { return }  // the decoder reports the type
            for (key, child) in object {
                let keyPath = path.isEmpty ? key : path + "." + key
                guard let entry = fields[key] else { throw APIError.badRequest("unknown field \(keyPath)") }
                try entry?.check(child, path: keyPath)
            }
        case .array(let element):
            guard let array = value as? [Any] else { return }
            for (i, item) in array.enumerated() { try element.check(item, path: "\(path)[\(i)]") }
        }
    }
}

extension CreateAccountRequest: StrictRequest {
    static let schema: FieldSchema = .object(["genesis": .link, "boxes": .array(.box), "recovery": .slot])
}

extension AppendRequest: StrictRequest {
    static let schema: FieldSchema = .object(["link": .link, "boxes": .array(.box), "wraps": .array(.wrap), "recovery": .slot,
                                              "identityWraps": .array(.identityWrap), "shareBoxes": .array(.shareBox)])
}

extension RecoveryEnrollRequest: StrictRequest {
    static let schema: FieldSchema = .object(["token": nil, "link": .link, "boxes": .array(.box)])
}

extension RecoveryProof: StrictRequest {
    static let schema: FieldSchema = .object(["challenge": nil, "signature": nil])
}

extension LinkRequestCreate: StrictRequest {
    static let schema: FieldSchema = .object(["device": nil, "name": nil, "signingKey": nil, "boxKey": nil, "commitment": nil])
}

extension LinkNonce: StrictRequest {
    static let schema: FieldSchema = .object(["nonce": nil])
}

extension ContactRequestCreate: StrictRequest {
    static let schema: FieldSchema = .object(["to": nil, "identity": .identityKeys, "commitment": nil])
}

extension HeadStatement: StrictRequest {
    static let schema: FieldSchema = .object(["version": nil, "account": nil, "device": nil, "sequence": nil, "head": nil, "time": nil,
                                              "signature": nil])
}

extension ContactResponse: StrictRequest {
    static let schema: FieldSchema = .object(["identity": .identityKeys, "nonce": nil])
}

/// Every strictly decoded request body, each decoded as the service does (for the
/// fuzz target of the service's JSON decoding, Fuzz/Targets).
package let strictRequestDecoders: [(name: String, decode: @Sendable ([UInt8]) throws -> Void)] = [
    ("account", { _ = try decodeBody(CreateAccountRequest.self, from: $0) }),
    ("append", { _ = try decodeBody(AppendRequest.self, from: $0) }),
    ("recovery-enroll", { _ = try decodeBody(RecoveryEnrollRequest.self, from: $0) }),
    ("recovery-proof", { _ = try decodeBody(RecoveryProof.self, from: $0) }),
    ("link-request", { _ = try decodeBody(LinkRequestCreate.self, from: $0) }),
    ("link-nonce", { _ = try decodeBody(LinkNonce.self, from: $0) }),
    ("contact-request", { _ = try decodeBody(ContactRequestCreate.self, from: $0) }),
    ("contact-response", { _ = try decodeBody(ContactResponse.self, from: $0) }),
    ("head-statement", { _ = try decodeBody(HeadStatement.self, from: $0) }),
]

/// Decodes a request body: unknown fields refused by the type's schema, then the
/// decoder's checks; every refusal a 400 that says what is wrong.
func decodeBody<T: StrictRequest>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
    guard !bytes.isEmpty else { throw APIError.badRequest("this request needs a JSON body") }
    guard let object = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) else {
        throw APIError.badRequest("the body is not valid JSON")
    }
    try T.schema.check(object)
    do {
        return try JSONDecoder().decode(T.self, from: Data(bytes))
    } catch let error as DecodingError {
        throw APIError.badRequest("the JSON body is not valid here: \(describe(error))")
    }
}

private func describe(_ error: DecodingError) -> String {
    func path(_ context: DecodingError.Context) -> String {
        let p = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        return p.isEmpty ? "the body" : p
    }
    switch error {
    case .keyNotFound(let key, let context): return "\(path(context)).\(key.stringValue) is missing".replacingOccurrences(of: "the body.", with: "")
    case .typeMismatch(_, let context), .valueNotFound(_, let context): return "\(path(context)) has the wrong type"
    case .dataCorrupted(let context): return "\(path(context)): \(context.debugDescription)"
    @unknown default: return "unreadable"
    }
}
