import Foundation
import KeyVaultCrypto
import PropertyBased
import Testing
@testable import KeyVaultMnemonic

let languages = Gen<MnemonicLanguage?>.element(of: MnemonicLanguage.allCases).map { $0! }
let wordCounts = Gen<Int?>.element(of: Mnemonic.allowedWordCounts).map { $0! }

@Test func generatedCodesRoundTripInEveryLanguageAndLength() async {
    await propertyCheck(count: 200, input: languages, wordCounts) { language, count in
        let code = try Mnemonic.generate(wordCount: count, language: language)
        #expect(code.wordCount == count && code.language == language)
        let parsed = try Mnemonic(phrase: code.phrase, language: language)
        #expect(parsed.entropy == code.entropy)
        #expect(Mnemonic.validate(utf8: code.phrase) != nil)
    }
}

@Test func generateDefaultsTo24EnglishWordsAndRefusesOtherCounts() throws {
    let code = try Mnemonic.generate()
    #expect(code.wordCount == 24 && code.language == .english && code.entropy.count == 32)
    #expect(throws: MnemonicError.self) { try Mnemonic.generate(wordCount: 13) }
}

@Test func japaneseIsShownWithIdeographicSpaces() throws {
    let code = try Mnemonic.generate(language: .japanese)
    #expect(code.phrase.unicodeScalars.filter { $0 == "\u{3000}" }.count == 23)
    let withASCIISpaces = code.words.joined(separator: " ")
    #expect(try Mnemonic(phrase: withASCIISpaces).entropy == code.entropy)
}

@Test func anyWhitespaceAndCaseAreAccepted() throws {
    let words = try Mnemonic.generate().words
    let messy = "  " + words.enumerated().map { i, w in i % 3 == 0 ? w.uppercased() : w }
        .joined(separator: " \t\n\u{3000}\u{00A0}") + "\n"
    let expected = try Mnemonic(phrase: words.joined(separator: " "))
    #expect(try Mnemonic(phrase: messy).entropy == expected.entropy)
}

@Test func fourLetterPrefixesAreEnoughWhereTheListAllowsIt() throws {
    for language in [MnemonicLanguage.english, .italian, .czech, .portuguese] {
        let code = try Mnemonic.generate(language: language)
        let short = code.words.map { String($0.unicodeScalars.prefix(4).map(Character.init)) }.joined(separator: " ")
        #expect(try Mnemonic(phrase: short, language: language).entropy == code.entropy, "\(language)")
    }
    // A prefix shorter than 4 letters is not a word.
    #expect(throws: MnemonicError.self) { try Mnemonic(phrase: "aba " + String(repeating: "abandon ", count: 22) + "art") }
}

@Test func composedAccentsAreNormalisedToNFKD() throws {
    let code = try Mnemonic.generate(language: .spanish)
    let composed = code.phrase.precomposedStringWithCanonicalMapping
    #expect(Array(composed.utf8) != Array(code.phrase.utf8) || !code.phrase.contains("\u{301}"))
    #expect(try Mnemonic(phrase: composed).entropy == code.entropy)
}

@Test func englishAndFrenchSharedWordsStillDetectTheRightList() throws {
    // Both lists contain "abandon", "animal", …: a French code may start with one.
    let french = MnemonicLanguage.french.words, english = Set(MnemonicLanguage.english.words)
    let shared = french.filter(english.contains)
    #expect(shared.count == 100)
    var found = false
    for _ in 0..<2000 {
        let code = try Mnemonic.generate(wordCount: 12, language: .french)
        guard english.contains(code.words[0]) else { continue }
        #expect(try Mnemonic(phrase: code.phrase).language == .french)
        found = true
        break
    }
    #expect(found)
}

@Test func wrongWordCountSaysHowManyWereRead() {
    let error = parseError(String(repeating: "abandon ", count: 23))
    #expect(error?.code == .wordCount)
    #expect(error?.wordCount == 23)
    #expect(error?.message.contains("23") == true)
    #expect(parseError("")?.code == .wordCount)
    #expect(parseError(String(repeating: "abandon ", count: 25))?.wordCount == 25)
}

@Test func unknownWordNamesItsPositionAndTheClosestWords() throws {
    var words = try Mnemonic.generate().words
    let original = words[6]
    words[6] = String(original.dropLast()) + "q"  // a typo
    let error = try #require(parseError(words.joined(separator: " ")))
    #expect(error.code == .unknownWord)
    #expect(error.position == 7)
    #expect(error.suggestions.map(\.word).contains(original))
    #expect(error.suggestions.allSatisfy { $0.position == 7 })
    #expect(!error.message.contains(words[6]), "the message repeats what was typed")
}

