import Foundation
import Hummingbird
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol

extension Request {
    /// Reads the body as it streams in, refusing (413) as soon as it passes `limit`:
    /// at once when Content-Length already says so, else when the bytes do.
    func collectBody(limit: Int) async throws -> [UInt8] {
        let tooLarge = APIError(.payloadTooLarge, "the request body is larger than the \(limit) bytes this endpoint accepts")
        if let declared = headers[.contentLength].flatMap(Int.init), declared > limit { throw tooLarge }
        var bytes = [UInt8]()
        for try await var chunk in body {
            guard bytes.count + chunk.readableBytes <= limit else { throw tooLarge }
            bytes += chunk.readBytes(length: chunk.readableBytes) ?? []
        }
        return bytes
    }

    /// An optional query parameter of type `T`, refused with a 400 that names it.
    func query<T: LosslessStringConvertible>(_ name: String, as type: T.Type, _ what: String) throws -> T? {
        guard let text = uri.queryParameters.get(name) else { return nil }
        guard let value = T(text) else { throw APIError.badRequest("\(name) is \(what)") }
        return value
    }
}

/// The path parameters, parsed into their types or refused with a 400 that says the form.
extension Parameters {
    func account() throws -> AccountID {
        guard let text = get("account"), let id = AccountID(rawValue: text) else {
            throw APIError.badRequest("the account id in the path is 32 lowercase hex digits")
        }
        return id
    }

    /// The account that shares with the account in the path (`{sharer}`).
    func sharer() throws -> AccountID { try otherAccount("sharer") }

    func contact() throws -> AccountID { try otherAccount("contact") }

    /// Another account's id in the path (a sharer, a contact).
    private func otherAccount(_ name: String) throws -> AccountID {
        guard let text = get(name), let id = AccountID(rawValue: text) else {
            throw APIError.badRequest("the \(name)'s account id in the path is 32 lowercase hex digits")
        }
        return id
    }

    /// A contact request's id (`{request}`): 16 bytes as 32 lowercase hex digits.
    func contactRequest() throws -> String {
        guard let text = get("request"), Hex.isLowercase(text, byteCount: 16) else {
            throw APIError.badRequest("a contact request id is 32 lowercase hex digits")
        }
        return text
    }

    func member() throws -> MemberID {
        guard let text = get("member"), let id = MemberID(rawValue: text) else {
            throw APIError.badRequest("the member id in the path is 32 lowercase hex digits")
        }
        return id
    }

    /// An upload's id (`{upload}`): 32 lowercase hex digits, the server's own.
    func upload() throws -> String {
        guard let text = get("upload"), text.count == 32, text.allSatisfy({ ("0"..."9").contains($0) || ("a"..."f").contains($0) }) else {
            throw APIError.badRequest("the upload id in the path is 32 lowercase hex digits")
        }
        return text
    }

    /// A chunk's place in the path (`{index}`): a decimal number from 0, no sign or leading zero.
    func chunkIndex() throws -> Int {
        guard let text = get("index"), let index = Int(text), index >= 0, String(index) == text else {
            throw APIError.badRequest("the chunk index in the path is a decimal number from 0")
        }
        return index
    }

    func address() throws -> ContentAddress {
        guard let text = get("address"), let address = ContentAddress(text) else {
            throw APIError.badRequest("the address in the path is ca1.<generation>.<64 lowercase hex digits>")
        }
        return address
    }

    func linkCode() throws -> String {
        guard let code = get("code"), LinkCode.isValid(code) else {
            throw APIError.badRequest("a link code is 10 characters of 0-9 and A-Z without I, L, O, U")
        }
        return code
    }
}

extension Response {
    /// `value` as JSON with sorted keys.
    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(value)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func octetStream(_ bytes: some Sequence<UInt8>) -> Response {
        Response(status: .ok, headers: [.contentType: "application/octet-stream"], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}

/// Decodes a request body strictly (KeyVaultModel's ``decodeStrictly(_:from:)``): every
/// refusal a 400 `bad_request` that says what is wrong.
func decodeBody<T: StrictRequest>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
    do {
        return try decodeStrictly(type, from: bytes)
    } catch let refusal as BodyRefusal {
        throw APIError.badRequest(refusal.message)
    }
}
