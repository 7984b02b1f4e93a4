/// Why a recovery code was refused, with what would fix it.
///
/// Match on ``code``. ``message`` never repeats what was typed; ``suggestions``
/// are list words a person may have meant, so show them only to that person.
package struct MnemonicError: Error, Sendable, Equatable, CustomStringConvertible {
    package struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        /// Not 12, 15, 18, 21 or 24 words.
        package static let wordCount = Code(rawValue: "word_count")
        /// A word that is in no list (or not in the requested one).
        package static let unknownWord = Code(rawValue: "unknown_word")
        /// Every word is known but the checksum does not match: a word is wrong or swapped.
        package static let checksum = Code(rawValue: "checksum")
        /// Entropy of a length BIP39 does not define (16, 20, 24, 28 or 32 bytes).
        package static let entropyLength = Code(rawValue: "entropy_length")
    }

    /// A word that would fix the code, at a 1-based position.
    package struct Suggestion: Sendable, Equatable, Codable, CustomStringConvertible {
        package let position: Int
        package let word: String
        package var description: String { "word \(position): \(word)" }
    }

    package let code: Code
    package let message: String
    /// The 1-based position of the word at fault, when one word is.
    package let position: Int?
    /// Closest valid words (unknown word), or replacements that make the checksum
    /// valid ranked by closeness to what was typed (checksum).
    package let suggestions: [Suggestion]
    /// Every 1-based position holding an unknown word.
    package let unknownPositions: [Int]
    /// The list the code appears to be in, when one could be told.
    package let language: MnemonicLanguage?
    /// How many words were read.
    package let wordCount: Int

    init(_ code: Code, _ message: String, position: Int? = nil, suggestions: [Suggestion] = [],
         unknownPositions: [Int] = [], language: MnemonicLanguage? = nil, wordCount: Int = 0) {
        self.code = code
        self.message = message
        self.position = position
        self.suggestions = suggestions
        self.unknownPositions = unknownPositions
        self.language = language
        self.wordCount = wordCount
    }

    package var description: String { message }
}
