/// A symmetric secret key (256 bits unless a construction needs another size).
///
/// Backed by ``SecureBytes``: wiped when freed, constant-time `==`, redacted when printed.
package struct SymmetricKey: RawBytes, Sendable, Equatable, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    /// The key bytes. Read them only to hand them to a primitive.
    package let bytes: SecureBytes

    /// A fresh random 256-bit key.
    package init() { bytes = SecureBytes(randomCount: 32) }

    /// Wraps existing key material.
    ///
    /// - Throws: `invalid_key` when `bytes` is empty.
    package init(_ bytes: SecureBytes) throws {
        guard bytes.count > 0 else { throw CryptoError(.invalidKey, "a key cannot be empty") }
        self.bytes = bytes
    }

    package var count: Int { bytes.count }

    package func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }

    /// A public, 16-byte name for this key: HKDF-SHA256(key, info "keyvault/v1/key-id").
    ///
    /// It reveals nothing about the key and lets an envelope say which key opens it.
    package var keyID: KeyID {
        let derived = try! HKDF.deriveBytes(from: self, salt: [], info: Array("keyvault/v1/key-id".utf8), outputByteCount: 16)
        return KeyID(unchecked: derived)
    }

    package var description: String { "SymmetricKey(\(count * 8) bits, redacted)" }
    package var debugDescription: String { description }
    package var customMirror: Mirror { Mirror(self, children: ["bits": count * 8], displayStyle: .struct) }
}

/// The public 16-byte identifier of a symmetric key (see ``SymmetricKey/keyID``).
package struct KeyID: Sendable, Hashable, CustomStringConvertible {
    package static let byteCount = 16
    package let bytes: [UInt8]

    init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    /// - Throws: `malformed` unless `bytes` has exactly 16 bytes.
    package init(bytes: [UInt8]) throws {
        guard bytes.count == Self.byteCount else {
            throw CryptoError(.malformed, "a key id has \(Self.byteCount) bytes, not \(bytes.count)")
        }
        self.bytes = bytes
    }

    package var description: String { Hex.encode(bytes) }
}
