/// Why the service did not start, or an operator command (`keyctl serve backup`) did
/// nothing: one error for every setting, database and backup problem of the service's
/// side. Its message names the setting and never a password.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// A setting is wrong (the message names it).
        case setting
        /// The database cannot be opened or used.
        case database
        /// A backup could not be made; nothing was left at its destination.
        case backup
    }

    public let kind: Kind
    public let message: String
    /// The database it concerns, without its password (for ``Kind/database``).
    public let database: String?

    public init(_ message: String, kind: Kind = .setting, database: String? = nil) {
        self.kind = kind
        self.message = message
        self.database = database
    }

    public var description: String { message }
}
