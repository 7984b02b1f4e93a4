import Foundation
import KeyVault
import KeyVaultMnemonic
import KeyVaultModel
import KeyVaultTestSupport
import Testing
@testable import KeyVaultCommands

// Issue 8 item 7: `device enroll` names the position of a mistyped word, never candidate words.

/// The words of `text`, for checking that none of a list appears in it.
private func tokens(_ text: String) -> Set<String> {
    Set(text.lowercased().split { !$0.isLetter }.map(String.init))
}

@Test func enrollWithAMistypedCodeNamesThePositionButNoCandidateWords() async throws {
    let code = try Mnemonic.generate(wordCount: 24, language: .english)
    var words = code.words
    let account = String(repeating: "ab", count: 16)
    // An unknown word (closest words would be suggested) and a valid word that breaks
    // the checksum (replacements that make the code valid would be suggested). One list
    // word in 256 keeps the checksum: the first of these that breaks it.
    let replacement = try #require(["zoo", "abandon", "ability", "able", "about"].first { candidate in
        candidate != words[4] && (try? Mnemonic(phrase: (words[..<4] + [candidate] + words[5...]).joined(separator: " "))) == nil
    })
    for (position, typo) in [(5, String(words[4].dropLast()) + "qx"), (5, replacement)] {
        words = code.words
        words[position - 1] = typo
        let phrase = words.joined(separator: " ")
        var suggested = Set<String>()
        do {
            _ = try Mnemonic(phrase: phrase)
            Issue.record("\(phrase) parsed")
        } catch let error as MnemonicError {
            suggested = Set(error.suggestions.map(\.word))
        }
        for json in [false, true] {
            let scratch = try TemporaryDirectory("kv-empty")
            let home = scratch.path("home")  // not made: no device lives there yet
            let result = await runKeyctl(["device", "enroll", "--server", "http://127.0.0.1:1", "--account", account, "--name", "phone",
                                          "--home", home] + (json ? ["--json"] : []), input: phrase)
            #expect(result.0 == 1, "\(result.2)")
            #expect(result.2.contains(typo == replacement ? "checksum" : "word 5"), "\(result.2)")
            // The words this message is made of may also be list words; any other list word is a leak.
            let said = tokens(result.1 + result.2).subtracting(tokens("""
                keyctl error hint that is not a valid recovery code word position type check the words with recovery verify
                every word is in the english list but the checksum does not match a word is wrong or two are swapped
                changing one word at position would make the code valid compare them and the order of the words with your written copy
                word is not in the english word list compare word with your written copy and type the code again nothing was changed
                """))
            let leaked = said.intersection(suggested.subtracting([typo]))
            #expect(leaked.isEmpty, "suggested words printed: \(leaked) in \(result.1) \(result.2)")
        }
    }
}

/// Issue 22: a wrong but valid word at position 6 got "position 2, 3, 4". A checksum
/// failure locates nothing (a change at almost any position can make a 24-word
/// checksum match), so neither `recovery verify` nor `device enroll` names a position.
@Test func aChecksumFailureNamesNoPositionItCannotLocate() async throws {
    let code = try Mnemonic.generate(wordCount: 24, language: .english)
    for candidate in ["zoo", "abandon", "ability", "able"] where candidate != code.words[5] {
        var words = code.words
        words[5] = candidate
        let phrase = words.joined(separator: " ")
        guard (try? Mnemonic(phrase: phrase)) == nil else { continue }  // 1 in 256: still valid
        let account = String(repeating: "ab", count: 16)
        let scratch = try TemporaryDirectory("kv-checksum")
        for arguments in [["recovery", "verify"],
                          ["device", "enroll", "--server", "http://127.0.0.1:1", "--account", account, "--name", "phone", "--home", scratch.path("home")]] {
            let result = await runKeyctl(arguments, input: phrase)
            #expect(result.code == 1, "\(arguments): \(result.err)")
            #expect(result.err.contains("written copy"), "\(arguments): \(result.err)")
            #expect(result.err.range(of: #"(word|position)s? \d"#, options: .regularExpression) == nil,
                    "\(arguments) named a position: \(result.err)")
        }
        return
    }
}
