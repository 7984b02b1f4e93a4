import Foundation
import KeyVaultCrypto

/// The parsing engine behind ``Mnemonic``. It works on lowercase NFKD UTF-8 bytes
/// in temporary buffers that are wiped before they are released.
enum MnemonicCodec {
    /// Tokens kept; one more than the longest code, so that 25 words are reported as such.
    static let tokenCapacity = 25

    /// A word as typed: where it is in the normalised text, and its lookup key
    /// (first 16 bytes, zero-padded), computed while tokenising.
    struct Token {
        var range: Range<Int>
        var low: UInt64
        var high: UInt64
    }

    struct Parsed {
        let language: MnemonicLanguage
        let indices: [UInt16]
        let entropy: SecureBytes
    }

    // MARK: Entry points

    static func quickCheck(_ input: UnsafeRawBufferPointer) -> MnemonicLanguage? {
        if let decided = ASCIIScanner.quickCheck(input) { return decided }
        return withTokens(input) { text, tokens, count in
            guard Mnemonic.allowedWordCounts.contains(count) else { return nil }
            return withUnsafeTemporaryAllocation(of: UInt16.self, capacity: count) { indices in
                defer { secureWipe(UnsafeMutableRawBufferPointer(indices)) }
                for table in WordTable.all where table.index(of: tokens[0], in: text) != nil {
                    if unknownCount(text, tokens, in: table, into: indices) == 0,
                       checksumMatches(UnsafeBufferPointer(indices)) {
                        return table.language
                    }
                }
                return nil
            }
        }
    }

    static func parse(_ input: UnsafeRawBufferPointer, language: MnemonicLanguage?) throws -> Parsed {
        try withTokens(input) { text, tokens, count in
            guard Mnemonic.allowedWordCounts.contains(count) else {
                let message = count == 0
                    ? "no words were read; a recovery code has 12, 15, 18, 21 or 24 words"
                    : "a recovery code has 12, 15, 18, 21 or 24 words; this one has \(count)"
                throw MnemonicError(.wordCount, message, wordCount: count)
            }
            let tables = language.map { [WordTable.table(for: $0)] } ?? WordTable.all
            var best: (table: WordTable, indices: [UInt16], unknown: [Int])?
            for table in tables {
                var indices = [UInt16](repeating: 0, count: count)
                var unknown = [Int]()
                for (position, token) in tokens.enumerated() {
                    if let index = table.index(of: token, in: text) {
                        indices[position] = UInt16(index)
                    } else {
                        unknown.append(position)
                    }
                }
                if unknown.isEmpty, indices.withUnsafeBufferPointer(checksumMatches) {
                    let entropy = indices.withUnsafeBufferPointer(entropy(of:))
                    return Parsed(language: table.language, indices: indices, entropy: entropy)
                }
                if best == nil || unknown.count < best!.unknown.count {
                    best = (table, indices, unknown)
                }
                secureWipe(&indices)
            }
            let (table, indices, unknown) = best!
            let typed = tokens.map { Array(String(decoding: UnsafeRawBufferPointer(rebasing: text[$0.range]), as: UTF8.self).unicodeScalars) }
            // A language is only claimed when at least one word was found in it.
            let claimed = unknown.count < count ? table.language : language
            if let first = unknown.first {
                let listName = claimed.map { "the \($0.displayName) word list" } ?? "any of the 10 BIP39 word lists"
                let others = unknown.count > 1 ? " (and \(unknown.count - 1) other word\(unknown.count > 2 ? "s" : ""): positions \(unknown.dropFirst().map { String($0 + 1) }.joined(separator: ", ")))" : ""
                let suggestions = closestWords(to: typed[first], in: table, limit: 3)
                    .map { MnemonicError.Suggestion(position: first + 1, word: table.words[$0]) }
                throw MnemonicError(.unknownWord, "word \(first + 1) is not in \(listName)\(others)",
                                    position: first + 1, suggestions: suggestions,
                                    unknownPositions: unknown.map { $0 + 1 }, language: claimed, wordCount: count)
            }
            // No position: the checksum does not locate the wrong word (a change at almost
            // any position can make it match); the repairs found are candidates only.
            let suggestions = checksumRepairs(indices, typed: typed, in: table, limit: 5)
            throw MnemonicError(
                .checksum,
                "every word is in the \(table.language.displayName) list, but the checksum does not match: a word is wrong or two are swapped",
                position: nil, suggestions: suggestions,
                language: table.language, wordCount: count)
        }
    }

