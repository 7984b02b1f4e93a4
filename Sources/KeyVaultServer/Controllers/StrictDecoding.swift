import Foundation
import KeyVaultModel

/// Decodes a request body, refusing (400) fields the type does not have: see ``KnownFields``.
func decodeBody<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
    guard !bytes.isEmpty else { throw APIError.badRequest("this request needs a JSON body") }
    if let schema = KnownFields.schema(for: T.self) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) else {
            throw APIError.badRequest("the body is not valid JSON")
        }
        try KnownFields.check(object, against: schema, path: "")
    }
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

/// The fields each request body may have. Unknown fields are refused where they
/// matter: in the signed and keyed objects, a field the server would silently drop
/// (a misspelt "boxes", a newer format) would leave the client believing it was stored.
enum KnownFields {
    indirect enum Schema: Sendable {
        case object([String: Schema?])  // nil: any value (checked by the decoder)
        case array(Schema)
    }

    static let link: Schema = .object(["version": nil, "sequence": nil, "previous": nil, "type": nil, "signer": nil,
                                       "time": nil, "body": nil, "signature": nil])
    static let box: Schema = .object(["generation": nil, "sequence": nil, "recipient": nil, "box": nil, "signer": nil, "signature": nil])
    static let wrap: Schema = .object(["member": nil, "memberGeneration": nil, "masterGeneration": nil, "envelope": nil])
    static let slot: Schema = .object(["salt": nil, "iterations": nil, "memoryKiB": nil, "authKey": nil, "boxKey": nil, "anchor": nil])

    static func schema<T>(for type: T.Type) -> Schema? {
        switch type {
        case is CreateAccountRequest.Type: .object(["genesis": link, "boxes": .array(box), "recovery": slot])
        case is AppendRequest.Type: .object(["link": link, "boxes": .array(box), "wraps": .array(wrap), "recovery": slot])
        case is RecoveryEnrollRequest.Type: .object(["token": nil, "link": link, "boxes": .array(box)])
        case is RecoveryProof.Type: .object(["challenge": nil, "signature": nil])
        case is LinkRequestCreate.Type: .object(["device": nil, "name": nil, "signingKey": nil, "boxKey": nil, "commitment": nil])
        case is LinkNonce.Type: .object(["nonce": nil])
        default: nil
        }
    }

    static func check(_ value: Any, against schema: Schema, path: String) throws {
        switch schema {
        case .object(let fields):
            guard let object = value as? [String: Any] else { return }  // the decoder reports the type
            for (key, child) in object {
                guard let entry = fields[key] else {
                    throw APIError.badRequest("unknown field \(path.isEmpty ? key : path + "." + key)")
                }
                if let entry { try check(child, against: entry, path: path.isEmpty ? key : path + "." + key) }
            }
        case .array(let element):
            guard let array = value as? [Any] else { return }
            for (i, item) in array.enumerated() { try check(item, against: element, path: "\(path)[\(i)]") }
        }
    }
}

