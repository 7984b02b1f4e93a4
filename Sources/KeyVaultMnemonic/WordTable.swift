import Foundation

/// One wordlist, indexed for lookups on normalised UTF-8 bytes: an exact table
/// and a table of 4-character prefixes, both open addressing over one contiguous
/// byte store. Built once per process from the compiled-in lists.
final class WordTable: @unchecked Sendable {  // immutable after init
    static let all: [WordTable] = MnemonicLanguage.allCases.map(WordTable.init)

    static func table(for language: MnemonicLanguage) -> WordTable {
        all[MnemonicLanguage.allCases.firstIndex(of: language)!]
    }

    /// Shortest typed prefix (in characters) accepted for a word.
    static let prefixCharacters = 4
    private static let slotCount = 8192  // power of two, four times the word count: ~1.2 probes per hit
    private static let ambiguous: UInt16 = .max

    let language: MnemonicLanguage
    let words: [String]
    /// Every word's NFKD UTF-8 bytes, back to back; word i is store[offsets[i]..<offsets[i+1]].
    private let store: [UInt8]
    private let offsets: [Int]
    /// Exact lookup, the hot path: each word's first 16 bytes zero-padded as two
    /// integers, its length, and an open-addressing table of word index + 1 (0 empty).
    /// Raw buffers, allocated once per process and never freed, avoid bounds checks
    /// and reference counting in the inner loop.
    /// 16 bytes, so the 2048 entries fit in 32 KiB. No length: words hold no NUL
    /// bytes, so for a token under 16 bytes equal zero-padded keys mean equal words;
    /// longer tokens are checked against `offsets` and the store.
    private struct Entry {
        var low: UInt64
        var high: UInt64
    }
    private let entries: UnsafeMutablePointer<Entry>
    private let slots: UnsafeMutablePointer<UInt16>
    /// Prefix lookup by the first 4 characters: the slot's key word, and the
    /// word index + 1 (or `ambiguous` when several words share that prefix).
    private let prefixKeys: [UInt16]
    private let prefixValues: [UInt16]
    private let prefixByteCounts: [Int]
    /// Every word with its combining marks removed, as scalars (for suggestions).
    let foldedWords: [[Unicode.Scalar]]
    let scalarWords: [[Unicode.Scalar]]

    private init(_ language: MnemonicLanguage) {
        self.language = language
        // One literal per list, words between single spaces (Scripts/generate-wordlists.py):
        // split here, once per process, rather than 20,000 lines of generated source.
        let text = language.embeddedWordlist
        let fields = text.utf8.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true)
        precondition(fields.count == 2048, "the \(language) list must have 2048 words")
        var store = [UInt8]()
        var offsets = [0]
        var words = [String]()
        for field in fields {
            store += field
            offsets.append(store.count)
            words.append(String(decoding: field, as: UTF8.self))
        }
        self.store = store
        self.offsets = offsets
        self.words = words
        scalarWords = words.map { Array($0.unicodeScalars) }
        foldedWords = scalarWords.map(WordTable.fold)