    // MARK: Normalising and splitting

    /// Lowercase NFKD bytes of `input` and the ranges of its first 25 tokens, with
    /// the total token count. ASCII input takes a fast path with no allocation.
    static func withTokens<R>(_ input: UnsafeRawBufferPointer,
                              _ body: (UnsafeRawBufferPointer, UnsafeBufferPointer<Token>, Int) throws -> R) rethrows -> R {
        // ASCII fast path (SWAR): lowercase and classify 8 bytes at a time into a
        // wiped, space-padded buffer; find word boundaries with bit scans; build each
        // lookup key from two masked 8-byte loads. Non-ASCII input takes the Unicode path.
        let n = input.count
        let padded = (n + 7) & ~7
        let ascii: R?? = try withUnsafeTemporaryAllocation(byteCount: padded + 24, alignment: 8) { buffer in
            defer { secureWipe(buffer) }
            guard ASCIIScanner.lowercase(input, into: buffer) else { return R??.none }
            return try withUnsafeTemporaryAllocation(of: UInt64.self, capacity: (padded + 8) / 64 + 1) { spaces in
                ASCIIScanner.spaceBits(buffer, chunks: padded / 8 + 1, into: spaces)
                return try withUnsafeTemporaryAllocation(of: Token.self, capacity: tokenCapacity) { tokens in
                    defer { secureWipe(UnsafeMutableRawBufferPointer(tokens)) }  // keys hold word bytes
                    let count = ASCIIScanner.tokens(UnsafeRawBufferPointer(buffer), count: n, spaces: UnsafeBufferPointer(spaces), into: tokens)
                    let text = UnsafeRawBufferPointer(rebasing: buffer[..<n])
                    return .some(try body(text, UnsafeBufferPointer(rebasing: tokens[..<min(count, tokenCapacity)]), count))
                }
            }
        }
        if let ascii, let result = ascii { return result }
        // Unicode: lowercase, then NFKD (which also turns U+3000 and U+00A0 into U+0020).
        let normalized = NFKD.normalize(String(decoding: input, as: UTF8.self).lowercased())
        var bytes = Array(normalized.utf8)
        defer { secureWipe(&bytes) }
        var ranges = [Range<Int>]()
        defer { ranges.removeAll() }
        var count = 0
        var offset = 0
        var start: Int?
        for scalar in normalized.unicodeScalars {
            let width = UTF8.width(scalar)
            if scalar.properties.isWhitespace {
                if let s = start {
                    if count < tokenCapacity { ranges.append(s..<offset) }
                    count += 1
                    start = nil
                }
            } else if start == nil {
                start = offset
            }
            offset += width
        }
        if let s = start {
            if count < tokenCapacity { ranges.append(s..<offset) }
            count += 1
        }
        return try bytes.withUnsafeBytes { text in
            var tokens = ranges.map { range in
                let key = WordTable.key(UnsafeRawBufferPointer(rebasing: text[range]))
                return Token(range: range, low: key.low, high: key.high)
            }
            defer { tokens.withUnsafeMutableBytes { secureWipe($0) } }
            return try tokens.withUnsafeBufferPointer { try body(text, $0, count) }
        }
    }

    @inline(__always)
    private static func isASCIISpace(_ c: UInt8) -> Bool {
        c == 0x20 || (c >= 0x09 && c <= 0x0D)
    }

    private static func unknownCount(_ text: UnsafeRawBufferPointer, _ tokens: UnsafeBufferPointer<Token>,
                                     in table: WordTable, into indices: UnsafeMutableBufferPointer<UInt16>) -> Int {
        var unknown = 0
        for (position, token) in tokens.enumerated() {
            if let index = table.index(of: token, in: text) {
                indices[position] = UInt16(index)
            } else {
                unknown += 1
            }
        }
        return unknown
    }

    // MARK: Bits

