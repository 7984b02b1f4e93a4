import KeyVaultCrypto

/// The byte-level building blocks of the signed formats: length-prefixed strings
/// and big-endian integers, so that no two different values encode alike.
struct CanonicalWriter {
    private(set) var bytes: [UInt8] = []

    init(domain: String) {
        bytes += domain.utf8
        bytes.append(0)
    }

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.bigEndian) { bytes += $0 } }
    mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.bigEndian) { bytes += $0 } }
    mutating func raw(_ value: [UInt8]) { bytes += value }

    /// u8 length ‖ UTF-8 (at most 255 bytes; callers check their inputs).
    mutating func short(_ text: String) {
        let utf8 = Array(text.utf8.prefix(255))
        bytes.append(UInt8(utf8.count))
        bytes += utf8
    }

    /// u32 length ‖ bytes.
    mutating func long(_ value: [UInt8]) {
        u32(UInt32(value.count))
        bytes += value
    }
}

/// Decodes standard base64 (with or without padding) into bytes.
package func base64Decode(_ text: String) -> [UInt8]? {
    var padded = text
    let remainder = padded.utf8.count % 4
    if remainder == 1 { return nil }
    if remainder > 0 { padded += String(repeating: "=", count: 4 - remainder) }
    guard let data = Base64.decode(padded) else { return nil }
    return data
}

package func base64Encode(_ bytes: [UInt8]) -> String { Base64.encode(bytes) }

/// Standard base64, without Foundation (this module is shared with the server's hot path).
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let reverse: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = UInt8(i) }
        return table
    }()

    static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [alphabet[Int(v >> 18 & 63)], alphabet[Int(v >> 12 & 63)], alphabet[Int(v >> 6 & 63)], alphabet[Int(v & 63)]]
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let v = UInt32(bytes[i]) << 16
            out += [alphabet[Int(v >> 18 & 63)], alphabet[Int(v >> 12 & 63)], 61, 61]
        } else if rest == 2 {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [alphabet[Int(v >> 18 & 63)], alphabet[Int(v >> 12 & 63)], alphabet[Int(v >> 6 & 63)], 61]
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        let input = Array(text.utf8)
        guard input.count % 4 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(input.count / 4 * 3)
        var i = 0
        while i < input.count {
            let last = i + 4 == input.count
            let c2 = input[i + 2], c3 = input[i + 3]
            let pad = last ? (c3 == 61 ? (c2 == 61 ? 2 : 1) : 0) : 0
            var v: UInt32 = 0
            for j in 0..<4 {
                let c = input[i + j]
                if j >= 4 - pad {
                    guard c == 61 else { return nil }
                    v <<= 6
                    continue
                }
                let d = reverse[Int(c)]
                guard d != 0xFF else { return nil }
                v = v << 6 | UInt32(d)
            }
            out.append(UInt8(v >> 16 & 0xFF))
            if pad < 2 { out.append(UInt8(v >> 8 & 0xFF)) }
            if pad < 1 { out.append(UInt8(v & 0xFF)) }
            i += 4
        }
        return out
    }
}
