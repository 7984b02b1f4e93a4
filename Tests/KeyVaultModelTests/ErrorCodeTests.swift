import Foundation
import KeyVaultModel
import Testing

@Test(arguments: ErrorCode.wireCodes)
func anErrorCodeTravelsAsItsBareSnakeCaseString(_ code: ErrorCode) throws {
    let json = try JSONEncoder().encode(code)
    #expect(String(decoding: json, as: UTF8.self) == "\"\(code.rawValue)\"")
    #expect(try JSONDecoder().decode(ErrorCode.self, from: json) == code)
    #expect(code.rawValue.allSatisfy { $0 == "_" || ("a"..."z").contains($0) }, "\(code) is not snake_case")
    #expect(code.description == code.rawValue)
}

@Test func theWireCodesAreListedOnceEach() {
    #expect(Set(ErrorCode.wireCodes).count == ErrorCode.wireCodes.count)
}

/// The body clients match on: `{"error": {"code", "message"}}`, the code a bare string.
@Test func theErrorBodyIsTheDocumentedJSON() throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys  // the server's encoder leaves the key order to Foundation
    let body = try encoder.encode(ErrorBody(code: .deviceRevoked, message: "revoked"))
    #expect(String(decoding: body, as: UTF8.self) == #"{"error":{"code":"device_revoked","message":"revoked"}}"#)
    let decoded = try JSONDecoder().decode(ErrorBody.self, from: body)
    #expect(decoded.error.code == ErrorCode.deviceRevoked.rawValue && decoded.error.message == "revoked")
}

/// A code this build does not know (a newer server's) still decodes: clients match on known ones.
@Test func anUnknownCodeDecodesAsItself() throws {
    let code = try JSONDecoder().decode(ErrorCode.self, from: Data(#""from_the_future""#.utf8))
    #expect(code.rawValue == "from_the_future" && !ErrorCode.wireCodes.contains(code))
}
