/// STREAM (Hoang, Reyhanitabar, Rogaway and Vizár, 2015) over XChaCha20-Poly1305, as
/// age's payload uses it (docs/formats/attachment.md, version 2): content sealed in
/// chunks under a key used for one stream only, each chunk's nonce made of its index
/// and whether it is the last. A chunk moved, dropped, repeated or taken from another
/// stream does not open, and a stream cut at a chunk boundary has no last chunk.
package enum StreamAEAD {
    package static let tagByteCount = 16

    /// nonce_i = 15 zero bytes ‖ u64 big-endian i ‖ u8 last.
    static func nonce(_ index: UInt64, last: Bool) -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: 15)
        withUnsafeBytes(of: index.bigEndian) { nonce += $0 }
        nonce.append(last ? 1 : 0)
        return nonce
    }

    /// Seals the chunks of one stream in order. The index only moves forward, and
    /// nothing follows the last chunk, so no nonce is used twice under the key.
    package struct Sealer: ~Copyable {
        private let key: SymmetricKey
        private let aad: [UInt8]
        /// The index of the next chunk.
        package private(set) var index: UInt64 = 0
        package private(set) var finished = false

        /// - Parameter key: a key for this stream alone (derived from a fresh one).
        package init(key: SymmetricKey, authenticating aad: [UInt8]) {
            self.key = key
            self.aad = aad
        }

        /// Seals the next chunk: ciphertext ‖ tag.
        package mutating func seal(_ chunk: some RawBytes, last: Bool) throws -> [UInt8] {
            precondition(!finished, "a chunk sealed after the last one")
            let box = try AEADAlgorithm.xchacha20Poly1305.seal(chunk, using: key, nonce: StreamAEAD.nonce(index, last: last),
                                                               authenticating: aad)
            index += 1
            finished = last
            return box.ciphertextAndTag
        }
    }

    /// Opens chunk `index` of a stream (in any order: opening repeats no nonce).
    ///
    /// - Throws: `authentication_failure` when it is not that chunk of this stream,
    ///   or `last` is not what it was sealed with.
    package static func open(_ sealed: [UInt8], index: UInt64, last: Bool, using key: SymmetricKey,
                             authenticating aad: [UInt8]) throws -> SecureBytes {
        guard sealed.count >= tagByteCount else { throw CryptoError.authenticationFailure }
        return try SecureBytes(count: sealed.count - tagByteCount) {
            try open(sealed, index: index, last: last, using: key, authenticating: aad, into: $0)
        }
    }

    /// Opens chunk `index` of a stream into `out`, exactly its content's length
    /// (guarded memory the caller holds: ``SecureScratch``).
    ///
    /// - Throws: as ``open(_:index:last:using:authenticating:)``; `invalid_parameter`
    ///   for an `out` of another length.
    package static func open(_ sealed: [UInt8], index: UInt64, last: Bool, using key: SymmetricKey, authenticating aad: [UInt8],
                             into out: UnsafeMutableRawBufferPointer) throws {
        guard sealed.count >= tagByteCount else { throw CryptoError.authenticationFailure }
        let box = SealedBox(unchecked: .xchacha20Poly1305, nonce: nonce(index, last: last), ciphertextAndTag: sealed)
        try AEADAlgorithm.xchacha20Poly1305.open(box, using: key, authenticating: aad, into: out)
    }
}
