import Foundation
import KeyVaultCrypto
import Testing
@testable import KeyVaultMnemonic

enum Vectors {
    static func load<T: Decodable>(_ name: String, as type: T.Type = T.self) throws -> T {
        guard let url = Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Vectors") else {
            throw CryptoError(.io, "vector file \(name).json is not in the test bundle")
        }
        return try JSONDecoder().decode(T.self, from: Data(contentsOf: url))
    }
}

/// The repository root, for checks against files that are not bundled (wordlists/).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

struct TrezorVector: Sendable, CustomTestStringConvertible {
    let entropy: String, mnemonic: String, seed: String
    var testDescription: String { "\(entropy.count * 4)-bit \(entropy.prefix(8))…" }
}

func trezorVectors() throws -> [TrezorVector] {
    try Vectors.load("bip39-trezor-english", as: [String: [[String]]].self)["english", default: []]
        .map { TrezorVector(entropy: $0[0], mnemonic: $0[1], seed: $0[2]) }
}

@Test func trezorVectorFileHasAll24() throws { #expect(try trezorVectors().count == 24) }

@Test(arguments: try trezorVectors())
func englishMatchesTrezorVectors(_ v: TrezorVector) throws {
    var entropyBytes = try Hex.decode(v.entropy)
    let fromEntropy = try Mnemonic(entropy: SecureBytes(wiping: &entropyBytes), language: .english)
    #expect(fromEntropy.phrase == v.mnemonic)
    let parsed = try Mnemonic(phrase: v.mnemonic)
    #expect(parsed.language == .english)
    #expect(Hex.encode(parsed.entropy) == v.entropy)
    #expect(Hex.encode(try parsed.seed(passphrase: "TREZOR")) == v.seed)
}

struct LanguageVector: Decodable, Sendable, CustomTestStringConvertible {
    let language: String, entropy: String, mnemonic: String, passphrase: String, seed: String
    var testDescription: String { "\(language) \(entropy.count * 4)-bit \(entropy.prefix(6))…" }
}

struct LanguageFile: Decodable { let tests: [LanguageVector] }

@Test(arguments: try Vectors.load("bip39-all-languages", as: LanguageFile.self).tests)
func everyLanguageMatchesPythonMnemonic(_ v: LanguageVector) throws {
    let language = try #require(MnemonicLanguage(rawValue: v.language))
    var entropyBytes = try Hex.decode(v.entropy)
    let fromEntropy = try Mnemonic(entropy: SecureBytes(wiping: &entropyBytes), language: language)
    #expect(fromEntropy.phrase == v.mnemonic)
    // Detected, not told: the Chinese lists share characters and English/French share
    // words, so give the language only where detection may legitimately differ.
    let detected = try Mnemonic(phrase: v.mnemonic)
    let parsed = detected.language == language ? detected : try Mnemonic(phrase: v.mnemonic, language: language)
    #expect(Hex.encode(parsed.entropy) == v.entropy)
    #expect(Hex.encode(try parsed.seed(passphrase: v.passphrase)) == v.seed)
    #expect(Mnemonic.validate(utf8: v.mnemonic) != nil)
}

@Test func allLanguageVectorsCoverTenLanguages() throws {
    let languages = Set(try Vectors.load("bip39-all-languages", as: LanguageFile.self).tests.map(\.language))
    #expect(languages == Set(MnemonicLanguage.allCases.map(\.rawValue)))
}

@Test(arguments: MnemonicLanguage.allCases)
func builtInWordlistMatchesTheFileAndItsSum(_ language: MnemonicLanguage) throws {
    let url = repositoryRoot.appendingPathComponent("wordlists/\(language.rawValue).txt")
    let data = try Data(contentsOf: url)
    #expect(Hex.encode(SHA256.hash([UInt8](data))) == language.embeddedWordlistSHA256)
    let sums = try String(contentsOf: repositoryRoot.appendingPathComponent("wordlists/SHA256SUMS"), encoding: .utf8)
    #expect(sums.contains("\(language.embeddedWordlistSHA256)  \(language.rawValue).txt"))
    let builtIn = Array((language.words.joined(separator: "\n") + "\n").utf8)
    #expect(builtIn == [UInt8](data))
    #expect(language.words.count == 2048)
}

extension Mnemonic {
    static func validate(utf8 text: String) -> MnemonicLanguage? {
        Array(text.utf8).withUnsafeBytes { validate(utf8: $0) }
    }
}