    /// Packs 11-bit indices big-endian into `buffer` (33 bytes).
    private static func pack(_ indices: UnsafeBufferPointer<UInt16>, into buffer: UnsafeMutableRawBufferPointer) {
        var accumulator: UInt32 = 0
        var bits = 0
        var out = 0
        for index in indices {
            accumulator = accumulator << 11 | UInt32(index & 0x7FF)
            bits += 11
            while bits >= 8 {
                bits -= 8
                buffer[out] = UInt8(truncatingIfNeeded: accumulator >> UInt32(bits))
                out += 1
            }
            accumulator &= (1 << UInt32(bits)) - 1
        }
        if bits > 0 { buffer[out] = UInt8(truncatingIfNeeded: accumulator << UInt32(8 - bits)) }
    }

    /// Whether the last ENT/32 bits are the first bits of SHA-256(entropy).
    static func checksumMatches(_ indices: UnsafeBufferPointer<UInt16>) -> Bool {
        withUnsafeTemporaryAllocation(byteCount: 33 + 32, alignment: 8) { scratch in
            defer { secureWipe(scratch) }
            scratch.initializeMemory(as: UInt8.self, repeating: 0)
            let packed = UnsafeMutableRawBufferPointer(rebasing: scratch[..<33])
            pack(indices, into: packed)
            let entropyCount = indices.count * 4 / 3
            let checksumBits = indices.count / 3
            let digest = UnsafeMutableRawBufferPointer(rebasing: scratch[33...])
            SHA256.hash(UnsafeRawBufferPointer(rebasing: packed[..<entropyCount]), into: digest)
            let shift = UInt8(8 - checksumBits)
            return digest[0] >> shift == packed[entropyCount] >> shift
        }
    }

    static func entropy(of indices: UnsafeBufferPointer<UInt16>) -> SecureBytes {
        withUnsafeTemporaryAllocation(byteCount: 33, alignment: 8) { packed in
            defer { secureWipe(packed) }
            packed.initializeMemory(as: UInt8.self, repeating: 0)
            pack(indices, into: packed)
            return SecureBytes(copying: UnsafeRawBufferPointer(rebasing: packed[..<(indices.count * 4 / 3)]))
        }
    }

    /// The word indices for `entropy` (16-32 bytes), checksum included.
    static func indices(forEntropy entropy: UnsafeRawBufferPointer) -> [UInt16] {
        withUnsafeTemporaryAllocation(byteCount: 33 + 32, alignment: 8) { scratch in
            defer { secureWipe(scratch) }
            scratch.initializeMemory(as: UInt8.self, repeating: 0)
            let digest = UnsafeMutableRawBufferPointer(rebasing: scratch[33...])
            SHA256.hash(entropy, into: digest)
            scratch.copyMemory(from: entropy)
            scratch[entropy.count] = digest[0]
            let wordCount = entropy.count * 3 / 4
            var indices = [UInt16](repeating: 0, count: wordCount)
            for w in 0..<wordCount {
                var value: UInt16 = 0
                for bit in (w * 11)..<(w * 11 + 11) {
                    value = value << 1 | UInt16(scratch[bit / 8] >> UInt8(7 - bit % 8) & 1)
                }
                indices[w] = value
            }
            return indices
        }
    }

    // MARK: Suggestions

    /// Indices of the `limit` words closest to `typed` (edit distance on letters
    /// without accents, then with them), best first.
    static func closestWords(to typed: [Unicode.Scalar], in table: WordTable, limit: Int) -> [Int] {
        let folded = WordTable.fold(typed)
        let ranked = (0..<2048).map { index in
            (index, distance(folded, table.foldedWords[index]), distance(typed, table.scalarWords[index]))
        }
        return ranked.sorted { ($0.1, $0.2, $0.0) < ($1.1, $1.2, $1.0) }.prefix(limit).map(\.0)
    }

