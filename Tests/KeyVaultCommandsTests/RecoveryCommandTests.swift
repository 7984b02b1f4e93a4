import Foundation
import KeyVaultMnemonic
import KeyVaultTestSupport
import Testing
@testable import KeyVaultCommands

func json(_ line: Substring) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
}

@Test(arguments: MnemonicLanguage.allCases)
func generateThenVerifyRoundTrips(_ language: MnemonicLanguage) async throws {
    let generated = await runKeyctl(["recovery", "generate", "--language", language.rawValue, "--json"])
    #expect(generated.code == 0)
    let object = try json(generated.out.split(separator: "\n").last!)
    #expect(object["language"] as? String == language.rawValue)
    #expect(object["words"] as? Int == 24)
    let mnemonic = try #require(object["mnemonic"] as? String)
    let verified = await runKeyctl(["recovery", "verify", "--json", "--language", language.rawValue], input: mnemonic)
    #expect(verified.code == 0)
    let result = try json(verified.out.split(separator: "\n").last!)
    #expect(result["valid"] as? Bool == true)
    #expect(result["language"] as? String == language.rawValue)
    #expect(result["entropy"] == nil && result["seed"] == nil, "secrets printed without being asked for")
}

@Test func verifyPrintsEntropyAndSeedOnlyWhenAsked() async throws {
    let directory = try TemporaryDirectory("kv-pass")
    let passphrase = directory.url("passphrase")
    try "TREZOR\n".write(to: passphrase, atomically: true, encoding: .utf8)
    // Trezor vector 1.
    let phrase = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"
    let result = await runKeyctl(["recovery", "verify", "--json", "--show-entropy", "--seed", "--passphrase-file", passphrase.path], input: phrase)
    #expect(result.code == 0)
    let object = try json(result.out.split(separator: "\n").last!)
    #expect(object["entropy"] as? String == "00000000000000000000000000000000")
    #expect(object["seed"] as? String == "c55257c360c07c72029aebc1b53c05ed0362ada38ead3e3e9efa3708e53495531f09a6987599d18264c1e1c92f2cf141630c7a3c4ab7c81b2f001698e7463b04")
}

@Test func verifyReportsAnUnknownWordWithPositionAndSuggestions() async throws {
    let result = await runKeyctl(["recovery", "verify", "--json"],
                                 input: "abandon abandon abandn abandon abandon abandon abandon abandon abandon abandon abandon about")
    #expect(result.code == 1)
    let error = try #require(try json(result.out.split(separator: "\n").last!)["error"] as? [String: Any])
    #expect(error["code"] as? String == "unknown_word")
    #expect(error["position"] as? Int == 3)
    let words = (error["suggestions"] as? [[String: Any]])?.compactMap { $0["word"] as? String } ?? []
    #expect(words.first == "abandon")
    #expect(result.err.contains("keyctl: error: word 3"))
    #expect(result.err.contains("keyctl: hint: did you mean abandon"))
    #expect(!result.err.contains("\n\n") && result.err.hasSuffix("?\n"), "stray output: \(result.err.debugDescription)")
}

@Test func verifyReportsAChecksumFailureWithRepairs() async throws {
    // "about" → "above": both list words, one letter apart.
    let result = await runKeyctl(["recovery", "verify", "--json"],
                                 input: "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon above")
    #expect(result.code == 1)
    let error = try #require(try json(result.out.split(separator: "\n").last!)["error"] as? [String: Any])
    #expect(error["code"] as? String == "checksum")
    let suggestions = (error["suggestions"] as? [[String: Any]]) ?? []
    #expect(suggestions.contains { $0["position"] as? Int == 12 && $0["word"] as? String == "about" })
}

@Test func verifyReportsTheWordCount() async throws {
    let result = await runKeyctl(["recovery", "verify", "--json"], input: "abandon ability able")
    #expect(result.code == 1)
    let object = try json(result.out.split(separator: "\n").last!)
    #expect(object["valid"] as? Bool == false)
    #expect(object["words"] as? Int == 3)
    #expect((object["error"] as? [String: Any])?["code"] as? String == "word_count")
}

@Test func verifyAcceptsTheNumberedGridThatGenerateShows() async throws {
    let shown = await runKeyctl(["recovery", "generate"], terminal: true)
    #expect(shown.out.contains("  1. "))
    let grid = shown.out.split(separator: "\n").filter { $0.contains(". ") && $0.first == " " }.joined(separator: "\n")
    #expect(grid.split(separator: "\n").count == 6)
    let result = await runKeyctl(["recovery", "verify"], input: grid)
    #expect(result.code == 0, "\(result.err)")
}

@Test func verifyOnATerminalPromptsWithoutEchoingTheCode() async throws {
    let phrase = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"
    let result = await runKeyctl(["recovery", "verify"], input: phrase + "\n", terminal: true)
    #expect(result.code == 0)
    #expect(result.err.contains("input hidden"))
    #expect(!result.out.contains("abandon") && !result.err.contains("abandon"))
}

@Test func badCommandLinesAreUsageErrors() async {
    #expect(await runKeyctl(["recovery", "generate", "--words", "13"]).code == 64)
    #expect(await runKeyctl(["recovery", "generate", "--language", "klingon"]).code == 64)
    #expect(await runKeyctl(["recovery", "verify", "--passphrase-file", "/tmp/x"]).code == 64)
    #expect(await runKeyctl(["recovery", "frobnicate"]).code == 64)
}

@Test func helpTeachesAndExitsZero() async {
    let help = await runKeyctl(["recovery", "verify", "--help"])
    #expect(help.code == 0)
    #expect(help.out.contains("standard input"))
    let top = await runKeyctl(["--help"])
    #expect(top.out.contains("keyutils"))
}

