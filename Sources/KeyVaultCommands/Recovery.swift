import ArgumentParser
import Foundation
import KeyVault
import KeyVaultMnemonic

struct Recovery: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recovery",
        abstract: "Make and check recovery codes (24 words that can rebuild your keys).",
        discussion: """
            A recovery code is a list of words from one of the 10 official BIP39
            wordlists. Anyone who holds it can open your vault, and nobody, not even
            the server, can give it back to you if it is lost: write it on paper.

            The code is read from standard input, never from the command line, so it
            does not end up in your shell history or the process list.
            """,
        subcommands: [Generate.self, Verify.self, Quiz.self, Rotate.self])
}

extension MnemonicLanguage: ExpressibleByArgument {
    public init?(argument: String) { self.init(name: argument) }
    public static var allValueStrings: [String] { allCases.map(\.rawValue) }
}

// MARK: generate

extension Recovery {
    struct Generate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a fresh recovery code.",
            discussion: """
                On a terminal the words are shown numbered, for copying onto paper. When
                standard output is a pipe only the phrase is printed, so that

                  keyctl recovery generate | keyctl recovery verify

                works. With --json: {"language", "words", "mnemonic"}.
                """)

        @Option(name: .long, help: "How many words: 12, 15, 18, 21 or 24.")
        var words = 24

        @Option(name: .long, help: "Wordlist: english, japanese, korean, spanish, chinese_simplified, chinese_traditional, french, italian, czech or portuguese.")
        var language: MnemonicLanguage = .english

        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard Mnemonic.allowedWordCounts.contains(words) else {
                throw ValidationError("--words must be 12, 15, 18, 21 or 24 (24 is the recovery-code strength, 256 bits)")
            }
        }

        func run() async throws {
            let console = KeyctlMain.console
            let code = try Mnemonic.generate(wordCount: words, language: language)
            if output.json {
                console.write(jsonLine(["language": language.rawValue, "words": words, "mnemonic": code.phrase]))
            } else if console.outputIsTerminal {
                console.write("Your recovery code (\(words) words, \(language.displayName)):\n\n")
                console.write(Recovery.numberedGrid(code.words))
                console.write("""

                    Write these words on paper, in order, and keep it somewhere safe.
                    Anyone who has them can open your vault, and nobody can give them back to you.
                    Check your copy with: keyctl recovery quiz

                    """)
            } else {
                console.write(code.phrase + "\n")
            }
        }
    }

    /// Words in rows of four, numbered, read left to right (so a copied block keeps the order).
    static func numberedGrid(_ words: [String]) -> String {
        let width = (words.map(\.count).max() ?? 0) + 2
        var lines = [String]()
        for row in stride(from: 0, to: words.count, by: 4) {
            lines.append(words[row..<min(row + 4, words.count)].enumerated().map { offset, word in
                let number = String(row + offset + 1)
                return String(repeating: " ", count: 4 - number.count) + number + ". " + word
                    + String(repeating: " ", count: max(0, width - word.count))
            }.joined().replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

// MARK: verify

extension Recovery {
    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check a recovery code read from standard input.",
            discussion: """
                Reads the code from standard input (a hidden prompt on a terminal). Case,
                extra spaces, line breaks and numbering such as "1." are ignored, and the
                first 4 letters of each word are enough in English, Italian, Czech and
                Portuguese. The language is detected unless --language is given.

                Exits 0 when the code is valid and 1 when it is not, with the position of
                a mistyped word and the words that would fix it.

                --json prints one object: valid, language, words, and when asked entropy
                and seed (lowercase hex); when invalid, error {code, message, position,
                suggestions: [{position, word}]}. Codes: word_count, unknown_word, checksum.
                """)

        @Flag(name: .long, help: "Also print the code's entropy (secret!) as hex.")
        var showEntropy = false

        @Flag(name: .long, help: "Also print the 64-byte BIP39 seed (secret!) as hex.")
        var seed = false

        @Option(name: .long, help: ArgumentHelp("Read the BIP39 passphrase for --seed from this file (one trailing newline is removed).", valueName: "file"))
        var passphraseFile: String?

        @Option(name: .long, help: "Only accept this wordlist (default: detect).")
        var language: MnemonicLanguage?

        @OptionGroup var output: OutputOptions

        func validate() throws {
            if passphraseFile != nil, !seed {
                throw ValidationError("--passphrase-file only matters with --seed")
            }
        }

        func run() async throws {
            let console = KeyctlMain.console
            var passphrase = ""
            if let passphraseFile { passphrase = try Recovery.readPassphrase(at: passphraseFile) }
            var phrase = try Recovery.readPhrase(from: console, language: language)
            defer { SecureBytes.wipe(&phrase) }
            let code: Mnemonic
            do {
                code = try Mnemonic(utf8: phrase, language: language)
            } catch let error as MnemonicError {
                if output.json {
                    var body: [String: Any] = [
                        "code": error.code.rawValue, "message": error.message,
                        "suggestions": error.suggestions.map { ["position": $0.position, "word": $0.word] },
                    ]
                    if let position = error.position { body["position"] = position }
                    if !error.unknownPositions.isEmpty { body["unknownPositions"] = error.unknownPositions }
                    var object: [String: Any] = ["valid": false, "words": error.wordCount, "error": body]
                    if let language = error.language { object["language"] = language.rawValue }
                    console.write(jsonLine(object))
                }
                console.writeError("\(KeyctlMain.invokedName): error: \(error.message)\n")
                if let hint = Recovery.hint(for: error) { console.writeError("\(KeyctlMain.invokedName): hint: \(hint)\n") }
                throw ExitCode(KeyctlError.ExitCode.rejected.rawValue)
            }
            let entropy = showEntropy ? Recovery.hex(code.entropy) : nil
            let seedHex = seed ? Recovery.hex(try code.seed(passphrase: passphrase)) : nil
            if output.json {
                var object: [String: Any] = ["valid": true, "language": code.language.rawValue, "words": code.wordCount]
                if let entropy { object["entropy"] = entropy }
                if let seedHex { object["seed"] = seedHex }
                console.write(jsonLine(object))
            } else {
                console.write("Valid: a \(code.wordCount)-word \(code.language.displayName) recovery code.\n")
                if let entropy { console.write("entropy: \(entropy)\n") }
                if let seedHex { console.write("seed: \(seedHex)\n") }
            }
        }
    }

    /// Lowercase hex of secret bytes the person asked to see (--show-entropy, --seed).
    static func hex(_ bytes: SecureBytes) -> String {
        var plain = bytes.unprotectedCopy()
        defer { SecureBytes.wipe(&plain) }
        return plain.map { String(format: "%02x", $0) }.joined()
    }

    static func hint(for error: MnemonicError) -> String? {
        switch error.code {
        case .unknownWord:
            let words = error.suggestions.map(\.word)
            return words.isEmpty ? nil : "did you mean \(words.joined(separator: ", "))?"
        case .checksum:
            return Self.checksumHint
        case .wordCount:
            return "type every word of the code, in order, separated by spaces"
        default:
            return nil
        }
    }

    /// A checksum failure names no position: every word is a list word, and in a code of
    /// 12 to 24 words a change at almost any position can make the checksum match, so
    /// the positions where one would are no clue to where the wrong word is (a person
    /// told "word 2, 3, 4" looks there, and the slip at word 6 stays).
    static let checksumHint = "every word is a list word, so the code alone cannot tell which one is wrong: compare it word by word with your written copy, and the order of the words"

    /// Advice that names positions, never a word: for commands that use a code
    /// (`device enroll`), where candidate words would print likely words of a secret.
    static func positionHint(for error: MnemonicError) -> String {
        func list(_ positions: [Int]) -> String { positions.map(String.init).joined(separator: ", ") }
        switch error.code {
        case .unknownWord:
            let positions = error.unknownPositions.isEmpty ? error.position.map { [$0] } ?? [] : error.unknownPositions
            return "compare word\(positions.count == 1 ? "" : "s") \(list(positions)) with your written copy and type the code again; nothing was changed"
        case .checksum:
            return checksumHint
        case .wordCount:
            return "type every word of the code, in order, separated by spaces"
        default:
            return "compare the code with your written copy"
        }
    }

    /// The phrase from standard input: a hidden prompt on a terminal, else all of it.
    /// Numbering tokens ("1.", "12)") from the generate grid are dropped.
    /// A code from standard input, or on a terminal from a hidden prompt: Enter alone
    /// there types it a word at a time (``WordEntry``), and a code typed whole that does
    /// not check out can be corrected a word at a time.
    static func readPhrase(from console: any Console, prompt: String = "Recovery code (input hidden; Enter alone to type it word by word): ",
                           words count: Int? = nil, language: MnemonicLanguage? = nil) throws -> [UInt8] {
        guard console.inputIsTerminal else {
            var raw = try console.readToEnd()
            defer { SecureBytes.wipe(&raw) }
            return dropNumbering(raw)
        }
        // The end of input is no code (and no word-by-word entry).
        guard var raw = try console.readSecretLine(prompt: prompt) else { return [] }
        defer { SecureBytes.wipe(&raw) }
        var entry = WordEntry(console: console, count: count, language: language)
        if raw.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) {
            return try entry.read()
        }
        let phrase = dropNumbering(raw)
        do {
            _ = try Mnemonic(utf8: phrase, language: language)
            return phrase
        } catch let error as MnemonicError {
            console.writeError("That is not a valid code: \(error.message)\n")
            console.writeError("Correct it a word at a time? [Y/n] ")
            let answer = String(decoding: try console.readLine() ?? Array("n".utf8), as: UTF8.self).lowercased()
            guard answer.isEmpty || answer.hasPrefix("y") else { return phrase }
            return try entry.read(correcting: phrase)
        }
    }

    static func dropNumbering(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count)
        var token = [UInt8]()
        func flush() {
            let digits = token.prefix { (48...57).contains($0) }.count
            let isNumber = digits > 0 && (digits == token.count
                || (digits == token.count - 1 && (token.last == UInt8(ascii: ".") || token.last == UInt8(ascii: ")"))))
            if !isNumber { out += token }
            SecureBytes.wipe(&token)
            token.removeAll(keepingCapacity: true)
        }
        for byte in bytes {
            if byte == 0x20 || (0x09...0x0D).contains(byte) {
                flush()
                out.append(byte)
            } else {
                token.append(byte)
            }
        }
        flush()
        return out
    }

    static func readPassphrase(at path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw KeyctlError(.io, "cannot read the passphrase file \(path)", hint: "check the path and its permissions")
        }
        var bytes = [UInt8](data)
        defer { SecureBytes.wipe(&bytes) }
        if bytes.last == 10 { bytes.removeLast() }
        if bytes.last == 13 { bytes.removeLast() }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw KeyctlError(.invalidInput, "the passphrase file \(path) is not UTF-8 text")
        }
        return text
    }
}