    /// Every single-word replacement that makes the checksum valid, ranked by how
    /// close the replacement is to what was typed at that position.
    static func checksumRepairs(_ indices: [UInt16], typed: [[Unicode.Scalar]], in table: WordTable,
                                limit: Int) -> [MnemonicError.Suggestion] {
        var candidate = indices
        defer { secureWipe(&candidate) }
        var repairs = [(position: Int, index: Int, folded: Int, full: Int)]()
        for position in 0..<candidate.count {
            let original = candidate[position]
            let foldedTyped = WordTable.fold(typed[position])
            for replacement in 0..<2048 where replacement != Int(original) {
                candidate[position] = UInt16(replacement)
                if candidate.withUnsafeBufferPointer(checksumMatches) {
                    repairs.append((position, replacement,
                                    distance(foldedTyped, table.foldedWords[replacement]),
                                    distance(typed[position], table.scalarWords[replacement])))
                }
            }
            candidate[position] = original
        }
        return repairs.sorted { ($0.folded, $0.full, $0.position, $0.index) < ($1.folded, $1.full, $1.position, $1.index) }
            .prefix(limit)
            .map { MnemonicError.Suggestion(position: $0.position + 1, word: table.words[$0.index]) }
    }

    /// Optimal string alignment distance: insertions, deletions, substitutions and
    /// transpositions of neighbours each cost 1.
    static func distance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var best = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    best = min(best, previous2[j - 2] + 1)
                }
                current[j] = best
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }
}

