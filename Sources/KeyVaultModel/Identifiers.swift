/// Identifiers are 32 lowercase hex digits (128 bits), wrapped so that an account
/// id cannot be passed where a device id is expected.
public protocol HexIdentifier: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible, LosslessStringConvertible
where RawValue == String {
    init(unchecked: String)
}

extension HexIdentifier {
    /// Accepts exactly 32 lowercase hex digits.
    public init?(rawValue: String) {
        guard Self.isValid(rawValue) else { return nil }
        self.init(unchecked: rawValue)
    }

    public init?(_ description: String) { self.init(rawValue: description) }

    public var description: String { rawValue }

    public static func isValid(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = Self(rawValue: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                    debugDescription: "expected 32 lowercase hex digits"))
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// An account: the first 16 bytes of its genesis link's hash, in hex.
public struct AccountID: HexIdentifier {
    public let rawValue: String
    public init(unchecked: String) { rawValue = unchecked }
}

/// A device: derived from its Ed25519 signing key (docs/formats/account-chain.md).
public struct DeviceID: HexIdentifier {
    public let rawValue: String
    public init(unchecked: String) { rawValue = unchecked }
}

/// A family member: 16 random bytes chosen by the client that adds them.
public struct MemberID: HexIdentifier {
    public let rawValue: String
    public init(unchecked: String) { rawValue = unchecked }
}
