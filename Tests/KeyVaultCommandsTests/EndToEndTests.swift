import Foundation
import KeyVaultTestSupport
import Testing

@Test(arguments: ["english", "japanese", "korean", "spanish", "chinese_simplified", "chinese_traditional",
                  "french", "italian", "czech", "portuguese"])
func realBinaryGenerateIntoVerifyRoundTrips(_ language: String) throws {
    #expect(FileManager.default.isExecutableFile(atPath: BuiltProducts.keyctl.path), "build keyctl first")
    let generated = try keyctl(["recovery", "generate", "--language", language])
    #expect(generated.code == 0)
    #expect(generated.out.split(separator: "\n").count == 1, "a pipe gets the bare phrase")
    let verified = try keyctl(["recovery", "verify", "--json", "--language", language], input: Data(generated.out.utf8))
    #expect(verified.code == 0, "\(verified.err)")
    #expect(verified.out.contains(#""valid":true"#))
}

@Test func realBinaryExitsOneOnAnInvalidCodeAndNamesTheWord() throws {
    let result = try keyctl(["recovery", "verify"], input: Data("abandon abandon zebra".utf8))
    #expect(result.code == 1)
    #expect(result.err.hasPrefix("keyctl: error: "))
}

@Test func realBinaryIdentifiesItselfAsKeyVaultNotKeyutils() throws {
    let result = try keyctl(["--version"])
    #expect(result.code == 0)
    #expect(result.out.contains("KeyVault"))
}
