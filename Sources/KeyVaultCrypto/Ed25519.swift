/// Ed25519 signatures (RFC 8032, libsodium).
package enum Ed25519 {
    package static let signatureByteCount = 64

    /// A signing key. The 32-byte seed and libsodium's expanded key sit in guarded memory.
    package struct PrivateKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        /// The RFC 8032 private key (the seed).
        package let seed: SecureBytes
        private let expanded: SecureBytes
        package let publicKey: PublicKey

        /// A fresh random key.
        package init() { try! self.init(seed: SecureBytes(randomCount: 32)) }

        /// The key for an RFC 8032 32-byte private key (seed).
        ///
        /// - Throws: `invalid_key` when `seed` is not 32 bytes.
        package init(seed: SecureBytes) throws {
            guard seed.count == Sodium.ed25519SeedBytes else {
                throw CryptoError(.invalidKey, "an Ed25519 seed has 32 bytes, not \(seed.count)")
            }
            var publicBytes = [UInt8](repeating: 0, count: Sodium.ed25519PublicKeyBytes)
            expanded = try SecureBytes(count: Sodium.ed25519SecretKeyBytes) { secret in
                try seed.withUnsafeBytes { seed in
                    try publicBytes.withUnsafeMutableBytes { try Sodium.ed25519KeyPair(seed: seed, publicKey: $0, secretKey: secret) }
                }
            }
            self.seed = seed
            publicKey = PublicKey(unchecked: publicBytes)
        }

        /// The 64-byte signature of `message`.
        package func signature(for message: some RawBytes) -> [UInt8] {
            var signature = [UInt8](repeating: 0, count: signatureByteCount)
            message.withUnsafeBytes { message in
                expanded.withUnsafeBytes { secret in
                    signature.withUnsafeMutableBytes { out in
                        // Cannot fail for a well-formed key, which init guarantees.
                        try! Sodium.ed25519Sign(signature: out, message: message, secretKey: secret)
                    }
                }
            }
            return signature
        }

        package var description: String { "Ed25519.PrivateKey(public: \(publicKey), secret redacted)" }
        package var debugDescription: String { description }
        package var customMirror: Mirror { Mirror(self, children: ["publicKey": publicKey], displayStyle: .struct) }
    }

    /// A verifying key: 32 public bytes.
    package struct PublicKey: Sendable, Hashable, CustomStringConvertible {
        package let rawRepresentation: [UInt8]

        init(unchecked bytes: [UInt8]) { rawRepresentation = bytes }

        /// - Throws: `invalid_key` when `rawRepresentation` is not 32 bytes.
        package init(rawRepresentation: [UInt8]) throws {
            guard rawRepresentation.count == Sodium.ed25519PublicKeyBytes else {
                throw CryptoError(.invalidKey, "an Ed25519 public key has 32 bytes, not \(rawRepresentation.count)")
            }
            self.rawRepresentation = rawRepresentation
        }

        /// Whether `signature` is a valid signature of `message` by this key.
        package func isValidSignature(_ signature: some RawBytes, for message: some RawBytes) -> Bool {
            signature.withUnsafeBytes { signature in
                message.withUnsafeBytes { message in
                    rawRepresentation.withUnsafeBytes { Sodium.ed25519Verify(signature: signature, message: message, publicKey: $0) }
                }
            }
        }

        package var description: String { Hex.encode(rawRepresentation) }
    }
}

/// X25519 key agreement (RFC 7748) and anonymous sealed boxes (libsodium `crypto_box_seal`).
package enum X25519 {
    /// Bytes a sealed box adds to its message: an ephemeral public key and a tag.
    package static let sealedBoxOverhead = 48

    package struct PrivateKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        package let rawRepresentation: SecureBytes
        package let publicKey: PublicKey

        /// A fresh random key.
        package init() { try! self.init(rawRepresentation: SecureBytes(randomCount: 32)) }

        /// - Throws: `invalid_key` when `rawRepresentation` is not 32 bytes.
        package init(rawRepresentation: SecureBytes) throws {
            guard rawRepresentation.count == Sodium.x25519Bytes else {
                throw CryptoError(.invalidKey, "an X25519 private key has 32 bytes, not \(rawRepresentation.count)")
            }
            var publicBytes = [UInt8](repeating: 0, count: Sodium.x25519Bytes)
            try rawRepresentation.withUnsafeBytes { secret in
                try publicBytes.withUnsafeMutableBytes { try Sodium.x25519PublicKey(secret: secret, publicKey: $0) }
            }
            self.rawRepresentation = rawRepresentation
            publicKey = PublicKey(unchecked: publicBytes)
        }

        /// The raw X25519 shared secret with `peer` (RFC 7748 section 5).
        ///
        /// - Important: hash it (HKDF) before using it as a key.
        /// - Throws: `invalid_key` for a low-order peer key.
        package func sharedSecret(with peer: PublicKey) throws -> SecureBytes {
            try SecureBytes(count: Sodium.x25519Bytes) { out in
                try rawRepresentation.withUnsafeBytes { secret in
                    try peer.rawRepresentation.withUnsafeBytes { try Sodium.x25519(output: out, secret: secret, publicKey: $0) }
                }
            }
        }

        /// Opens an anonymous sealed box addressed to this key.
        ///
        /// - Throws: `authentication_failure` when the box was not sealed to this key
        ///   or was altered; `malformed` when it is shorter than the overhead.
        package func openSealedBox(_ box: some RawBytes) throws -> SecureBytes {
            try box.withUnsafeBytes { box in
                guard box.count >= sealedBoxOverhead else {
                    throw CryptoError(.malformed, "a sealed box has at least \(sealedBoxOverhead) bytes, got \(box.count)")
                }
                return try SecureBytes(count: box.count - sealedBoxOverhead) { out in
                    try rawRepresentation.withUnsafeBytes { secret in
                        try publicKey.rawRepresentation.withUnsafeBytes { publicKey in
                            try Sodium.openBox(output: out, box: box, publicKey: publicKey, secretKey: secret)
                        }
                    }
                }
            }
        }

        package var description: String { "X25519.PrivateKey(public: \(publicKey), secret redacted)" }
        package var debugDescription: String { description }
        package var customMirror: Mirror { Mirror(self, children: ["publicKey": publicKey], displayStyle: .struct) }
    }

    package struct PublicKey: Sendable, Hashable, CustomStringConvertible {
        package let rawRepresentation: [UInt8]

        init(unchecked bytes: [UInt8]) { rawRepresentation = bytes }

        /// - Throws: `invalid_key` when `rawRepresentation` is not 32 bytes.
        package init(rawRepresentation: [UInt8]) throws {
            guard rawRepresentation.count == Sodium.x25519Bytes else {
                throw CryptoError(.invalidKey, "an X25519 public key has 32 bytes, not \(rawRepresentation.count)")
            }
            self.rawRepresentation = rawRepresentation
        }

        /// Seals `message` so that only the holder of this key's private half can open it.
        /// The sender stays anonymous: sign separately to prove who sealed it.
        package func sealedBox(for message: some RawBytes) throws -> [UInt8] {
            try message.withUnsafeBytes { message in
                var out = [UInt8](repeating: 0, count: message.count + sealedBoxOverhead)
                try out.withUnsafeMutableBytes { out in
                    try rawRepresentation.withUnsafeBytes { try Sodium.sealBox(output: out, message: message, recipient: $0) }
                }
                return out
            }
        }

        package var description: String { Hex.encode(rawRepresentation) }
    }
}
