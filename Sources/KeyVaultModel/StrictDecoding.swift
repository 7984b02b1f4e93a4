import Foundation

// The request bodies the service decodes, and how strictly: here, beside the wire
// types, so that what decodes them (the service, the fuzz targets) needs nothing else.

/// A request body the service decodes strictly: its ``schema`` names every field it
/// may have, and a body with any other field is refused (``BodyRefusal``; the service
/// answers 400 `bad_request`).
///
/// Unknown fields are refused where they matter: in the signed and keyed objects, a
/// field the server would silently drop (a misspelt "boxes", a newer format) would
/// leave the client believing it was stored. ``decodeStrictly(_:from:)`` takes only
/// these types, so no request type can be decoded without its schema.
package protocol StrictRequest: Decodable {
    static var schema: FieldSchema { get }
}

/// The fields a JSON value may have, at every level where it matters.
package indirect enum FieldSchema: Sendable {
    case object([String: FieldSchema?])  // nil: any value (checked by the decoder)
    case array(FieldSchema)

    package static let link: FieldSchema = .object(["version": nil, "sequence": nil, "previous": nil, "type": nil, "signer": nil,
                                            "time": nil, "body": nil, "signature": nil])
    package static let box: FieldSchema = .object(["generation": nil, "sequence": nil, "recipient": nil, "box": nil, "signer": nil,
                                           "signature": nil])
    package static let wrap: FieldSchema = .object(["member": nil, "memberGeneration": nil, "masterGeneration": nil, "envelope": nil])
    package static let identityWrap: FieldSchema = .object(["identityGeneration": nil, "masterGeneration": nil, "envelope": nil])
    package static let shareBox: FieldSchema = .object(["member": nil, "memberGeneration": nil, "grantee": nil, "granteeIdentityGeneration": nil,
                                                "grant": nil, "box": nil, "signature": nil])
    package static let identityKeys: FieldSchema = .object(["generation": nil, "signingKey": nil, "boxKey": nil])
    package static let slot: FieldSchema = .object(["salt": nil, "iterations": nil, "memoryKiB": nil, "authKey": nil, "boxKey": nil,
                                            "anchor": nil])

    /// Refuses the first field of `value` that the schema does not name.
    package func check(_ value: Any, path: String = "") throws {
        switch self {
        case .object(let fields):
            guard let object = value as? [String: Any] else { return }  // the decoder reports the type
            for (key, child) in object {
                let keyPath = path.isEmpty ? key : path + "." + key
                guard let entry = fields[key] else { throw BodyRefusal("unknown field \(keyPath)") }
                try entry?.check(child, path: keyPath)
            }
        case .array(let element):
            guard let array = value as? [Any] else { return }
            for (i, item) in array.enumerated() { try element.check(item, path: "\(path)[\(i)]") }
        }
    }
}

extension CreateAccountRequest: StrictRequest {
    package static let schema: FieldSchema = .object(["genesis": .link, "boxes": .array(.box), "recovery": .slot])
}

extension AppendRequest: StrictRequest {
    package static let schema: FieldSchema = .object(["link": .link, "boxes": .array(.box), "wraps": .array(.wrap), "recovery": .slot,
                                              "identityWraps": .array(.identityWrap), "shareBoxes": .array(.shareBox)])
}

extension ImportAccountRequest: StrictRequest {
    package static let schema: FieldSchema = .object(["links": .array(.link), "boxes": .array(.box), "wraps": .array(.wrap), "recovery": .slot,
                                              "identityWraps": .array(.identityWrap)])
}

extension RecoveryEnrollRequest: StrictRequest {
    package static let schema: FieldSchema = .object(["token": nil, "link": .link, "boxes": .array(.box)])
}

extension BeginUploadRequest: StrictRequest {
    package static let schema: FieldSchema = .object(["key": nil, "chunkShift": nil, "size": nil])
}

extension RecoveryProof: StrictRequest {
    package static let schema: FieldSchema = .object(["challenge": nil, "signature": nil])
}

extension LinkRequestCreate: StrictRequest {
    package static let schema: FieldSchema = .object(["device": nil, "name": nil, "signingKey": nil, "boxKey": nil, "commitment": nil])
}

extension LinkNonce: StrictRequest {
    package static let schema: FieldSchema = .object(["nonce": nil])
}

extension ContactRequestCreate: StrictRequest {
    package static let schema: FieldSchema = .object(["to": nil, "identity": .identityKeys, "commitment": nil])
}

extension HeadStatement: StrictRequest {
    package static let schema: FieldSchema = .object(["version": nil, "account": nil, "device": nil, "sequence": nil, "head": nil, "time": nil,
                                              "signature": nil])
}

extension ContactResponse: StrictRequest {
    package static let schema: FieldSchema = .object(["identity": .identityKeys, "nonce": nil])
}

/// Every strictly decoded request body, each decoded as the service does (for the
/// fuzz target of the service's JSON decoding, Fuzz/Targets).
package let strictRequestDecoders: [(name: String, decode: @Sendable ([UInt8]) throws -> Void)] = [
    ("account", { _ = try decodeStrictly(CreateAccountRequest.self, from: $0) }),
    ("append", { _ = try decodeStrictly(AppendRequest.self, from: $0) }),
    ("recovery-enroll", { _ = try decodeStrictly(RecoveryEnrollRequest.self, from: $0) }),
    ("recovery-proof", { _ = try decodeStrictly(RecoveryProof.self, from: $0) }),
    ("link-request", { _ = try decodeStrictly(LinkRequestCreate.self, from: $0) }),
    ("link-nonce", { _ = try decodeStrictly(LinkNonce.self, from: $0) }),
    ("contact-request", { _ = try decodeStrictly(ContactRequestCreate.self, from: $0) }),
    ("contact-response", { _ = try decodeStrictly(ContactResponse.self, from: $0) }),
    ("head-statement", { _ = try decodeStrictly(HeadStatement.self, from: $0) }),
]

/// Why a request body was refused: what is wrong with it, for a 400 `bad_request`.
package struct BodyRefusal: Error, Sendable {
    package let message: String
    package init(_ message: String) { self.message = message }
}

/// Decodes a request body: unknown fields refused by the type's schema, then the
/// decoder's checks; every refusal a ``BodyRefusal`` that says what is wrong.
package func decodeStrictly<T: StrictRequest>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
    guard !bytes.isEmpty else { throw BodyRefusal("this request needs a JSON body") }
    guard let object = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) else {
        throw BodyRefusal("the body is not valid JSON")
    }
    try T.schema.check(object)
    do {
        return try JSONDecoder().decode(T.self, from: Data(bytes))
    } catch let error as DecodingError {
        throw BodyRefusal("the JSON body is not valid here: \(describe(error))")
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
