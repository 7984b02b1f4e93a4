import KeyVaultCrypto
import KeyVaultModel

/// What the server stores for one attachment (docs/formats/attachment.md): the
/// attachment's data key wrapped under the member key, and the content sealed under
/// that data key. Re-wrapping replaces the small key part and never the content.
///
/// ```
/// version 1: object = 0x01 ‖ u32 big-endian length(key) ‖ key envelope ‖ content envelope
/// version 2: object = 0x02 ‖ u8 s ‖ u32 big-endian length(key) ‖ key envelope ‖ chunk_0 ‖ … ‖ chunk_{n−1}
/// ```
package struct AttachmentObject: Sendable, Equatable {
    /// Version 1: the content in one envelope. Version 2: in chunks (``StreamAEAD``).
    package static let wholeVersion: UInt8 = 1
    package static let streamedVersion: UInt8 = 2
    /// The smallest envelope (XChaCha20-Poly1305, empty plaintext) has 62 bytes.
    package static let minimumEnvelopeBytes = 62
    package static let maximumKeyBytes = 4096
    /// A chunk holds 2^s bytes of content: from 1 KiB (vectors, tests) to 4 MiB, which
    /// bounds what a reader holds at once; writers use 1 MiB.
    package static let chunkShifts: ClosedRange<UInt8> = 10...22
    package static let defaultChunkShift: UInt8 = 20

    package var version: UInt8
    /// Version 2's chunk size exponent (0 in version 1).
    package var chunkShift: UInt8
    /// The envelope of the data key, under the member's attachment key-wrap key.
    package var key: [UInt8]
    /// Version 1: the envelope of the content. Version 2: the sealed chunks, back to back.
    package var content: [UInt8]

    /// A version 1 object.
    package init(key: [UInt8], content: [UInt8]) {
        self.init(version: Self.wholeVersion, chunkShift: 0, key: key, content: content)
    }

    /// A version 2 object: `chunks` are the sealed chunks back to back.
    package init(key: [UInt8], chunkShift: UInt8, chunks: [UInt8]) {
        self.init(version: Self.streamedVersion, chunkShift: chunkShift, key: key, content: chunks)
    }

    private init(version: UInt8, chunkShift: UInt8, key: [UInt8], content: [UInt8]) {
        self.version = version
        self.chunkShift = chunkShift
        self.key = key
        self.content = content
    }

    /// Parses the binary form, checking the key part is an envelope and the content
    /// is framed as its version says.
    ///
    /// - Throws: `ProtocolError` `malformed_attachment` naming what is wrong.
    package init(bytes: some Collection<UInt8>) throws {
        let bytes = Array(bytes)
        guard let version = bytes.first, version == Self.wholeVersion || version == Self.streamedVersion else {
            throw ProtocolError(.malformedAttachment, "an attachment object starts with version 1 or 2")
        }
        let lengthAt = version == Self.streamedVersion ? 2 : 1
        guard bytes.count >= lengthAt + 4 else {
            throw ProtocolError(.malformedAttachment, "the attachment object is truncated before its key length")
        }
        let length = bytes[lengthAt..<(lengthAt + 4)].reduce(0) { $0 << 8 | Int($1) }
        let keyAt = lengthAt + 4
        guard (Self.minimumEnvelopeBytes...Self.maximumKeyBytes).contains(length), bytes.count >= keyAt + length else {
            throw ProtocolError(.malformedAttachment, "the attachment object is truncated or its key part has the wrong length")
        }
        let key = Array(bytes[keyAt..<(keyAt + length)])
        let content = Array(bytes[(keyAt + length)...])
        try Self.checkKey(key)
        if version == Self.streamedVersion {
            self.init(key: key, chunkShift: bytes[1], chunks: content)
        } else {
            self.init(key: key, content: content)
        }
        try checkContent()
    }

    /// What the server keeps beside the key part: version 1's content envelope as it
    /// is, version 2's header (`0x02 ‖ s`) and chunks. The first byte tells them apart:
    /// an envelope starts with its own version, 1.
    package var storedContent: [UInt8] {
        version == Self.streamedVersion ? [version, chunkShift] + content : content
    }

    /// The object from its key part and ``storedContent`` (checked when it was
    /// stored; a reader checks it again).
    package init(key: [UInt8], storedContent: [UInt8]) {
        if storedContent.first == Self.streamedVersion, storedContent.count >= 2 {
            self.init(key: key, chunkShift: storedContent[1], chunks: Array(storedContent[2...]))
        } else {
            self.init(key: key, content: storedContent)
        }
    }

    private func checkContent() throws {
        if version == Self.streamedVersion {
            _ = try chunkLayout()
        } else {
            try Self.checkEnvelope(content, "content")
        }
    }

    /// Where each sealed chunk of a version 2 object is in ``content``.
    ///
    /// - Throws: `malformed_attachment` for a chunk size outside 2^10…2^22, no chunk,
    ///   or an empty last chunk after others.
    package func chunkLayout() throws -> ChunkLayout {
        guard version == Self.streamedVersion else {
            throw ProtocolError(.malformedAttachment, "a version \(version) attachment is not in chunks")
        }
        return try ChunkLayout(chunkShift: chunkShift, sealedLength: content.count)
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

    /// The largest sealed name and details of an attachment (docs/formats/attachment-meta.md).
    package static let maximumMetaBytes = 4096

    /// Whether `bytes` is an attachment's sealed name and details: an envelope of at most
    /// ``maximumMetaBytes`` (the server opens nothing).
    package static func checkMeta(_ bytes: [UInt8]) throws {
        guard (minimumEnvelopeBytes...maximumMetaBytes).contains(bytes.count) else {
            throw ProtocolError(.malformedAttachment, "an attachment's sealed name is an envelope of 62 to \(maximumMetaBytes) bytes")
        }
        try checkEnvelope(bytes, "name")
    }

    /// The size of a version 2 object holding `length` content bytes in chunks of
    /// 2^chunkShift, with a key part of `keyLength` bytes (an XChaCha20-Poly1305
    /// envelope of a 32-byte key has 94).
    package static func streamedSize(ofContent length: Int, chunkShift: UInt8 = defaultChunkShift, keyLength: Int = 94) -> Int {
        2 + 4 + keyLength + length + ChunkLayout.count(ofContent: length, chunkShift: chunkShift) * StreamAEAD.tagByteCount
    }

    package var bytes: [UInt8] {
        let n = UInt32(key.count)
        let length = [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)]
        return (version == Self.streamedVersion ? [version, chunkShift] : [version]) + length + key + content
    }
}

