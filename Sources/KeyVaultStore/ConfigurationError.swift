/// Why the service did not start, or an operator command (`keyctl serve backup`) did
/// nothing: one error for every setting, database and backup problem of the service's
/// side. Its message names the setting and never a password.
package struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable {
        /// A setting is wrong (the message names it).
        case setting
        /// The database cannot be opened or used.
        case database
        /// A backup could not be made; nothing was left at its destination.
        case backup
        /// The service cannot listen where it is told to (a port in use, or one that needs privileges).
        case listen
    }

    package let kind: Kind
    package let message: String
    /// The database it concerns, without its password (for ``Kind/database``).
    package let database: String?

    package init(_ message: String, kind: Kind = .setting, database: String? = nil) {
        self.kind = kind
        self.message = message
        self.database = database
    }

    package var description: String { message }
}
