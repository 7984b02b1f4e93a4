import Foundation

/// What an envelope is for and where it belongs. It is bound into the associated
/// data, so an envelope moved to another slot (another member, generation,
/// purpose or object) fails to open. Encoding: docs/formats/envelope.md.
package struct EnvelopeContext: Sendable, Equatable, CustomStringConvertible {
    /// A short lowercase name such as `member-key` or `attachment-dek`.
    package let purpose: String
    /// Named values (account, member, generation, object, …), compared by name.
    package let fields: [String: String]

    package static let maximumFields = 16
    package static let maximumValueBytes = 1024

    /// - Throws: `invalid_parameter` for a purpose or field name outside
    ///   `[a-z0-9.-]`, more than 16 fields, or a value over 1024 bytes.
    package init(purpose: String, _ fields: [String: String] = [:]) throws {
        guard Self.isName(purpose, maxLength: 64, extra: [UInt8(ascii: ".")]) else {
            throw CryptoError(.invalidParameter, "an envelope purpose is 1-64 characters of a-z, 0-9, '.' and '-'")
        }
        guard fields.count <= Self.maximumFields else {
            throw CryptoError(.invalidParameter, "an envelope context has at most \(Self.maximumFields) fields")
        }
        for (name, value) in fields {
            guard Self.isName(name, maxLength: 32, extra: []), name != "purpose" else {
                throw CryptoError(.invalidParameter, "an envelope context field name is 1-32 characters of a-z, 0-9 and '-', and not 'purpose'")
            }
            guard value.utf8.count <= Self.maximumValueBytes else {
                throw CryptoError(.invalidParameter, "the envelope context field '\(name)' is longer than \(Self.maximumValueBytes) bytes")
            }
        }
        self.purpose = purpose
        self.fields = fields
    }

    private static func isName(_ s: String, maxLength: Int, extra: Set<UInt8>) -> Bool {
        let utf8 = Array(s.utf8)
        guard (1...maxLength).contains(utf8.count) else { return false }
        return utf8.allSatisfy { c in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c)
                || c == UInt8(ascii: "-") || extra.contains(c)
        }
    }

    /// The canonical encoding: a count, then `purpose`, then every field sorted by name.
    var encoded: [UInt8] {
        var out: [UInt8] = [UInt8(fields.count + 1)]
        func append(_ name: String, _ value: String) {
            out.append(UInt8(name.utf8.count))
            out += name.utf8
            let length = UInt16(value.utf8.count)
            out += [UInt8(length >> 8), UInt8(length & 0xff)]
            out += value.utf8
        }
        append("purpose", purpose)
        for name in fields.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            append(name, fields[name]!)
        }
        return out
    }

    package var description: String {
        ([purpose] + fields.keys.sorted().map { "\($0)=\(fields[$0]!)" }).joined(separator: " ")
    }
}

