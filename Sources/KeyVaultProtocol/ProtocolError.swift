import KeyVaultModel

/// Why a link, box or request was refused. `code` is what the HTTP API returns and
/// clients match on (docs/api.md, "Errors").
package struct ProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    package let code: ErrorCode
    package let message: String

    package init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }

    static func malformed(_ message: String) -> ProtocolError { ProtocolError(.malformedLink, message) }
}
