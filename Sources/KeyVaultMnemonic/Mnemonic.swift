import Foundation
import KeyVaultCrypto

/// A BIP39 mnemonic: entropy shown as words of one of the 10 official lists.
///
/// The entropy lives in guarded memory. Printing a value shows only its shape.
///
/// This module is public as BIP39 tools (any word count, candidate words for a
/// typo, the entropy and the seed: `keyctl recovery generate` and `verify`). An
/// account's recovery code is KeyVault's `RecoveryCode`, which shows none of that.
public struct Mnemonic: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Word counts BIP39 defines; 24 (256 bits) is KeyVault's recovery code.
    public static let allowedWordCounts = [12, 15, 18, 21, 24]

    public let language: MnemonicLanguage
    /// 16 to 32 bytes.
    public let entropy: SecureBytes
    private let indices: [UInt16]

    public var wordCount: Int { indices.count }

    /// Words for given entropy.
    ///
    /// - Throws: `MnemonicError` `entropy_length` unless the entropy is 16, 20, 24, 28 or 32 bytes.
    package init(entropy: SecureBytes, language: MnemonicLanguage = .english) throws {
        guard [16, 20, 24, 28, 32].contains(entropy.count) else {
            throw MnemonicError(.entropyLength, "BIP39 entropy is 16, 20, 24, 28 or 32 bytes, not \(entropy.count)")
        }
        self.entropy = entropy
        self.language = language
        indices = entropy.withUnsafeBytes { MnemonicCodec.indices(forEntropy: $0) }
    }

    /// A fresh code from the system CSPRNG.
    ///
    /// - Parameter wordCount: 12, 15, 18, 21 or 24.
    public static func generate(wordCount: Int = 24, language: MnemonicLanguage = .english) throws -> Mnemonic {
        guard allowedWordCounts.contains(wordCount) else {
            throw MnemonicError(.wordCount, "a recovery code has 12, 15, 18, 21 or 24 words, not \(wordCount)", wordCount: wordCount)
        }
        return try Mnemonic(entropy: SecureBytes(randomCount: wordCount * 4 / 3), language: language)
    }

    /// Reads a typed phrase: NFKD, any whitespace, any case, unique 4-character
    /// prefixes, and the language detected unless given.
    ///
    /// - Throws: `MnemonicError` (`word_count`, `unknown_word`, `checksum`) with suggestions.
    public init(phrase: String, language: MnemonicLanguage? = nil) throws {
        var bytes = Array(phrase.utf8)
        defer { secureWipe(&bytes) }
        try self.init(utf8: bytes, language: language)
    }

    /// Reads a typed phrase from UTF-8 bytes (for example standard input).
    public init(utf8 phrase: some RawBytes, language: MnemonicLanguage? = nil) throws {
        let parsed = try phrase.withUnsafeBytes { try MnemonicCodec.parse($0, language: language) }
        self.language = parsed.language
        self.indices = parsed.indices
        self.entropy = parsed.entropy
    }

    /// Whether `phrase` is a valid code, and in which list; no suggestions are
    /// computed and nothing is allocated for ASCII input. For hot paths.
    package static func validate(utf8 phrase: UnsafeRawBufferPointer) -> MnemonicLanguage? {
        MnemonicCodec.quickCheck(phrase)
    }

    /// Whether `typed` names the word at a 1-based `position`, by the same rules as
    /// parsing (case, NFKD, unique 4-letter prefixes). For quizzes.
    public func isWord(_ typed: String, at position: Int) -> Bool {
        guard (1...wordCount).contains(position) else { return false }
        let table = WordTable.table(for: language)
        var bytes = Array(typed.utf8)
        defer { secureWipe(&bytes) }
        let index: Int? = bytes.withUnsafeBytes { raw in
            MnemonicCodec.withTokens(raw) { text, tokens, count in
                count == 1 ? table.index(of: tokens[0], in: text) : nil
            }
        }
        return index == Int(indices[position - 1])
    }

    /// The words, in order.
    public var words: [String] {
        let table = WordTable.table(for: language)
        return indices.map { table.words[Int($0)] }
    }

    /// The words joined the way the list's language shows them (U+3000 for Japanese).
    ///
    /// - Important: this is the secret in plain text. Show it, never log it.
    public var phrase: String { words.joined(separator: language.wordSeparator) }

    /// The 64-byte BIP39 seed: PBKDF2-HMAC-SHA512 over the NFKD sentence (words
    /// joined by U+0020), salt "mnemonic" + NFKD(passphrase), 2048 rounds.
    public func seed(passphrase: String = "") throws -> SecureBytes {
        var sentence = Array(words.joined(separator: " ").utf8)
        defer { secureWipe(&sentence) }
        var salt = Array(("mnemonic" + NFKD.normalize(passphrase)).utf8)
        defer { secureWipe(&salt) }
        return try PBKDF2SHA512.deriveKey(from: sentence, salt: salt, rounds: 2048, outputByteCount: 64)
    }

    public var description: String { "Mnemonic(\(wordCount) \(language) words, redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["language": language, "wordCount": wordCount], displayStyle: .struct)
    }
}