/// A versioned, context-bound AEAD envelope: every wrapped key and every
/// ciphertext KeyVault stores. Layout and associated data: docs/formats/envelope.md.
///
/// ```
/// version(1) ‖ algorithm(1) ‖ keyID(16) ‖ generation(4, big-endian) ‖ nonce ‖ ciphertext ‖ tag(16)
/// ```
package struct Envelope: Sendable, Equatable {
    /// The only format version this build writes and reads.
    package static let currentVersion: UInt8 = 1
    static let headerByteCount = 22
    static let domain = Array("keyvault/v1/envelope".utf8) + [0]

    package let version: UInt8
    package let algorithm: AEADAlgorithm
    /// Which key sealed it (``SymmetricKey/keyID``).
    package let keyID: KeyID
    /// The generation of that key (a master or member key generation; 0 when the key has none).
    package let generation: UInt32
    let box: SealedBox

    /// Seals `plaintext` under `key` with a fresh nonce.
    ///
    /// - Parameters:
    ///   - generation: the generation of `key`, recorded and authenticated.
    ///   - context: what this envelope is and where it belongs; opening needs the same.
    package static func seal(_ plaintext: some RawBytes, under key: SymmetricKey, generation: UInt32,
                            context: EnvelopeContext, algorithm: AEADAlgorithm = .xchacha20Poly1305) throws -> Envelope {
        try seal(plaintext, under: key, generation: generation, context: context, algorithm: algorithm,
                 nonce: SystemRandom.bytes(count: algorithm.nonceByteCount))
    }

    /// Known-answer tests only.
    static func seal(_ plaintext: some RawBytes, under key: SymmetricKey, generation: UInt32,
                     context: EnvelopeContext, algorithm: AEADAlgorithm, nonce: [UInt8]) throws -> Envelope {
        let keyID = key.keyID
        let header = Self.header(version: currentVersion, algorithm: algorithm, keyID: keyID, generation: generation)
        let box = try algorithm.seal(plaintext, using: key, nonce: nonce,
                                     authenticating: associatedData(header: header, context: context))
        return Envelope(version: currentVersion, algorithm: algorithm, keyID: keyID, generation: generation, box: box)
    }

    private init(version: UInt8, algorithm: AEADAlgorithm, keyID: KeyID, generation: UInt32, box: SealedBox) {
        self.version = version
        self.algorithm = algorithm
        self.keyID = keyID
        self.generation = generation
        self.box = box
    }

    /// Parses the binary form.
    ///
    /// - Throws: `malformed` for a truncated or short envelope; `unsupported_version`
    ///   or `unsupported_algorithm` for identifiers this build does not know.
    package init(bytes: some RawBytes) throws {
        let bytes = bytes.withUnsafeBytes { Array($0) }
        guard bytes.count >= 2 else {
            throw CryptoError(.malformed, "an envelope has at least a version and an algorithm byte; got \(bytes.count) bytes")
        }
        guard bytes[0] == Self.currentVersion else {
            throw CryptoError(.unsupportedVersion, "envelope format version \(bytes[0]) is not supported (this build reads version \(Self.currentVersion))")
        }
        guard let algorithm = AEADAlgorithm(rawValue: bytes[1]) else {
            throw CryptoError(.unsupportedAlgorithm, "envelope algorithm \(bytes[1]) is not supported")
        }
        let minimum = Self.headerByteCount + algorithm.nonceByteCount + algorithm.tagByteCount
        guard bytes.count >= minimum else {
            throw CryptoError(.malformed, "a \(algorithm) envelope has at least \(minimum) bytes; got \(bytes.count) (truncated?)")
        }
        let generation = bytes[18..<22].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        self.init(version: bytes[0], algorithm: algorithm, keyID: try KeyID(bytes: Array(bytes[2..<18])),
                  generation: generation,
                  box: try SealedBox(combined: bytes[Self.headerByteCount...], algorithm: algorithm))
    }

    /// Parses standard base64 (the JSON form).
    package init(base64: String) throws {
        guard let data = Data(base64Encoded: base64) else {
            throw CryptoError(.malformed, "an envelope is not valid base64")
        }
        try self.init(bytes: [UInt8](data))
    }

    /// The binary form.
    package var bytes: [UInt8] {
        Self.header(version: version, algorithm: algorithm, keyID: keyID, generation: generation) + box.combined
    }

    /// Standard base64 with padding, for JSON.
    package var base64: String { Data(bytes).base64EncodedString() }

    /// Opens the envelope into guarded memory.
    ///
    /// - Throws: `key_mismatch` when `key` is not the key the envelope names;
    ///   `authentication_failure` for another context or any altered byte.
    package func open(using key: SymmetricKey, context: EnvelopeContext) throws -> SecureBytes {
        guard key.keyID == keyID else {
            throw CryptoError(.keyMismatch, "this envelope was sealed under key \(keyID), not the key offered (\(key.keyID))")
        }
        let header = Self.header(version: version, algorithm: algorithm, keyID: keyID, generation: generation)
        return try algorithm.open(box, using: key, authenticating: Self.associatedData(header: header, context: context))
    }

    static func header(version: UInt8, algorithm: AEADAlgorithm, keyID: KeyID, generation: UInt32) -> [UInt8] {
        [version, algorithm.rawValue] + keyID.bytes
            + [UInt8(generation >> 24), UInt8(generation >> 16 & 0xff), UInt8(generation >> 8 & 0xff), UInt8(generation & 0xff)]
    }

    static func associatedData(header: [UInt8], context: EnvelopeContext) -> [UInt8] {
        domain + header + context.encoded
    }
}
