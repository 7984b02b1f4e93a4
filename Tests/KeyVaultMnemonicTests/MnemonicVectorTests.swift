import Foundation
import KeyVaultCrypto
import KeyVaultTestSupport
import PropertyBased
import Testing
@testable import KeyVaultMnemonic

/// This target's JSON vector files (its `Vectors` resources).
let vectors = Vectors(in: .module)

struct TrezorVector: Sendable, CustomTestStringConvertible {
    let entropy: String, mnemonic: String, seed: String
    var testDescription: String { "\(entropy.count * 4)-bit \(entropy.prefix(8))…" }
}

func trezorVectors() throws -> [TrezorVector] {
    try vectors.load("bip39-trezor-english", as: [String: [[String]]].self)["english", default: []]
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

@Test(arguments: try vectors.load("bip39-all-languages", as: LanguageFile.self).tests)
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
    let languages = Set(try vectors.load("bip39-all-languages", as: LanguageFile.self).tests.map(\.language))
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

struct UnicodePassphraseVector: Decodable, Sendable, CustomTestStringConvertible {
    let mnemonic: String, passphrase: String, nfkd: String, seed: String
    var testDescription: String { "passphrase of \(passphrase.unicodeScalars.count) scalars" }
}

struct UnicodePassphraseFile: Decodable { let tests: [UnicodePassphraseVector] }

/// Issue 11: passphrases mixing letters, combining accents and halfwidth katakana
/// voiced marks. Foundation's NFKD on Linux left U+3099/U+309A (from U+FF9E/U+FF9F)
/// out of canonical order, so such a passphrase gave another seed than every other
/// BIP39 implementation. The vectors are python-mnemonic's.
@Test(arguments: try vectors.load("bip39-unicode-passphrases", as: UnicodePassphraseFile.self).tests)
func unicodePassphrasesGiveTheSeedPythonMnemonicGives(_ v: UnicodePassphraseVector) throws {
    #expect(NFKD.normalize(v.passphrase).unicodeScalars.elementsEqual(v.nfkd.unicodeScalars))
    #expect(Hex.encode(try Mnemonic(phrase: v.mnemonic).seed(passphrase: v.passphrase)) == v.seed)
}

/// The canonical ordering holds for any mix from those ranges: within every run of
/// combining marks the classes never go down, and normalising twice changes nothing.
@Test func nfkdPutsEveryRunOfMarksInCanonicalOrder() async {
    let ranges: [ClosedRange<UInt32>] = [0x0300...0x036F, 0x0591...0x05A1, 0xFF66...0xFF9F, 0x3099...0x309A]
    let marks: [Unicode.Scalar] = ranges.flatMap { range -> [Unicode.Scalar] in range.compactMap { Unicode.Scalar($0) } }
    let pool = Array("abcéÅḋǕё".unicodeScalars) + marks
    await propertyCheck(count: 500, input: Gen.element(of: pool).array(of: 1...24)) { scalars in
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars.compactMap { $0 })
        let normalized = NFKD.normalize(String(view))
        let classes = normalized.unicodeScalars.map { Int($0.properties.canonicalCombiningClass.rawValue) }
        for (a, b) in zip(classes, classes.dropFirst()) where a != 0 && b != 0 { #expect(a <= b, "\(scalars)") }
        #expect(NFKD.normalize(normalized) == normalized)
        #expect(normalized.unicodeScalars.allSatisfy { !(0xFF61...0xFF9F).contains($0.value) })
    }
}
