import KeyVault

/// An error a command reports to its user: what happened, what to do next, and
/// the exit code. Messages never contain secrets.
public struct KeyctlError: Error, Sendable, CustomStringConvertible {
    /// The documented exit codes (README, "Exit codes").
    public enum ExitCode: Int32, Sendable {
        case success = 0
        /// The answer is no: an invalid code, a failed quiz or check.
        case rejected = 1
        /// The command could not do its work: unreadable input, a file problem.
        case failure = 2
        /// The server refused the request (its error code is in the message).
        case serverRefused = 3
        /// This device has been revoked from its account.
        case revoked = 4
        /// The server's answer failed verification: it is not to be trusted.
        case untrusted = 5
        /// The command line itself is wrong (argument-parser's EX_USAGE).
        case usage = 64
        /// A service it needs is not there (EX_UNAVAILABLE): `keyctl serve`'s port is taken.
        case unavailable = 69
    }

    /// The library's codes (every one the service, the client checks and the key
    /// hierarchy report): keyctl has none of its own.
    public typealias Code = KeyVaultError.Code

    public let code: Code
    public let message: String
    public let hint: String?
    public let exitCode: ExitCode

    public init(_ code: Code, _ message: String, hint: String? = nil, exitCode: ExitCode = .failure) {
        self.code = code
        self.message = message
        self.hint = hint
        self.exitCode = exitCode
    }

    public var description: String { message }
}
