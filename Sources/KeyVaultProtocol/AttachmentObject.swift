import KeyVaultCrypto
import KeyVaultModel

/// What the server stores for one attachment (docs/formats/attachment.md): the
/// attachment's data key wrapped under the member key, and the content sealed under
/// that data key. Re-wrapping replaces the small key part and never the content.
///
/// ```
/// object = 0x01 ‖ u32 big-endian length(key) ‖ key envelope ‖ content envelope
/// ```
package struct AttachmentObject: Sendable, Equatable {
    package static let version: UInt8 = 1
    /// The smallest envelope (XChaCha20-Poly1305, empty plaintext) has 62 bytes.
    package static let minimumEnvelopeBytes = 62
    package static let maximumKeyBytes = 4096

    /// The envelope of the data key, under the member's attachment key-wrap key.
    package var key: [UInt8]
    /// The envelope of the content, under the data key.
    package var content: [UInt8]

    package init(key: [UInt8], content: [UInt8]) {
        self.key = key
        self.content = content
    }

    /// Parses the binary form, checking that both parts are envelopes.
    ///
    /// - Throws: `ProtocolError` `malformed_attachment` naming what is wrong.
    package init(bytes: some Collection<UInt8>) throws {
        let bytes = Array(bytes)
        guard bytes.count >= 5, bytes[0] == Self.version else {
            throw ProtocolError(.malformedAttachment, "an attachment object starts with version 1 and the key length")
        }
        let length = bytes[1..<5].reduce(0) { $0 << 8 | Int($1) }
        guard (Self.minimumEnvelopeBytes...Self.maximumKeyBytes).contains(length),
              bytes.count >= 5 + length + Self.minimumEnvelopeBytes else {
            throw ProtocolError(.malformedAttachment, "the attachment object is truncated or its key part has the wrong length")
        }
        let key = Array(bytes[5..<(5 + length)])
        let content = Array(bytes[(5 + length)...])
        try Self.checkEnvelope(key, "key")
        try Self.checkEnvelope(content, "content")
        self.init(key: key, content: content)
    }

    static func checkEnvelope(_ bytes: [UInt8], _ part: String) throws {
        do {
            _ = try Envelope(bytes: bytes)
        } catch let error as CryptoError {
            throw ProtocolError(.malformedAttachment, "the attachment's \(part) part is not an envelope: \(error.message)")
        }
    }

    /// Whether `bytes` is a key part on its own (for re-wrapping).
    package static func checkKey(_ bytes: [UInt8]) throws {
        guard (minimumEnvelopeBytes...maximumKeyBytes).contains(bytes.count) else {
            throw ProtocolError(.malformedAttachment, "an attachment key is an envelope of 62 to 4096 bytes")
        }
        try checkEnvelope(bytes, "key")
    }

    package var bytes: [UInt8] {
        let n = UInt32(key.count)
        return [Self.version, UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + key + content
    }
}
