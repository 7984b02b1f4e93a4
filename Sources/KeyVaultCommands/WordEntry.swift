import Foundation
import KeyVault
import KeyVaultMnemonic

/// A recovery code typed a word at a time on a terminal (issue 22): each word hidden
/// (shown once completed only when the person asks), its first letters enough when
/// only one word of the list starts with them, and a code that does not check out
/// corrected one word at a time instead of typed again whole.
///
/// The words are held as the word list's own strings (Swift `String`s, which cannot be
/// wiped: SECURITY.md, "Known limits"); the phrase handed back is bytes the caller
/// wipes. What is said about a word never quotes what was typed.
struct WordEntry {
    let console: any Console
    /// The number of words, when the command knows it (24 for a recovery code); nil
    /// lets the person end with Enter after 12, 15, 18, 21 or 24 words.
    let count: Int?
    var language: MnemonicLanguage?
    var words: [String] = []
    private(set) var show = false

    init(console: any Console, count: Int?, language: MnemonicLanguage?) {
        self.console = console
        self.count = count
        self.language = language
    }

    /// The phrase, word by word from the start, or from `typed` (a whole phrase that
    /// did not check out) with words retyped, or a missing one inserted, by number. What
    /// it holds when the person stops or input ends (the caller reports why it is not a code).
    mutating func read(correcting typed: [UInt8]? = nil) throws -> [UInt8] {
        show = try ask("Show each word once it is completed? [y/N] ").hasPrefix("y")
        if let typed {
            words = String(decoding: Recovery.dropNumbering(typed), as: UTF8.self).split(whereSeparator: \.isWhitespace).map(String.init)
            if language == nil { language = MnemonicLanguage.allCases.first { Set($0.words).isSuperset(of: words) } }
        } else {
            while count.map({ words.count < $0 }) ?? true {
                let position = words.count + 1
                let of = count.map { " of \($0)" } ?? (Self.validCounts.contains(words.count) ? ", or Enter if that was the last" : "")
                guard let word = try word(position, prompt: "Word \(position)\(of) (hidden; its first letters are enough): ",
                                          endsOnEmpty: count == nil && Self.validCounts.contains(words.count)) else { break }
                words.append(word)
            }
        }
        for _ in 0..<64 {
            var phrase = Array(words.joined(separator: language?.wordSeparator ?? " ").utf8)
            do {
                _ = try Mnemonic(utf8: phrase, language: language)
                return phrase
            } catch let error as MnemonicError {
                console.writeError("Not a valid code yet: \(error.message)\n")
                SecureBytes.wipe(&phrase)
            }
            let missing = count.map { words.count < $0 } ?? true
            let answer = try ask("Retype which word (1-\(words.count))\(missing ? ", or +N to insert a missing word at N" : ""), or Enter to stop: ")
            let inserting = answer.hasPrefix("+")
            guard let index = Int(inserting ? String(answer.dropFirst()) : answer),
                  inserting ? (1...words.count + 1).contains(index) : words.indices.contains(index - 1) else {
                if answer.isEmpty { break }
                continue
            }
            guard let word = try word(index, prompt: "Word \(index) (hidden): ", endsOnEmpty: false) else { break }
            if inserting { words.insert(word, at: index - 1) } else { words[index - 1] = word }
        }
        return Array(words.joined(separator: language?.wordSeparator ?? " ").utf8)
    }

    static let validCounts: Set<Int> = [12, 15, 18, 21, 24]

    /// One word, asked until its letters name exactly one word of the list; nil at the
    /// end of input (or on Enter, when `endsOnEmpty`).
    private mutating func word(_ position: Int, prompt: String, endsOnEmpty: Bool) throws -> String? {
        for _ in 0..<16 {
            guard var line = try console.readSecretLine(prompt: prompt) else { return nil }
            defer { SecureBytes.wipe(&line) }
            let typed = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespaces)
                .lowercased().decomposedStringWithCompatibilityMapping
            if typed.isEmpty {
                if endsOnEmpty { return nil }
                continue
            }
            let languages = language.map { [$0] } ?? MnemonicLanguage.allCases
            var found: (MnemonicLanguage, [String])?
            for candidate in languages {
                let list = candidate.words
                let matches = list.filter { $0.decomposedStringWithCompatibilityMapping == typed }.isEmpty
                    ? list.filter { $0.decomposedStringWithCompatibilityMapping.hasPrefix(typed) }
                    : list.filter { $0.decomposedStringWithCompatibilityMapping == typed }
                if !matches.isEmpty { found = (candidate, matches); break }
            }
            guard let (list, matches) = found else {
                console.writeError("  no word of the \((language ?? .english).displayName) list starts with those letters; try again\n")
                continue
            }
            guard matches.count == 1 else {
                console.writeError("  \(matches.count) words start with those letters: type more of it\n")
                continue
            }
            language = list
            console.writeError(show ? "  word \(position): \(matches[0])\n" : "  word \(position): ok\n")
            return matches[0]
        }
        return nil
    }

    /// A visible answer to a question, lowercased ("" at the end of input).
    private func ask(_ question: String) throws -> String {
        console.writeError(question)
        return String(decoding: try console.readLine() ?? [], as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercased()
    }
}
