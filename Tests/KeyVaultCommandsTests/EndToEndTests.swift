import Foundation
import KeyVaultTestSupport
import Testing

@Test(arguments: ["english", "japanese", "korean", "spanish", "chinese_simplified", "chinese_traditional",
                  "french", "italian", "czech", "portuguese"])
func realBinaryGenerateIntoVerifyRoundTrips(_ language: String) async throws {
    #expect(FileManager.default.isExecutableFile(atPath: BuiltProducts.keyctl.path), "build keyctl first")
    let generated = try await keyctl(["recovery", "generate", "--language", language])
    #expect(generated.code == 0)
    #expect(generated.out.split(separator: "\n").count == 1, "a pipe gets the bare phrase")
    let verified = try await keyctl(["recovery", "verify", "--json", "--language", language], input: Data(generated.out.utf8))
    #expect(verified.code == 0, "\(verified.err)")
    #expect(verified.out.contains(#""valid":true"#))
}

@Test func realBinaryExitsOneOnAnInvalidCodeAndNamesTheWord() async throws {
    let result = try await keyctl(["recovery", "verify"], input: Data("abandon abandon zebra".utf8))
    #expect(result.code == 1)
    #expect(result.err.hasPrefix("keyctl: error: "))
}

@Test func realBinaryIdentifiesItselfAsKeyVaultNotKeyutils() async throws {
    let result = try await keyctl(["--version"])
    #expect(result.code == 0)
    #expect(result.out.contains("KeyVault"))
}
