/// Argon2id (libsodium `crypto_pwhash`, version 0x13, one lane).
package enum Argon2id {
    /// Salts are exactly 16 bytes (`crypto_pwhash_SALTBYTES`).
    package static let saltByteCount = 16

    /// Cost parameters. They travel with what they protect and are authenticated there.
    ///
    /// The package initialiser and `Decodable` refuse anything below ``floor``, so
    /// parameters that arrive from a server cannot lower the cost unnoticed.
    package struct Parameters: Sendable, Hashable, Codable, CustomStringConvertible {
        /// Passes over memory (libsodium's `opslimit`, Argon2's `t`).
        package let iterations: UInt32
        /// Memory in KiB (Argon2's `m`; libsodium's `memlimit` is this times 1024).
        package let memoryKiB: UInt32

        /// The compiled-in floor: t = 2, m = 19 MiB, the smallest Argon2id
        /// configuration OWASP's password-storage guidance accepts.
        package static let floor = Parameters(unchecked: 2, memoryKiB: 19 * 1024)
        /// Below a second on a phone: t = 2, 64 MiB (libsodium's INTERACTIVE).
        package static let interactive = Parameters(unchecked: 2, memoryKiB: 64 * 1024)
        /// The default for recovery codes: t = 3, 64 MiB.
        package static let recovery = Parameters(unchecked: 3, memoryKiB: 64 * 1024)
        /// t = 3, 256 MiB (libsodium's MODERATE).
        package static let moderate = Parameters(unchecked: 3, memoryKiB: 256 * 1024)
        /// t = 4, 1 GiB (libsodium's SENSITIVE).
        package static let sensitive = Parameters(unchecked: 4, memoryKiB: 1024 * 1024)

        /// The named presets, for command lines and docs.
        package static let presets: [(name: String, parameters: Parameters)] = [
            ("floor", .floor), ("interactive", .interactive), ("recovery", .recovery),
            ("moderate", .moderate), ("sensitive", .sensitive),
        ]

        /// The compiled-in ceiling: t = 10, m = 1 GiB (the `sensitive` preset's memory,
        /// and 2.5 times its passes). Parameters come with what they protect, which a
        /// server hands out (a recovery slot) or a file holds (a sealed device home):
        /// without a ceiling, a dishonest server could make a device spend minutes and
        /// gigabytes on each derivation. Every preset is at or below it.
        package static let ceiling = Parameters(unchecked: 10, memoryKiB: 1024 * 1024)

        /// Largest memory accepted from outside: ``ceiling``'s, 1 GiB.
        package static let maximumMemoryKiB: UInt32 = ceiling.memoryKiB
        /// Largest pass count accepted from outside: ``ceiling``'s, 10.
        package static let maximumIterations: UInt32 = ceiling.iterations

        /// - Throws: `parameters_below_floor` below ``floor`` (the message names the
        ///   floor); `parameters_above_ceiling` above ``ceiling`` (the message names it).
        package init(iterations: UInt32, memoryKiB: UInt32) throws {
            guard iterations >= Self.floor.iterations, memoryKiB >= Self.floor.memoryKiB else {
                throw CryptoError(
                    .parametersBelowFloor,
                    "Argon2id parameters t=\(iterations), m=\(memoryKiB) KiB are below the floor of t=\(Self.floor.iterations), m=\(Self.floor.memoryKiB) KiB (19 MiB)")
            }
            guard iterations <= Self.maximumIterations, memoryKiB <= Self.maximumMemoryKiB else {
                throw CryptoError(
                    .parametersAboveCeiling,
                    "Argon2id parameters t=\(iterations), m=\(memoryKiB) KiB are above the ceiling of t=\(Self.ceiling.iterations), m=\(Self.ceiling.memoryKiB) KiB (1 GiB)")
            }
            self.iterations = iterations
            self.memoryKiB = memoryKiB
        }

        /// For known-answer tests and presets only: skips the floor.
        init(unchecked iterations: UInt32, memoryKiB: UInt32) {
            self.iterations = iterations
            self.memoryKiB = memoryKiB
        }

        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            try self.init(iterations: container.decode(UInt32.self, forKey: .iterations),
                          memoryKiB: container.decode(UInt32.self, forKey: .memoryKiB))
        }

        package var description: String { "t=\(iterations), m=\(memoryKiB) KiB, p=1" }
    }

    /// Derives `outputByteCount` secret bytes from `password`.
    ///
    /// - Throws: `invalid_parameter` for a salt that is not 16 bytes or an output
    ///   under 16 bytes; `backend_failure` when the memory cannot be had.
    package static func deriveKey(from password: some RawBytes, salt: [UInt8], parameters: Parameters,
                                 outputByteCount: Int = 32) throws -> SecureBytes {
        guard salt.count == saltByteCount else {
            throw CryptoError(.invalidParameter, "an Argon2id salt has \(saltByteCount) bytes, not \(salt.count)")
        }
        guard outputByteCount >= Sodium.argon2MinOutput else {
            throw CryptoError(.invalidParameter, "Argon2id output must be at least \(Sodium.argon2MinOutput) bytes")
        }
        return try SecureBytes(count: outputByteCount) { out in
            try password.withUnsafeBytes { password in
                try salt.withUnsafeBytes { salt in
                    try Sodium.argon2id(output: out, password: password, salt: salt,
                                        opsLimit: UInt64(parameters.iterations),
                                        memLimitBytes: Int(parameters.memoryKiB) * 1024)
                }
            }
        }
    }
}
