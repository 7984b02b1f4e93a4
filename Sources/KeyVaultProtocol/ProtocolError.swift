/// Why a link, box or request was refused. `code` is the snake_case string the
/// HTTP API returns and clients match on (docs/api.md, "Error codes").
public struct ProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: String
    public let message: String

    public init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    static func malformed(_ message: String) -> ProtocolError { ProtocolError("malformed_link", message) }
}
