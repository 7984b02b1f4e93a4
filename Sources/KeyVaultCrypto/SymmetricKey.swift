/// A symmetric secret key (256 bits unless a construction needs another size).
///
/// Backed by ``SecureBytes``: wiped when freed, constant-time `==`, redacted when printed.
public struct SymmetricKey: RawBytes, Sendable, Equatable, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    /// The key bytes. Read them only to hand them to a primitive.
    package let bytes: SecureBytes

    /// A fresh random 256-bit key.
    public init() { bytes = SecureBytes(randomCount: 32) }

    /// Wraps existing key material.
    ///
    /// - Throws: `invalid_key` when `bytes` is empty.
    package init(_ bytes: SecureBytes) throws {
        guard bytes.count > 0 else { throw CryptoError(.invalidKey, "a key cannot be empty") }
        self.bytes = bytes
    }

    public var count: Int { bytes.count }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }

    /// A public, 16-byte name for this key: HKDF-SHA256(key, info "keyvault/v1/key-id").
    ///
    /// It reveals nothing about the key and lets an envelope say which key opens it.
    public var keyID: KeyID {
        let derived = try! HKDF.deriveBytes(from: self, salt: [], info: Array("keyvault/v1/key-id".utf8), outputByteCount: 16)
        return KeyID(unchecked: derived)
    }

    public var description: String { "SymmetricKey(\(count * 8) bits, redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["bits": count * 8], displayStyle: .struct) }
}

/// The public 16-byte identifier of a symmetric key (see ``SymmetricKey/keyID``).
public struct KeyID: Sendable, Hashable, CustomStringConvertible {
    public static let byteCount = 16
    public let bytes: [UInt8]

    init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    /// - Throws: `malformed` unless `bytes` has exactly 16 bytes.
    public init(bytes: [UInt8]) throws {
        guard bytes.count == Self.byteCount else {
            throw CryptoError(.malformed, "a key id has \(Self.byteCount) bytes, not \(bytes.count)")
        }
        self.bytes = bytes
    }

    public var description: String { Hex.encode(bytes) }
}