        entries = .allocate(capacity: 2048)
        slots = .allocate(capacity: Self.slotCount)
        slots.initialize(repeating: 0, count: Self.slotCount)
        var prefixKeys = [UInt16](repeating: 0, count: Self.slotCount)
        var prefixValues = [UInt16](repeating: 0, count: Self.slotCount)
        var prefixByteCounts = [Int](repeating: 0, count: 2048)
        for index in 0..<2048 {
            let word = Array(store[offsets[index]..<offsets[index + 1]])
            let key = word.withUnsafeBytes(Self.key)
            (entries + index).initialize(to: Entry(low: key.low, high: key.high))
            var slot = Self.slot(key, length: word.count)
            while slots[slot] != 0 { slot = (slot + 1) & (Self.slotCount - 1) }
            slots[slot] = UInt16(index + 1)

            let prefixCount = Self.byteCount(ofFirst: Self.prefixCharacters, in: word[...])
            prefixByteCounts[index] = prefixCount
            guard prefixCount > 0 else { continue }  // shorter than 4 characters
            let prefix = word[..<prefixCount]
            slot = Int(Self.hash(prefix)) & (Self.slotCount - 1)
            while prefixValues[slot] != 0 {
                let other = Int(prefixKeys[slot])
                if prefixByteCounts[other] == prefixCount,
                   store[offsets[other]..<offsets[other] + prefixCount].elementsEqual(prefix) {
                    prefixValues[slot] = Self.ambiguous
                    break
                }
                slot = (slot + 1) & (Self.slotCount - 1)
            }
            if prefixValues[slot] == 0 {
                prefixKeys[slot] = UInt16(index)
                prefixValues[slot] = UInt16(index + 1)
            }
        }
        self.prefixKeys = prefixKeys
        self.prefixValues = prefixValues
        self.prefixByteCounts = prefixByteCounts
    }

    /// The index of the word `token` names: the word itself, or a prefix of at least
    /// 4 characters that only one word starts with.
    @inline(__always)
    func index(of token: MnemonicCodec.Token, in text: UnsafeRawBufferPointer) -> Int? {
        let bytes = UnsafeRawBufferPointer(rebasing: text[token.range])
        if let exact = exactIndex(of: bytes, key: (token.low, token.high)) { return exact }
        return prefixIndex(of: bytes)
    }

    /// The same for a token that has no precomputed key.
    func index(of token: UnsafeRawBufferPointer) -> Int? {
        if let exact = exactIndex(of: token, key: Self.key(token)) { return exact }
        return prefixIndex(of: token)
    }

    private func prefixIndex(of token: UnsafeRawBufferPointer) -> Int? {
        let prefixCount = Self.byteCount(ofFirst: Self.prefixCharacters, in: token)
        guard prefixCount > 0 else { return nil }
        var slot = Int(Self.hash(UnsafeRawBufferPointer(rebasing: token[..<prefixCount]))) & (Self.slotCount - 1)
        while prefixValues[slot] != 0 {
            let key = Int(prefixKeys[slot])
            if prefixByteCounts[key] == prefixCount, wordBytes(key, equalTo: token, count: prefixCount) {
                if prefixValues[slot] != Self.ambiguous {
                    return isPrefix(token, ofWord: key) ? key : nil
                }
                // Several words share the first 4 characters: a longer token may still name one.
                var found: Int?
                for index in 0..<2048 where isPrefix(token, ofWord: index) {
                    if found != nil { return nil }
                    found = index
                }
                return found
            }
            slot = (slot + 1) & (Self.slotCount - 1)
        }
        return nil
    }

    @inline(__always)
    private func exactIndex(of token: UnsafeRawBufferPointer, key: (low: UInt64, high: UInt64)) -> Int? {
        var slot = Self.slot(key, length: token.count)
        while true {
            let value = slots[slot]
            if value == 0 { return nil }
            let index = Int(value) - 1
            let entry = entries[index]
            if entry.low == key.low, entry.high == key.high,
               token.count < 16
                || (offsets[index + 1] - offsets[index] == token.count && wordBytes(index, equalTo: token, count: token.count)) {
                return index
            }
            slot = (slot + 1) & (Self.slotCount - 1)
        }
    }

    /// The first 16 bytes, zero-padded, as two little-endian integers.
    @inline(__always)
    static func key(_ bytes: UnsafeRawBufferPointer) -> (low: UInt64, high: UInt64) {
        var low: UInt64 = 0, high: UInt64 = 0
        let n = min(bytes.count, 16)
        for i in 0..<min(n, 8) { low |= UInt64(bytes[i]) << UInt64(8 * i) }
        if n > 8 { for i in 8..<n { high |= UInt64(bytes[i]) << UInt64(8 * (i - 8)) } }
        return (low, high)
    }

    /// Multiplicative hashing of the key; the top bits are the best mixed.
    @inline(__always)
    private static func slot(_ key: (low: UInt64, high: UInt64), length: Int) -> Int {
        let h = (key.low &* 0x9E37_79B9_7F4A_7C15) ^ (key.high &* 0xC2B2_AE3D_27D4_EB4F) ^ (UInt64(length) &* 0x1656_67B1_9E37_79F9)
        return Int(truncatingIfNeeded: h >> 51) & (slotCount - 1)
    }

    private func wordBytes(_ index: Int, equalTo token: UnsafeRawBufferPointer, count: Int) -> Bool {
        store.withUnsafeBytes { store in
            memcmp(store.baseAddress! + offsets[index], token.baseAddress!, count) == 0
        }
    }

    private func isPrefix(_ token: UnsafeRawBufferPointer, ofWord index: Int) -> Bool {
        token.count <= offsets[index + 1] - offsets[index] && wordBytes(index, equalTo: token, count: token.count)
    }

    // MARK: Helpers

    /// FNV-1a, 32 bits: short keys, no allocation.
    private static func hash<C: Collection<UInt8>>(_ bytes: C) -> UInt32 {
        var h: UInt32 = 2_166_136_261
        for b in bytes { h = (h ^ UInt32(b)) &* 16_777_619 }
        return h
    }

    /// Bytes taken by the first `n` characters (Unicode scalars) of UTF-8 `bytes`,
    /// or 0 when there are fewer than `n`.
    private static func byteCount<C: Collection<UInt8>>(ofFirst n: Int, in bytes: C) -> Int where C.Index == Int {
        var scalars = 0
        var i = bytes.startIndex
        while i < bytes.endIndex {
            if bytes[i] & 0xC0 != 0x80 {
                if scalars == n { return i - bytes.startIndex }
                scalars += 1
            }
            i += 1
        }
        return scalars == n ? bytes.count : 0
    }

    /// Scalars without combining marks ("á" NFKD → "a"), for typo distance.
    static func fold(_ scalars: [Unicode.Scalar]) -> [Unicode.Scalar] {
        scalars.filter { $0.properties.generalCategory != .nonspacingMark }
    }
}
