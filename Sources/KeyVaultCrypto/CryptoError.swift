/// The one error type of KeyVaultCrypto.
///
/// Match on ``code``; ``message`` is for people and never contains key material.
package struct CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, stable across releases. New codes may be added.
    package struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        /// A tag, MAC or signature did not verify. Deliberately says nothing more.
        package static let authenticationFailure = Code(rawValue: "authentication_failure")
        /// Bytes that do not have the documented shape (too short, bad length field, …).
        package static let malformed = Code(rawValue: "malformed")
        /// A format version this build does not understand.
        package static let unsupportedVersion = Code(rawValue: "unsupported_version")
        /// An algorithm identifier this build does not understand.
        package static let unsupportedAlgorithm = Code(rawValue: "unsupported_algorithm")
        /// A key of the wrong size, or a public key that cannot be used.
        package static let invalidKey = Code(rawValue: "invalid_key")
        /// An envelope names a different key (by key id) than the one offered.
        package static let keyMismatch = Code(rawValue: "key_mismatch")
        /// A parameter outside what the function accepts (salt length, output size, …).
        package static let invalidParameter = Code(rawValue: "invalid_parameter")
        /// Argon2id parameters below the compiled-in floor.
        package static let parametersBelowFloor = Code(rawValue: "parameters_below_floor")
        /// Argon2id parameters above the compiled-in ceiling (more time or memory than
        /// anyone else may make this device spend).
        package static let parametersAboveCeiling = Code(rawValue: "parameters_above_ceiling")
        /// Reading input failed.
        package static let io = Code(rawValue: "io")
        /// The C library reported a failure that input cannot explain (out of memory, …).
        package static let backendFailure = Code(rawValue: "backend_failure")
    }

    package let code: Code
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }

    /// The single error for every failed open or verify: it does not say why.
    package static let authenticationFailure = CryptoError(.authenticationFailure, "authentication failed")
}
