/// Lowercase hexadecimal, the form every vector and JSON field of KeyVault uses.
package enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    package static func encode(_ bytes: some RawBytes) -> String {
        bytes.withUnsafeBytes { buffer in
            String(unsafeUninitializedCapacity: buffer.count * 2) { out in
                for (i, byte) in buffer.enumerated() {
                    out[2 * i] = digits[Int(byte >> 4)]
                    out[2 * i + 1] = digits[Int(byte & 0x0f)]
                }
                return buffer.count * 2
            }
        }
    }

    /// - Throws: `malformed` for an odd length or a non-hex character.
    /// Whether `text` is exactly `byteCount` bytes as lowercase hex (the form ids, keys
    /// and nonces travel in).
    package static func isLowercase(_ text: some StringProtocol, byteCount: Int) -> Bool {
        text.utf8.count == byteCount * 2 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    package static func decode(_ text: some StringProtocol) throws -> [UInt8] {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { throw CryptoError(.malformed, "hex text has an odd number of digits") }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let hi = value(utf8[i]), let lo = value(utf8[i + 1]) else {
                throw CryptoError(.malformed, "hex text has a character that is not 0-9 or a-f at offset \(i)")
            }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