/// Eight-bytes-at-a-time helpers for the ASCII path of ``MnemonicCodec/withTokens(_:_:)``.
enum ASCIIScanner {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    @inline(__always)
    private static func load(_ p: UnsafeRawPointer, _ offset: Int) -> UInt64 {
        UInt64(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// Copies `input` lowercased into `buffer` and pads it with at least 16 spaces.
    /// Returns false (buffer contents unspecified) when a byte is not ASCII.
    @inline(__always)
    static func lowercase(_ input: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer) -> Bool {
        let n = input.count
        let out = buffer.baseAddress!
        var seen: UInt64 = 0
        var i = 0
        if let source = input.baseAddress {
            while i + 8 <= n {
                let x = load(source, i)
                seen |= x
                // For bytes below 0x80: high bit of a = byte >= 'A', of b = byte > 'Z'.
                let a = x &+ 0x3F3F_3F3F_3F3F_3F3F, b = x &+ 0x2525_2525_2525_2525
                let upper = a & ~b & highs
                out.storeBytes(of: (x | upper &>> 2).littleEndian, toByteOffset: i, as: UInt64.self)
                i += 8
            }
            while i < n {
                var c = source.load(fromByteOffset: i, as: UInt8.self)
                seen |= UInt64(c)
                if c &- 0x41 < 26 { c |= 0x20 }
                out.storeBytes(of: c, toByteOffset: i, as: UInt8.self)
                i += 1
            }
        }
        (out + n).initializeMemory(as: UInt8.self, repeating: 0x20, count: buffer.count - n)
        return seen & highs == 0
    }

    /// One bit per byte of `buffer` (first `chunks` × 8 bytes), set where the byte is
    /// ASCII whitespace (space, tab, LF, VT, FF, CR).
    @inline(__always)
    static func spaceBits(_ buffer: UnsafeMutableRawBufferPointer, chunks: Int, into words: UnsafeMutableBufferPointer<UInt64>) {
        words.initialize(repeating: 0)
        let p = UnsafeRawPointer(buffer.baseAddress!)
        for chunk in 0..<chunks {
            let x = load(p, chunk * 8)
            let t = x ^ 0x2020_2020_2020_2020
            let isSpace = ~(((t & 0x7F7F_7F7F_7F7F_7F7F) &+ 0x7F7F_7F7F_7F7F_7F7F) | t) & highs
            let inControlRange = (x &+ 0x7777_7777_7777_7777) & ~(x &+ 0x7272_7272_7272_7272) & highs  // 0x09...0x0D
            // Gather the 8 high bits into one byte (bit k = byte k).
            let bits = (((isSpace | inControlRange) &>> 7) &* 0x0102_0408_1020_4080) &>> 56
            words[chunk / 8] |= bits &<< UInt64((chunk % 8) * 8)
        }
    }

    /// The hot path of ``MnemonicCodec/quickCheck(_:)`` for ASCII input: each word
    /// is looked up as soon as it is found, in the list its first word picks, with
    /// nothing stored but the indices (wiped). `nil` means undecided: non-ASCII
    /// input, or a word missing from that list (another list may still fit), and
    /// the general path decides.
    static func quickCheck(_ input: UnsafeRawBufferPointer) -> MnemonicLanguage?? {
        let n = input.count
        let padded = (n + 7) & ~7
        return withUnsafeTemporaryAllocation(byteCount: padded + 24, alignment: 8) { buffer -> MnemonicLanguage?? in
            defer { secureWipe(buffer) }
            guard lowercase(input, into: buffer) else { return nil }
            return withUnsafeTemporaryAllocation(of: UInt64.self, capacity: (padded + 8) / 64 + 1) { spaces in
                spaceBits(buffer, chunks: padded / 8 + 1, into: spaces)
                let words = UnsafeBufferPointer(spaces)
                return withUnsafeTemporaryAllocation(of: UInt16.self, capacity: 24) { indices -> MnemonicLanguage?? in
                    defer { secureWipe(UnsafeMutableRawBufferPointer(indices)) }
                    let p = UnsafeRawPointer(buffer.baseAddress!)
                    let text = UnsafeRawBufferPointer(buffer)
                    var table: WordTable?
                    var count = 0
                    var position = 0
                    while true {
                        position = next(in: words, from: position, space: false)
                        if position >= n { break }
                        let end = next(in: words, from: position, space: true)
                        guard count < 24 else { return .some(nil) }  // too many words
                        let length = end - position
                        let token = MnemonicCodec.Token(
                            range: position..<end, low: load(p, position) & mask(min(length, 8)),
                            high: length > 8 ? load(p, position + 8) & mask(min(length - 8, 8)) : 0)
                        if table == nil {
                            table = WordTable.all.first { $0.index(of: token, in: text) != nil }
                            guard table != nil else { return .some(nil) }  // in no list at all
                        }
                        guard let index = table!.index(of: token, in: text) else { return nil }
                        indices[count] = UInt16(index)
                        count += 1
                        position = end
                    }
                    guard Mnemonic.allowedWordCounts.contains(count) else { return .some(nil) }
                    guard MnemonicCodec.checksumMatches(UnsafeBufferPointer(rebasing: indices[..<count])) else {
                        // English and French share words; the Chinese lists do not apply here (not ASCII).
                        return table!.language == .english ? nil : .some(nil)
                    }
                    return .some(table!.language)
                }
            }
        }
    }

    /// Records up to `tokens.count` words with their keys; returns how many words there are.
    @inline(__always)
    static func tokens(_ buffer: UnsafeRawBufferPointer, count n: Int, spaces: UnsafeBufferPointer<UInt64>,
                       into tokens: UnsafeMutableBufferPointer<MnemonicCodec.Token>) -> Int {
        let p = buffer.baseAddress!
        var count = 0
        var position = 0
        while true {
            position = next(in: spaces, from: position, space: false)
            if position >= n { return count }
            let end = next(in: spaces, from: position, space: true)  // the padding guarantees one
            if count < tokens.count {
                let length = end - position
                let low = load(p, position) & mask(min(length, 8))
                let high = length > 8 ? load(p, position + 8) & mask(min(length - 8, 8)) : 0
                tokens.initializeElement(at: count, to: MnemonicCodec.Token(range: position..<end, low: low, high: high))
            }
            count += 1
            position = end
        }
    }

    @inline(__always)
    private static func mask(_ bytes: Int) -> UInt64 {
        bytes >= 8 ? ~0 : (1 &<< UInt64(bytes * 8)) &- 1
    }

    /// The first position at or after `from` whose bit is `space`.
    @inline(__always)
    private static func next(in words: UnsafeBufferPointer<UInt64>, from: Int, space: Bool) -> Int {
        var index = from >> 6
        guard index < words.count else { return Int.max }
        var word = (space ? words[index] : ~words[index]) &>> UInt64(from & 63)
        if word != 0 { return from + word.trailingZeroBitCount }
        index += 1
        while index < words.count {
            word = space ? words[index] : ~words[index]
            if word != 0 { return index * 64 + word.trailingZeroBitCount }
            index += 1
        }
        return Int.max
    }
}