// MARK: quiz

extension Recovery {
    struct Quiz: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Prove a written-down code is complete by answering a few of its words.",
            discussion: """
                Reads the code (a hidden prompt on a terminal, else the first line of
                standard input), then asks for the words at a few random positions (each
                answer on its own line). Nothing is stored or sent anywhere.
                Exits 0 when every answer matches, 1 otherwise.
                """)

        @Option(name: .long, help: "How many words to ask for (1 to the code's length).")
        var count = 3

        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard (1...24).contains(count) else { throw ValidationError("--count must be between 1 and 24") }
        }

        func run() async throws {
            let console = KeyctlMain.console
            var raw = try console.readSecretLine(prompt: "Recovery code to check (input hidden): ") ?? []
            defer { SecureBytes.wipe(&raw) }
            let code: Mnemonic
            do {
                code = try Mnemonic(utf8: Recovery.dropNumbering(raw))
            } catch let error as MnemonicError {
                throw KeyctlError(.invalidRecoveryCode, "that is not a valid recovery code: \(error.message)",
                                  hint: "run `keyctl recovery verify` to find the mistyped word", exitCode: .rejected)
            }
            var positions = Array(1...code.wordCount)
            var rng = SystemRandomNumberGenerator()
            positions.shuffle(using: &rng)
            let asked = positions.prefix(min(count, code.wordCount)).sorted()
            var wrong = [Int]()
            for position in asked {
                var answer = try console.readSecretLine(prompt: "Word #\(position): ") ?? []
                defer { SecureBytes.wipe(&answer) }
                if !code.isWord(String(decoding: answer, as: UTF8.self), at: position) { wrong.append(position) }
            }
            if output.json {
                console.write(jsonLine(["passed": wrong.isEmpty, "asked": asked, "wrong": wrong]))
            } else if wrong.isEmpty {
                console.write("All \(asked.count) words match. Your copy checks out.\n")
            }
            guard wrong.isEmpty else {
                if !output.json {
                    console.writeError("\(KeyctlMain.invokedName): error: word\(wrong.count > 1 ? "s" : "") \(wrong.map(String.init).joined(separator: ", ")) did not match\n")
                    console.writeError("\(KeyctlMain.invokedName): hint: check your written copy against the code and run the quiz again\n")
                }
                throw ExitCode(KeyctlError.ExitCode.rejected.rawValue)
            }
        }
    }
}
