/// The authenticated ciphers KeyVault seals with. The raw value is the algorithm
/// byte of the envelope format (docs/formats/envelope.md).
package enum AEADAlgorithm: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// XChaCha20-Poly1305 (IETF), libsodium. The default: 24-byte random nonces never repeat in practice.
    case xchacha20Poly1305 = 1
    /// AES-256-GCM, OpenSSL, 12-byte random nonces; for interoperability with CryptoKit.
    case aes256GCM = 2

    package var nonceByteCount: Int { self == .xchacha20Poly1305 ? 24 : 12 }
    package var tagByteCount: Int { 16 }
    package static let keyByteCount = 32

    package var description: String { self == .xchacha20Poly1305 ? "XChaCha20-Poly1305" : "AES-256-GCM" }

    /// Seals with a fresh random nonce.
    package func seal(_ plaintext: some RawBytes, using key: SymmetricKey,
                     authenticating aad: some RawBytes) throws -> SealedBox {
        try seal(plaintext, using: key, nonce: SystemRandom.bytes(count: nonceByteCount), authenticating: aad)
    }

    /// Deterministic sealing, for known-answer tests only: a repeated nonce under
    /// one key destroys both confidentiality and integrity.
    func seal(_ plaintext: some RawBytes, using key: SymmetricKey, nonce: [UInt8],
              authenticating aad: some RawBytes) throws -> SealedBox {
        try checkKey(key)
        precondition(nonce.count == nonceByteCount)
        return try plaintext.withUnsafeBytes { pt in
            try aad.withUnsafeBytes { aad in
                try key.withUnsafeBytes { key in
                    try nonce.withUnsafeBytes { nonceBuffer in
                        switch self {
                        case .xchacha20Poly1305:
                            var out = [UInt8](repeating: 0, count: pt.count + tagByteCount)
                            try out.withUnsafeMutableBytes {
                                try Sodium.xchachaSeal(output: $0, plaintext: pt, aad: aad, nonce: nonceBuffer, key: key)
                            }
                            return SealedBox(unchecked: self, nonce: nonce, ciphertextAndTag: out)
                        case .aes256GCM:
                            var ct = [UInt8](repeating: 0, count: pt.count)
                            var tag = [UInt8](repeating: 0, count: tagByteCount)
                            try ct.withUnsafeMutableBytes { ct in
                                try tag.withUnsafeMutableBytes { tag in
                                    try LibCrypto.aes256gcmSeal(ciphertext: ct, tag: tag, plaintext: pt, aad: aad,
                                                                nonce: nonceBuffer, key: key)
                                }
                            }
                            return SealedBox(unchecked: self, nonce: nonce, ciphertextAndTag: ct + tag)
                        }
                    }
                }
            }
        }
    }

    /// Opens a sealed box into guarded memory.
    ///
    /// - Throws: `authentication_failure` for a wrong key, wrong associated data or
    ///   any altered byte; `invalid_key` for a key that is not 32 bytes;
    ///   `unsupported_algorithm` for a box of the other algorithm.
    package func open(_ box: SealedBox, using key: SymmetricKey, authenticating aad: some RawBytes) throws -> SecureBytes {
        try SecureBytes(count: try contentCount(of: box, key: key)) { out in
            try open(box, using: key, authenticating: aad, into: out)
        }
    }

    /// Opens a sealed box into `out`, exactly its content's length: guarded memory the
    /// caller holds and wipes (``SecureScratch``), for what a box that does not open
    /// leaves there too.
    ///
    /// - Throws: as ``open(_:using:authenticating:)``; `invalid_parameter` for an
    ///   `out` of another length than the content's.
    package func open(_ box: SealedBox, using key: SymmetricKey, authenticating aad: some RawBytes,
                      into out: UnsafeMutableRawBufferPointer) throws {
        let ciphertextCount = try contentCount(of: box, key: key)
        guard out.count == ciphertextCount else {
            throw CryptoError(.invalidParameter, "an output of \(out.count) bytes for \(ciphertextCount) bytes of content")
        }
        try box.ciphertextAndTag.withUnsafeBytes { sealed in
            try aad.withUnsafeBytes { aad in
                try key.withUnsafeBytes { key in
                    try box.nonce.withUnsafeBytes { nonce in
                        switch self {
                        case .xchacha20Poly1305:
                            try Sodium.xchachaOpen(output: out, ciphertext: sealed, aad: aad, nonce: nonce, key: key)
                        case .aes256GCM:
                            try LibCrypto.aes256gcmOpen(
                                plaintext: out, ciphertext: UnsafeRawBufferPointer(rebasing: sealed[..<ciphertextCount]),
                                tag: UnsafeRawBufferPointer(rebasing: sealed[ciphertextCount...]),
                                aad: aad, nonce: nonce, key: key)
                        }
                    }
                }
            }
        }
    }

    /// The content's length of a box this algorithm opens, after the checks made
    /// before any memory is taken for it.
    private func contentCount(of box: SealedBox, key: SymmetricKey) throws -> Int {
        try checkKey(key)
        guard box.algorithm == self else {
            throw CryptoError(.unsupportedAlgorithm, "this box was sealed with \(box.algorithm), not \(self)")
        }
        let count = box.ciphertextAndTag.count - tagByteCount
        guard count >= 0 else { throw CryptoError(.invalidParameter, "a negative byte count (\(count))") }
        return count
    }

    private func checkKey(_ key: SymmetricKey) throws {
        guard key.count == Self.keyByteCount else {
            throw CryptoError(.invalidKey, "\(self) takes a 32-byte key, not \(key.count) bytes")
        }
    }
}

