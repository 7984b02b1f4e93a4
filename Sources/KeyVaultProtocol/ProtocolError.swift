import KeyVaultModel

/// Why a link, box or request was refused. `code` is what the HTTP API returns and
/// clients match on (docs/api.md, "Errors").
public struct ProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: ErrorCode
    public let message: String

    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    static func malformed(_ message: String) -> ProtocolError { ProtocolError(.malformedLink, message) }
}