@Test func quizPassesWithTheRightWordsAndFailsWithAWrongOne() async throws {
    let code = try Mnemonic.generate()
    // Every position answered in order; the quiz asks 3 of them, in ascending order,
    // so answer by reading the prompts back (terminal mode shows them).
    let passing = BufferConsoleQuiz(code: code, answerCorrectly: true)
    #expect(await KeyctlMain.run(["recovery", "quiz"], console: passing) == 0)
    #expect(passing.output.contains("All 3 words match"))
    let failing = BufferConsoleQuiz(code: code, answerCorrectly: false)
    #expect(await KeyctlMain.run(["recovery", "quiz", "--json"], console: failing) == 1)
    #expect(failing.output.contains(#""passed":false"#))
}

/// Answers each "Word #N:" prompt from the code (or with a wrong word).
final class BufferConsoleQuiz: Console, @unchecked Sendable {
    let code: Mnemonic
    let answerCorrectly: Bool
    var output = "", errorOutput = ""
    let inputIsTerminal = true, outputIsTerminal = true, errorIsTerminal = true

    init(code: Mnemonic, answerCorrectly: Bool) {
        self.code = code
        self.answerCorrectly = answerCorrectly
    }

    func readToEnd() throws -> [UInt8] { [] }
    func readLine() throws -> [UInt8]? { nil }
    func readSecretLine(prompt: String) throws -> [UInt8]? {
        errorOutput += prompt
        guard let number = prompt.split(separator: "#").last?.split(separator: ":").first, let position = Int(number) else {
            return Array(code.phrase.utf8)
        }
        let word = code.words[position - 1]
        return Array((answerCorrectly ? word.uppercased() : (word == "zoo" ? "abandon" : "zoo")).utf8)
    }
    func write(_ text: String) { output += text }
    func writeError(_ text: String) { errorOutput += text }
}

/// Issue 22: `recovery rotate` asks before it replaces a code that is set; nothing
/// changes, and no new code is shown or written, unless the person says yes.
@Test func recoveryRotateAsksBeforeItReplacesTheCode() async throws {
    let story = try await Story("rotate-asks")
    _ = try await story.run(["init", "--server", story.url, "--name", "laptop", "--recovery-file", story.path("code"),
                       "--kdf", "interactive", "--yes"], "laptop")
    let home = ["--home", story.path("laptop")]
    let piped = await runKeyctl(["recovery", "rotate", "--recovery-file", story.path("new")] + home)
    #expect(piped.code == 64 && piped.err.contains("needs a confirmation"), "\(piped.err)")
    let declined = await runKeyctl(["recovery", "rotate", "--recovery-file", story.path("new")] + home, input: "n\n", terminal: true)
    #expect(declined.code == 1 && declined.err.contains("Replace the recovery code"), "\(declined.err)")
    #expect(!FileManager.default.fileExists(atPath: story.path("new")), "a new code was written")
    await #expect(try story.run(["status"], "laptop")["recoveryGeneration"] as? Int == 1)
}

/// Issue 22: on a terminal a code can be typed a word at a time, each hidden, its first
/// letters enough; and a code typed whole that does not check out can be corrected one
/// word at a time instead of typed again.
@Test func aCodeIsTypedWordByWordWithPrefixesAndOneWordIsCorrectedAlone() async throws {
    // Enter alone at the prompt: word by word, each completed from its first letters.
    let words = Array(repeating: "aban", count: 11) + ["abou"]
    let typed = await runKeyctl(["recovery", "verify"], input: "\n" + "n\n" + words.map { $0 + "\n" }.joined() + "\n", terminal: true)
    #expect(typed.code == 0, "\(typed.err)")
    #expect(typed.out.contains("Valid: a 12-word English"), "\(typed.out)")
    #expect(typed.err.contains("Word 12") && !typed.err.contains("abandon") && !typed.out.contains("abandon"), "\(typed.err)")
    // A prefix two words share, and one no word has, are asked again.
    let unclear = await runKeyctl(["recovery", "verify"], input: "\n" + "n\n" + "ab\n" + "qqq\n" + words.map { $0 + "\n" }.joined() + "\n", terminal: true)
    #expect(unclear.code == 0, "\(unclear.err)")
    #expect(unclear.err.contains("words start with those letters") && unclear.err.contains("no word of the English list starts with those letters"), "\(unclear.err)")

    // Typed whole with word 6 wrong (the checksum fails): word 6 alone is typed again.
    var phrase = Array(repeating: "abandon", count: 11) + ["about"]
    phrase[5] = "zoo"
    let corrected = await runKeyctl(["recovery", "verify"], input: phrase.joined(separator: " ") + "\n" + "y\n" + "n\n" + "6\n" + "aban\n", terminal: true)
    #expect(corrected.code == 0, "\(corrected.err)")
    #expect(corrected.err.contains("Retype which word"), "\(corrected.err)")
    #expect(!corrected.err.contains("zoo"), "a word of the code was shown")
    // A word left out: inserted where it belongs, without typing the others again.
    var short = Array(repeating: "abandon", count: 11) + ["about"]
    short.remove(at: 5)
    let inserted = await runKeyctl(["recovery", "verify"], input: short.joined(separator: " ") + "\n" + "\n" + "yes\n" + "+6\n" + "aban\n", terminal: true)
    #expect(inserted.code == 0, "\(inserted.err)")
    #expect(inserted.err.contains("+N to insert") && inserted.err.contains("word 6: abandon"), "\(inserted.err)")
    // Asked to show them, each completed word is shown.
    let shown = await runKeyctl(["recovery", "verify"], input: "\n" + "y\n" + words.map { $0 + "\n" }.joined() + "\n", terminal: true)
    #expect(shown.code == 0 && shown.err.contains("abandon"), "\(shown.err)")
}
