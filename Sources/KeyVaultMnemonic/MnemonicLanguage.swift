/// The 10 official BIP39 wordlists. The raw value is the list's file name
/// without `.txt` (`chinese_simplified`), as JSON output names it.
public enum MnemonicLanguage: String, CaseIterable, Sendable, Codable, CustomStringConvertible {
    // Order matters: when a phrase is valid in two lists (English and French share
    // 100 words; the Chinese lists share most characters) the first one wins.
    case english, japanese, korean, spanish
    case chineseSimplified = "chinese_simplified"
    case chineseTraditional = "chinese_traditional"
    case french, italian, czech, portuguese

    /// What people read: "English", "Chinese (simplified)", …
    public var displayName: String {
        switch self {
        case .english: "English"
        case .japanese: "Japanese"
        case .korean: "Korean"
        case .spanish: "Spanish"
        case .chineseSimplified: "Chinese (simplified)"
        case .chineseTraditional: "Chinese (traditional)"
        case .french: "French"
        case .italian: "Italian"
        case .czech: "Czech"
        case .portuguese: "Portuguese"
        }
    }

    public var description: String { rawValue }

    /// Between words when shown: U+3000 (ideographic space) for Japanese, as the
    /// BIP's wordlist notes ask, otherwise U+0020.
    public var wordSeparator: String { self == .japanese ? "\u{3000}" : " " }

    /// Accepts the file name (`chinese_simplified`), with `-` for `_`, any case,
    /// or a common language tag (`en`, `ja`, `ko`, `es`, `zh-hans`, `zh-hant`, `fr`, `it`, `cs`, `pt`).
    public init?(name: String) {
        let key = name.lowercased().replacingOccurrences(of: "-", with: "_")
        if let exact = MnemonicLanguage(rawValue: key) {
            self = exact
            return
        }
        let tags: [String: MnemonicLanguage] = [
            "en": .english, "ja": .japanese, "ko": .korean, "es": .spanish,
            "zh_hans": .chineseSimplified, "zh_cn": .chineseSimplified, "zh": .chineseSimplified,
            "zh_hant": .chineseTraditional, "zh_tw": .chineseTraditional,
            "fr": .french, "it": .italian, "cs": .czech, "pt": .portuguese,
        ]
        guard let language = tags[key] else { return nil }
        self = language
    }

    /// The built-in list, in order: index i is the word for the 11-bit value i.
    public var words: [String] { WordTable.table(for: self).words }
}