/// How a version 2 object's sealed chunks lie back to back (docs/formats/attachment.md,
/// "Reading"): every chunk but the last is 2^s + 16 bytes; the last is what remains
/// (16 to 2^s + 16 bytes, and more than 16 unless it is the only one).
package struct ChunkLayout: Sendable, Equatable {
    package let chunkShift: UInt8
    package let sealedLength: Int
    package let count: Int

    /// Content bytes in every chunk but the last.
    package var chunkSize: Int { 1 << Int(chunkShift) }
    package var sealedChunkSize: Int { chunkSize + StreamAEAD.tagByteCount }

    package init(chunkShift: UInt8, sealedLength: Int) throws {
        guard AttachmentObject.chunkShifts.contains(chunkShift) else {
            throw ProtocolError(.malformedAttachment, "an attachment's chunk size is 2^10 to 2^22 bytes, not 2^\(chunkShift)")
        }
        let full = (1 << Int(chunkShift)) + StreamAEAD.tagByteCount
        guard sealedLength >= StreamAEAD.tagByteCount else {
            throw ProtocolError(.malformedAttachment, "an attachment in chunks has at least one chunk")
        }
        let count = (sealedLength + full - 1) / full
        let last = sealedLength - (count - 1) * full
        guard count == 1 || last > StreamAEAD.tagByteCount else {
            throw ProtocolError(.malformedAttachment, "the last chunk of the attachment is empty")
        }
        self.chunkShift = chunkShift
        self.sealedLength = sealedLength
        self.count = count
    }

    /// The bytes of sealed chunk `index` within the content.
    package func range(of index: Int) -> Range<Int> {
        let start = index * sealedChunkSize
        return start..<min(start + sealedChunkSize, sealedLength)
    }

    /// The content's length once opened.
    package var plaintextLength: Int { sealedLength - count * StreamAEAD.tagByteCount }

    /// The chunks `length` content bytes take: max(1, ⌈length / 2^chunkShift⌉).
    package static func count(ofContent length: Int, chunkShift: UInt8) -> Int {
        max(1, (length + (1 << Int(chunkShift)) - 1) >> Int(chunkShift))
    }

    /// The sealed length of chunk `index` of content `length` bytes long.
    package static func sealedLength(ofChunk index: Int, content length: Int, chunkShift: UInt8) -> Int {
        let size = 1 << Int(chunkShift), count = Self.count(ofContent: length, chunkShift: chunkShift)
        return (index < count - 1 ? size : length - (count - 1) * size) + StreamAEAD.tagByteCount
    }

    /// The largest sealed chunk a reader takes (2^22 + 16 bytes).
    package static let maximumSealedChunkBytes = (1 << Int(AttachmentObject.chunkShifts.upperBound)) + StreamAEAD.tagByteCount
}