/// The output of an AEAD: nonce, ciphertext and tag.
///
/// ``combined`` is nonce ‖ ciphertext ‖ tag, the layout of CryptoKit's
/// `AES.GCM.SealedBox.combined` (and `ChaChaPoly.SealedBox.combined` with a 24-byte nonce).
package struct SealedBox: Sendable, Equatable {
    package let algorithm: AEADAlgorithm
    package let nonce: [UInt8]
    /// Ciphertext followed by the 16-byte tag.
    package let ciphertextAndTag: [UInt8]

    init(unchecked algorithm: AEADAlgorithm, nonce: [UInt8], ciphertextAndTag: [UInt8]) {
        self.algorithm = algorithm
        self.nonce = nonce
        self.ciphertextAndTag = ciphertextAndTag
    }

    /// Reads nonce ‖ ciphertext ‖ tag.
    ///
    /// - Throws: `malformed` when the bytes are too short to hold a nonce and a tag.
    package init(combined: some RawBytes, algorithm: AEADAlgorithm) throws {
        let bytes = combined.withUnsafeBytes { Array($0) }
        guard bytes.count >= algorithm.nonceByteCount + algorithm.tagByteCount else {
            throw CryptoError(.malformed, "a \(algorithm) box needs at least \(algorithm.nonceByteCount + algorithm.tagByteCount) bytes, got \(bytes.count)")
        }
        self.init(unchecked: algorithm, nonce: Array(bytes[..<algorithm.nonceByteCount]),
                  ciphertextAndTag: Array(bytes[algorithm.nonceByteCount...]))
    }

    package var ciphertext: ArraySlice<UInt8> { ciphertextAndTag.dropLast(algorithm.tagByteCount) }
    package var tag: ArraySlice<UInt8> { ciphertextAndTag.suffix(algorithm.tagByteCount) }
    package var combined: [UInt8] { nonce + ciphertextAndTag }
}

/// XChaCha20-Poly1305 (IETF variant, libsodium), the default AEAD.
package enum XChaCha20Poly1305 {
    package static func seal(_ plaintext: some RawBytes, using key: SymmetricKey,
                            authenticating aad: some RawBytes) throws -> SealedBox {
        try AEADAlgorithm.xchacha20Poly1305.seal(plaintext, using: key, authenticating: aad)
    }

    package static func open(_ box: SealedBox, using key: SymmetricKey, authenticating aad: some RawBytes) throws -> SecureBytes {
        try AEADAlgorithm.xchacha20Poly1305.open(box, using: key, authenticating: aad)
    }
}

/// AES-256-GCM (OpenSSL) with 12-byte nonces and 16-byte tags, CryptoKit-compatible.
package enum AES256GCM {
    package static func seal(_ plaintext: some RawBytes, using key: SymmetricKey,
                            authenticating aad: some RawBytes) throws -> SealedBox {
        try AEADAlgorithm.aes256GCM.seal(plaintext, using: key, authenticating: aad)
    }

    package static func open(_ box: SealedBox, using key: SymmetricKey, authenticating aad: some RawBytes) throws -> SecureBytes {
        try AEADAlgorithm.aes256GCM.open(box, using: key, authenticating: aad)
    }
}
