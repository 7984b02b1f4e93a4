import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol

/// An attachment's name, media type, time and size, sealed under the member key
/// (docs/formats/attachment-meta.md): what lets a person tell attachments apart,
/// which the server stores beside the attachment and cannot read.
///
/// Authority: none. It names an attachment for whoever holds the member key; the
/// context binds it to its account, member and address, so the server can drop it or
/// serve an older one of the same attachment, never move it to another attachment.
package struct AttachmentMeta: Sendable, Equatable, Codable {
    /// Format version of the plaintext: 1.
    package var v: Int = 1
    /// The file's name (its last path component), 1 to 255 bytes, no control characters.
    package var name: String
    /// A media type, e.g. `application/pdf`; `application/octet-stream` when unknown.
    package var type: String
    /// Unix seconds: the file's modification time (when the person made or changed it).
    package var time: Int64
    /// The plaintext's size in bytes.
    package var size: UInt64

    package init(name: String, type: String, time: Int64, size: UInt64) {
        self.name = name
        self.type = type
        self.time = time
        self.size = size
    }

    static func context(account: AccountID, member: MemberID, address: ContentAddress) throws -> EnvelopeContext {
        try EnvelopeContext(purpose: "attachment-meta", ["account": account.rawValue, "member": member.rawValue, "address": address.description])
    }

    /// Whether `name` can name an attachment: a file name of 1 to 255 bytes of UTF-8,
    /// without control or text-direction characters or `/`, and not `.` or `..` (it may
    /// become a file's name when attachments are written out).
    package static func isValidName(_ name: String) -> Bool {
        (1...255).contains(name.utf8.count) && name != "." && name != ".." && !name.contains("/")
            && !name.unicodeScalars.contains { $0.properties.generalCategory == .control || $0.properties.isBidiControl }
    }

    /// Why `name` and `type` cannot be sealed, or nil when they can.
    package static func problem(name: String, type: String) -> String? {
        guard isValidName(name) else {
            return "an attachment's name is a file name of 1 to 255 bytes: not '.' or '..', without '/', control or text-direction characters"
        }
        guard (1...255).contains(type.utf8.count), !type.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            return "an attachment's media type has 1 to 255 bytes and no control characters"
        }
        return nil
    }

    /// The envelope, under the meta key of `keys` (their member and generation).
    package func seal(account: AccountID, address: ContentAddress, keys: MemberKeys) throws -> [UInt8] {
        if let problem = Self.problem(name: name, type: type) { throw VaultError(.malformedAttachment, problem) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try Envelope.seal(Array(encoder.encode(self)), under: keys.metaKey, generation: keys.generation,
                                 context: Self.context(account: account, member: keys.member, address: address)).bytes
    }

    /// The member key generation `sealed` names (from its envelope header).
    package static func generation(of sealed: [UInt8]) throws -> UInt32 {
        guard let envelope = try? Envelope(bytes: sealed) else {
            throw VaultError(.malformedAttachment, "an attachment's sealed name is not an envelope")
        }
        return envelope.generation
    }

    /// Opens `sealed` with `keys`, the member keys of the generation it names
    /// (``generation(of:)``).
    ///
    /// - Throws: `VaultError` `address_mismatch` when it does not open for this account,
    ///   member and address (moved from another attachment, or altered), or is not version 1.
    package static func open(_ sealed: [UInt8], account: AccountID, address: ContentAddress, keys: MemberKeys) throws -> AttachmentMeta {
        guard let envelope = try? Envelope(bytes: sealed), envelope.generation == keys.generation,
              let plain = try? envelope.open(using: keys.metaKey, context: context(account: account, member: keys.member, address: address)) else {
            throw VaultError(.addressMismatch, "the name stored with \(address) does not open for it: it was moved from another attachment or altered")
        }
        guard let meta = try? JSONDecoder().decode(AttachmentMeta.self, from: Data(plain.unprotectedCopy())), meta.v == 1,
              problem(name: meta.name, type: meta.type) == nil else {
            throw VaultError(.addressMismatch, "the name stored with \(address) opens but is not a version 1 name")
        }
        return meta
    }

    /// A media type from a file name's extension: the common kinds a family stores.
    package static func mediaType(forName name: String) -> String {
        let ext = URL(fileURLWithPath: name).pathExtension.lowercased()
        return [
            "pdf": "application/pdf", "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "heic": "image/heic",
            "gif": "image/gif", "webp": "image/webp", "txt": "text/plain", "md": "text/markdown", "csv": "text/csv",
            "json": "application/json", "mp4": "video/mp4", "mov": "video/quicktime", "mp3": "audio/mpeg", "m4a": "audio/mp4",
            "doc": "application/msword", "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            "zip": "application/zip",
        ][ext] ?? "application/octet-stream"
    }
}
