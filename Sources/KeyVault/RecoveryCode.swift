import KeyVaultCrypto
import KeyVaultMnemonic

/// An account's recovery code: 24 words from one of the 10 official BIP39 wordlists.
/// It opens everything the account holds, so it is shown to the person once, never
/// logged: its `description` is redacted.
///
/// What it offers an app is what a person needs: make one, read one typed back (a
/// problem is reported by word position only, never with a guess at the word), show
/// its words, and check a written copy word by word. The BIP39 seed and entropy stay
/// inside the library.
public struct RecoveryCode: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package let mnemonic: Mnemonic

    package init(_ mnemonic: Mnemonic) {
        self.mnemonic = mnemonic
    }

    /// The number of words of a recovery code.
    public static let wordCount = 24

    /// A new code of 24 random words.
    public static func generate(language: Language = .english) throws -> RecoveryCode {
        RecoveryCode(try Mnemonic.generate(wordCount: wordCount, language: language.mnemonic))
    }

    /// Reads a code as a person typed it: any case and spacing, the first four letters
    /// of a word where they are unique; the language is detected unless given.
    ///
    /// - Throws: ``Problem`` saying which word is at fault, when one is.
    public init(phrase: String, language: Language? = nil) throws {
        do {
            let mnemonic = try Mnemonic(phrase: phrase, language: language?.mnemonic)
            guard mnemonic.wordCount == Self.wordCount else { throw Problem(.wordCount, position: nil) }
            self.init(mnemonic)
        } catch let error as MnemonicError {
            throw Problem(error)
        }
    }

    /// A BIP39 phrase read with the KeyVaultMnemonic module's own checks (its
    /// candidate words for a typo, say), taken as a recovery code.
    ///
    /// - Throws: ``Problem`` `wordCount` unless it has 24 words.
    public init(bip39 mnemonic: Mnemonic) throws {
        guard mnemonic.wordCount == Self.wordCount else { throw Problem(.wordCount, position: nil) }
        self.init(mnemonic)
    }

    /// The words, in order. This is the secret in plain text: show it, never log it.
    public var words: [String] { mnemonic.words }
    /// The words joined as the list's language shows them (U+3000 for Japanese).
    public var phrase: String { mnemonic.phrase }
    public var language: Language { Language(mnemonic.language) }

    /// Whether `typed` names the word at 1-based `position` (for checking a written copy).
    public func isWord(_ typed: String, at position: Int) -> Bool { mnemonic.isWord(typed, at: position) }

    public var description: String { "RecoveryCode(\(mnemonic.wordCount) \(mnemonic.language) words, redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// The 10 official BIP39 wordlists.
    public enum Language: String, CaseIterable, Sendable {
        case english, japanese, korean, spanish
        case chineseSimplified = "chinese_simplified"
        case chineseTraditional = "chinese_traditional"
        case french, italian, czech, portuguese

        package init(_ language: MnemonicLanguage) { self = Language(rawValue: language.rawValue)! }
        package var mnemonic: MnemonicLanguage { MnemonicLanguage(rawValue: rawValue)! }
    }

    /// Why a typed code was not read: which word, by position, and never a guess at
    /// what it should be (a list of candidate words is for keyctl's own checks).
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public enum Kind: Sendable, Equatable {
            /// Not 24 words.
            case wordCount
            /// A word in none of the lists (or not in the one given), at ``position``.
            case unknownWord
            /// Every word is known, but the code's checksum does not match: a word is
            /// wrong or two are swapped.
            case checksum
        }

        public let kind: Kind
        /// The 1-based position of the word at fault, when one word is.
        public let position: Int?

        package init(_ kind: Kind, position: Int?) {
            self.kind = kind
            self.position = position
        }

        init(_ error: MnemonicError) {
            switch error.code {
            case .unknownWord: self.init(.unknownWord, position: error.position)
            case .checksum: self.init(.checksum, position: nil)
            default: self.init(.wordCount, position: nil)
            }
        }

        public var description: String {
            switch kind {
            case .wordCount: "a recovery code has \(RecoveryCode.wordCount) words"
            case .unknownWord: position.map { "word \($0) is not a word of the recovery code lists" } ?? "a word is not in the recovery code lists"
            case .checksum: "the words do not add up: a word is wrong, or two are swapped"
            }
        }
    }
}
