/// SHA-256 (OpenSSL). Digests are public values.
package enum SHA256 {
    package static let byteCount = 32

    package static func hash(_ data: some RawBytes) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: byteCount)
        data.withUnsafeBytes { input in out.withUnsafeMutableBytes { LibCrypto.sha256(input, into: $0) } }
        return out
    }

    /// Hashes into a caller-owned 32-byte buffer; allocates nothing (for hot loops).
    package static func hash(_ data: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        LibCrypto.sha256(data, into: output)
    }
}

/// HMAC-SHA256 (OpenSSL), one-shot or streaming.
package struct HMACSHA256: ~Copyable {
    package static let byteCount = 32
    private let context: LibCrypto.HMACContext
    private var finished = false

    /// Starts a streaming HMAC under `key`.
    package init(key: some RawBytes) throws {
        context = try key.withUnsafeBytes { try LibCrypto.HMACContext(key: $0) }
    }

    /// Feeds more data.
    package mutating func update(_ data: some RawBytes) throws {
        precondition(!finished, "HMAC updated after finalize")
        try data.withUnsafeBytes { try context.update($0) }
    }

    /// Feeds more data from a raw buffer.
    package mutating func update(_ data: UnsafeRawBufferPointer) throws {
        precondition(!finished, "HMAC updated after finalize")
        try context.update(data)
    }

    /// The 32-byte tag; the value cannot be used again.
    package consuming func finalize() throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Self.byteCount)
        try out.withUnsafeMutableBytes { try context.finalize(into: $0) }
        return out
    }

    /// HMAC-SHA256 of `data` under `key`.
    package static func authenticationCode(for data: some RawBytes, using key: some RawBytes) throws -> [UInt8] {
        var mac = try HMACSHA256(key: key)
        try mac.update(data)
        return try mac.finalize()
    }

    /// Whether `code` is the HMAC of `data` under `key`, compared in constant time.
    package static func isValidAuthenticationCode(_ code: some RawBytes, for data: some RawBytes,
                                                 using key: some RawBytes) throws -> Bool {
        constantTimeEquals(try authenticationCode(for: data, using: key), code)
    }
}

/// HKDF-SHA256 (RFC 5869, OpenSSL).
package enum HKDF {
    /// Extract-then-expand; the output is a key.
    ///
    /// - Parameters:
    ///   - ikm: the input key material.
    ///   - salt: optional salt; empty means 32 zero bytes.
    ///   - info: the label that makes this derivation distinct from every other.
    ///   - outputByteCount: 1...8160.
    package static func deriveKey(from ikm: some RawBytes, salt: [UInt8] = [], info: [UInt8],
                                 outputByteCount: Int = 32) throws -> SymmetricKey {
        try SymmetricKey(derive(.extractAndExpand, ikm: ikm, salt: salt, info: info, count: outputByteCount))
    }

    /// Extract-then-expand into public bytes (for identifiers derived from keys).
    package static func deriveBytes(from ikm: some RawBytes, salt: [UInt8] = [], info: [UInt8],
                                   outputByteCount: Int) throws -> [UInt8] {
        try derive(.extractAndExpand, ikm: ikm, salt: salt, info: info, count: outputByteCount).unprotectedCopy()
    }

    /// HKDF-Extract: the 32-byte pseudorandom key.
    package static func extract(from ikm: some RawBytes, salt: [UInt8]) throws -> SecureBytes {
        try derive(.extractOnly, ikm: ikm, salt: salt, info: [], count: 32)
    }

    /// HKDF-Expand of a pseudorandom key.
    package static func expand(_ prk: some RawBytes, info: [UInt8], outputByteCount: Int) throws -> SecureBytes {
        try derive(.expandOnly, ikm: prk, salt: [], info: info, count: outputByteCount)
    }

    private static func derive(_ mode: LibCrypto.HKDFMode, ikm: some RawBytes, salt: [UInt8], info: [UInt8],
                               count: Int) throws -> SecureBytes {
        guard (1...255 * 32).contains(count) else {
            throw CryptoError(.invalidParameter, "HKDF-SHA256 output must be 1 to 8160 bytes, not \(count)")
        }
        return try SecureBytes(count: count) { out in
            try ikm.withUnsafeBytes { ikm in
                try salt.withUnsafeBytes { salt in
                    try info.withUnsafeBytes { info in
                        try LibCrypto.hkdf(mode: mode, output: out, ikm: ikm, salt: salt, info: info)
                    }
                }
            }
        }
    }
}

/// PBKDF2-HMAC-SHA512 (OpenSSL), as BIP39 uses it.
package enum PBKDF2SHA512 {
    package static func deriveKey(from password: some RawBytes, salt: some RawBytes, rounds: UInt32,
                                 outputByteCount: Int) throws -> SecureBytes {
        guard rounds > 0, outputByteCount > 0 else {
            throw CryptoError(.invalidParameter, "PBKDF2 needs at least one round and one output byte")
        }
        return try SecureBytes(count: outputByteCount) { out in
            try password.withUnsafeBytes { password in
                try salt.withUnsafeBytes { salt in
                    try LibCrypto.pbkdf2SHA512(output: out, password: password, salt: salt, rounds: rounds)
                }
            }
        }
    }
}
