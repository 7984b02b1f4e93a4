import Foundation
import Testing
@testable import KeyVaultCommands

/// A person at a terminal: reads the recovery code off the screen, then answers each
/// "word #N" prompt with `answer(N, attempt, word)`. Everything shown is kept in
/// one transcript, in order, to check what was on screen when.
final class TerminalPerson: Console, @unchecked Sendable {
    let inputIsTerminal = true, outputIsTerminal = true, errorIsTerminal = true
    private(set) var transcript = ""
    private(set) var shownWords: [Int: String] = [:]
    private var attempts: [Int: Int] = [:]
    private let answer: (_ position: Int, _ attempt: Int, _ word: String) -> String

    init(answer: @escaping (_ position: Int, _ attempt: Int, _ word: String) -> String) { self.answer = answer }

    func readToEnd() throws -> [UInt8] { [] }
    func readLine() throws -> [UInt8]? { nil }
    func readSecretLine(prompt: String) throws -> [UInt8]? {
        transcript += prompt
        guard let range = prompt.range(of: #"word #\d+"#, options: .regularExpression),
              let position = Int(prompt[range].dropFirst("word #".count)) else { return [] }  // "press Enter"
        attempts[position, default: 0] += 1
        return Array(answer(position, attempts[position]!, shownWords[position] ?? "").utf8)
    }
    func write(_ text: String) {
        transcript += text
        // The numbered grid: "   1. word     2. word …"
        for match in text.matches(of: #/(\d+)\. (\S+)/#) { shownWords[Int(match.1)!] = String(match.2) }
    }
    func writeError(_ text: String) { transcript += text }
}

private func wrong(_ word: String) -> String { word == "zoo" ? "abandon" : "zoo" }

@Test(.timeLimit(.minutes(10)))
func aMistypedWordOfTheNewCodeCanBeTypedAgainAfterTheWordsLeaveTheScreen() async throws {
    let story = try await Story("copy-check")
    let home = story.path("laptop")
    let person = TerminalPerson { _, attempt, word in attempt == 1 ? wrong(word) : word.uppercased() }
    let code = await KeyctlMain.run(["init", "--server", story.url, "--name", "laptop", "--home", home, "--kdf", "interactive"],
                                    console: person)
    #expect(code == 0, "\(person.transcript)")
    #expect(person.shownWords.count == 24)
    // The words were shown, then cleared (with the scrollback) before the first question.
    let transcript = person.transcript
    let grid = try #require(transcript.range(of: "24. "))
    let clear = try #require(transcript.range(of: WrittenCopyCheck.clearScreen))
    let firstQuestion = try #require(transcript.range(of: "word #"))
    #expect(grid.upperBound <= clear.lowerBound && clear.upperBound <= firstQuestion.lowerBound)
    #expect(transcript.components(separatedBy: "2 attempts left").count == 4, "each of the 3 words was mistyped once: \(transcript)")
    #expect(transcript.contains("Account "))
    #expect(FileManager.default.fileExists(atPath: home + "/device.json"))
    #expect(await story.server.stop() == 0)
}

@Test(.timeLimit(.minutes(10)))
func threeWrongAnswersFailTheCheckAndMakeNothing() async throws {
    let story = try await Story("copy-check-fails")
    let home = story.path("laptop"), paper = story.path("paper")
    // On a terminal: the code on screen, then three wrong answers to the first word asked.
    let person = TerminalPerson { _, _, word in wrong(word) }
    let onScreen = await KeyctlMain.run(["init", "--server", story.url, "--name", "laptop", "--home", home, "--kdf", "interactive"],
                                        console: person)
    #expect(onScreen == KeyctlError.ExitCode.rejected.rawValue, "\(person.transcript)")
    #expect(person.transcript.contains("2 attempts left") && person.transcript.contains("1 attempt left"))
    #expect(person.transcript.contains("does not match; nothing was changed"))
    // With the code in a file: the file goes too, as the code was never set.
    let filed = TerminalPerson { _, _, word in wrong(word) }
    let toFile = await KeyctlMain.run(["init", "--server", story.url, "--name", "laptop", "--home", home, "--recovery-file", paper],
                                      console: filed)
    #expect(toFile == KeyctlError.ExitCode.rejected.rawValue)
    #expect(!filed.transcript.contains(WrittenCopyCheck.clearScreen), "nothing was shown, so nothing is cleared")
    // Input that ends (Ctrl-D) ends the check at once: no attempts are counted down.
    let closed = BufferConsole(input: "", terminal: true)
    #expect(await KeyctlMain.run(["init", "--server", story.url, "--name", "laptop", "--home", home], console: closed) == 1)
    #expect(!closed.errorOutput.contains("attempt"), "\(closed.errorOutput)")
    // Piped answers, as scripts give them: one line per word, and the first wrong one fails.
    let piped = BufferConsole(input: "xyzzy\nxyzzy\nxyzzy\n")
    #expect(await KeyctlMain.run(["init", "--server", story.url, "--name", "laptop", "--home", home], console: piped) == 1)
    #expect(!piped.errorOutput.contains("attempt") && !piped.output.contains(WrittenCopyCheck.clearScreen), "\(piped.errorOutput)")
    #expect(!FileManager.default.fileExists(atPath: home) && !FileManager.default.fileExists(atPath: paper))
    #expect(await story.server.stop() == 0)
}
