/// Why a recovery code was refused, with what would fix it.
///
/// Match on ``code``. ``message`` never repeats what was typed; ``suggestions``
/// are list words a person may have meant, so show them only to that person.
public struct MnemonicError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Not 12, 15, 18, 21 or 24 words.
        public static let wordCount = Code(rawValue: "word_count")
        /// A word that is in no list (or not in the requested one).
        public static let unknownWord = Code(rawValue: "unknown_word")
        /// Every word is known but the checksum does not match: a word is wrong or swapped.
        public static let checksum = Code(rawValue: "checksum")
        /// Entropy of a length BIP39 does not define (16, 20, 24, 28 or 32 bytes).
        public static let entropyLength = Code(rawValue: "entropy_length")
    }

    /// A word that would fix the code, at a 1-based position.
    public struct Suggestion: Sendable, Equatable, Codable, CustomStringConvertible {
        public let position: Int
        public let word: String
        public var description: String { "word \(position): \(word)" }
    }

    public let code: Code
    public let message: String
    /// The 1-based position of the word at fault, when one word is known to be
    /// (an unknown word; never for a checksum failure, which locates nothing).
    public let position: Int?
    /// Closest valid words (unknown word), or replacements that make the checksum
    /// valid ranked by closeness to what was typed (checksum).
    public let suggestions: [Suggestion]
    /// Every 1-based position holding an unknown word.
    public let unknownPositions: [Int]
    /// The list the code appears to be in, when one could be told.
    public let language: MnemonicLanguage?
    /// How many words were read.
    public let wordCount: Int

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

    public var description: String { message }
}