@Test func checksumFailureSuggestsTheWordThatWasMeant() async throws {
    // The common case: one letter slips and the result is another list word
    // ("cat" → "car"). The word meant must be among the suggestions.
    let table = WordTable.table(for: .english)
    await propertyCheck(count: 25, input: Gen.int(in: 0...22)) { position in
        let code = try Mnemonic.generate()
        var words = code.words
        let meant = Array(words[position].unicodeScalars)
        guard let slip = table.words.first(where: {
            $0 != words[position] && MnemonicCodec.distance(Array($0.unicodeScalars), meant) == 1
        }) else { return }  // no list word one letter away from this one
        words[position] = slip
        guard let error = parseError(words.joined(separator: " ")) else { return }  // 1 in 256: still valid
        #expect(error.code == .checksum)
        #expect(error.suggestions.contains(.init(position: position + 1, word: code.words[position])),
                "\(error.suggestions)")
    }
}

@Test func validateAgreesWithParsing() async {
    await propertyCheck(count: 100, input: languages, Gen.int(in: 0...1)) { language, corrupt in
        var words = try Mnemonic.generate(language: language).words
        if corrupt == 1 { words.swapAt(0, 1) }
        let phrase = words.joined(separator: " ")
        let parsed = try? Mnemonic(phrase: phrase)
        #expect((Mnemonic.validate(utf8: phrase) != nil) == (parsed != nil))
    }
}

@Test func mnemonicPrintsNoWords() throws {
    let code = try Mnemonic.generate()
    // The rendering's own vocabulary ("language", "words", …: some are list words)
    // comes from another code; a token that is one of this code's words must be in it.
    let structure = Set(try renderings(of: Mnemonic(entropy: SecureBytes(copying: [UInt8](repeating: 0, count: 32))))
        .flatMap { $0.split { !$0.isLetter }.map { $0.lowercased() } })
    let secret = Set(code.words)
    for text in try renderings(of: code) {
        let tokens = text.split { !$0.isLetter }.map { $0.lowercased() }
        #expect(tokens.allSatisfy { !secret.contains($0) || structure.contains($0) }, "\(text)")
        #expect(!text.contains(code.words[0] + " " + code.words[1]))
    }
}

func renderings(of code: Mnemonic) throws -> [String] {
    var dumped = ""
    dump(code, to: &dumped)
    return [String(describing: code), String(reflecting: code), dumped]
}

@Test func languageNamesAndTagsAreAccepted() {
    #expect(MnemonicLanguage(name: "chinese-simplified") == .chineseSimplified)
    #expect(MnemonicLanguage(name: "zh-Hant") == .chineseTraditional)
    #expect(MnemonicLanguage(name: "JA") == .japanese)
    #expect(MnemonicLanguage(name: "klingon") == nil)
}

func parseError(_ phrase: String) -> MnemonicError? {
    do {
        _ = try Mnemonic(phrase: phrase)
        return nil
    } catch {
        return error as? MnemonicError
    }
}

@Test func fastValidationAgreesWithParsingOnAwkwardASCII() async throws {
    let words = try Mnemonic.generate().words
    let phrase = words.joined(separator: " ")
    let prefixed = words.map { String($0.prefix(4)) }.joined(separator: " ")
    let cases: [String] = [
        phrase, phrase.uppercased(), " \t" + phrase + " \r\n", words.joined(separator: "\u{0B}\u{0C}\t"),
        prefixed, prefixed + "x", phrase + " " + words[0], String(phrase.dropLast()),
        phrase.replacingOccurrences(of: " ", with: "  "), "", " ", "\n\n",
        words.dropLast().joined(separator: " ") + " " + String(repeating: "z", count: 40),
        String(repeating: "abandon ", count: 11) + "about", String(repeating: "ABANDON\t", count: 11) + "ABOUT",
        String(repeating: "zoo ", count: 30), "abandonabandonabandon " + phrase,
    ]
    for text in cases {
        let parsed = try? Mnemonic(phrase: text)
        #expect(Mnemonic.validate(utf8: text) == parsed?.language, "\(text.debugDescription)")
    }
    // Every length modulo 8, so the 8-byte chunks end everywhere.
    await propertyCheck(count: 100, input: Gen.int(in: 0...7)) { extra in
        let padded = phrase + String(repeating: " ", count: extra)
        #expect(Mnemonic.validate(utf8: padded) == .english)
    }
}
