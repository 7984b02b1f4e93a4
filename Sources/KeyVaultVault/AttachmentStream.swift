import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol

/// Version 2 attachments: content sealed in chunks (docs/formats/attachment.md,
/// "version 2"), so that any size passes through a bounded amount of memory.
extension AttachmentCrypto {
    /// AD of every chunk: "keyvault/v2/attachment-chunk" ‖ 0x00 ‖ header (0x02 ‖ s).
    static func chunkAAD(chunkShift: UInt8) -> [UInt8] {
        Array("keyvault/v2/attachment-chunk".utf8) + [0, AttachmentObject.streamedVersion, chunkShift]
    }

    /// PK = HKDF-SHA256(DEK, info "keyvault/v2/attachment-payload"): seals the chunks only.
    static func payloadKey(_ dataKey: SymmetricKey) throws -> SymmetricKey {
        try HKDF.deriveKey(from: dataKey, info: Array("keyvault/v2/attachment-payload".utf8))
    }

    /// Seals the content `read` hands over in pieces of any size (a file read in
    /// order, say), in chunks as they fill, and checks that what was read has
    /// `address`: content that changed since it was addressed is refused, sealed for
    /// nothing. Holds one chunk of content at a time (and the sealed object).
    ///
    /// - Throws: `VaultError` `address_mismatch` when the content read is not the content addressed.
    package static func seal(reading read: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void, address: ContentAddress,
                             account: AccountID, keys: MemberKeys,
                             chunkShift: UInt8 = AttachmentObject.defaultChunkShift) throws -> AttachmentObject {
        var sealer = AttachmentSealer(chunkShift: chunkShift)
        var hasher = try ContentAddressHasher(key: keys.contentAddressKey)
        let size = 1 << Int(chunkShift)
        var pending = [UInt8]()
        pending.reserveCapacity(size)
        defer { secureWipe(&pending) }
        var chunks = [UInt8]()
        try read { piece in
            try hasher.update(piece)
            var rest = piece[...]
            while !rest.isEmpty {
                // A full chunk is sealed only once more content shows it is not the last.
                if pending.count == size {
                    chunks += try sealer.seal(pending, last: false)
                    secureWipe(&pending)
                    pending.removeAll(keepingCapacity: true)
                }
                let take = min(size - pending.count, rest.count)
                pending += rest.prefix(take)
                rest = rest.dropFirst(take)
            }
        }
        chunks += try sealer.seal(pending, last: true)
        try check(try hasher.finalize(), against: address)
        return AttachmentObject(key: try sealer.wrapKey(address: address, account: account, keys: keys), chunkShift: chunkShift, chunks: chunks)
    }

    /// Opens an object of either version, handing its content to `sink` in pieces
    /// (a version 2 object chunk by chunk, as each opens). The content address is
    /// checked last: until this returns, what `sink` got may be cut short or another
    /// content, so a sink that writes a file keeps it apart until then.
    ///
    /// - Throws: `VaultError` `address_mismatch` when anything does not open or the
    ///   content's address is not `address`.
    package static func open(_ object: AttachmentObject, address: ContentAddress, account: AccountID,
                             keyKeys: MemberKeys, addressKeys: MemberKeys, into sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard object.version == AttachmentObject.streamedVersion else {
            try open(object, address: address, account: account, keyKeys: keyKeys, addressKeys: addressKeys).withUnsafeBytes(sink)
            return
        }
        let dataKey = try openDataKey(object.key, address: address, account: account, keys: keyKeys)
        try openStreamed(object, dataKey: dataKey, address: address, addressKeys: addressKeys) { try $0.withUnsafeBytes(sink) }
    }

    /// Opens a version 2 object whole, checking its content address as the chunks pass.
    static func openStreamed(_ object: AttachmentObject, dataKey: SymmetricKey, address: ContentAddress,
                             addressKeys: MemberKeys) throws -> SecureBytes {
        let layout = try layout(of: object, address: address)
        return try SecureBytes(count: layout.plaintextLength) { out in
            var at = 0
            try openStreamed(object, dataKey: dataKey, address: address, addressKeys: addressKeys) { chunk in
                chunk.withUnsafeBytes { bytes in
                    UnsafeMutableRawBufferPointer(rebasing: out[at..<(at + bytes.count)]).copyMemory(from: bytes)
                    at += bytes.count
                }
            }
        }
    }

    /// Each chunk of a version 2 object, opened in order, then the content address checked.
    private static func openStreamed(_ object: AttachmentObject, dataKey: SymmetricKey, address: ContentAddress,
                                     addressKeys: MemberKeys, chunk sink: (SecureBytes) throws -> Void) throws {
        let layout = try layout(of: object, address: address)
        let opener = try AttachmentOpener(dataKey: dataKey, chunkShift: object.chunkShift, address: address)
        var hasher = try ContentAddressHasher(key: addressKeys.contentAddressKey)
        for index in 0..<layout.count {
            let chunk = try opener.open(Array(object.content[layout.range(of: index)]), index: index, of: layout.count)
            try chunk.withUnsafeBytes { try hasher.update($0) }
            try sink(chunk)
        }
        try check(hasher.finalize(), against: address)
    }

    private static func layout(of object: AttachmentObject, address: ContentAddress) throws -> ChunkLayout {
        do {
            return try object.chunkLayout()
        } catch let error as ProtocolError {
            throw VaultError(.addressMismatch, "the content stored at \(address) is not framed in chunks: \(error.message)")
        }
    }

    /// The content address computed over the opened content is the one asked for
    /// (constant-time), or the object is refused.
    package static func check(_ actual: ContentAddress, against address: ContentAddress) throws {
        guard constantTimeEquals(actual.mac, address.mac), actual.generation == address.generation else {
            throw VaultError(.addressMismatch, "the content stored at \(address) does not match its address")
        }
    }
}

/// Seals one attachment's chunks, in order, under a fresh data key; then wraps that
/// key for the member, bound to the content address (known only once every chunk
/// passed, when the content is read once).
package struct AttachmentSealer: ~Copyable {
    private let dataKey: SymmetricKey
    private var stream: StreamAEAD.Sealer
    package let chunkShift: UInt8

    package init(chunkShift: UInt8 = AttachmentObject.defaultChunkShift) {
        // A fresh DEK, so PK derives: HKDF only fails on a key of the wrong length.
        try! self.init(dataKey: SymmetricKey(), chunkShift: chunkShift)
    }

    /// Resumes an upload under the data key its key part wraps. The caller answers for
    /// never sending other content at an index sent before (the upload journal: the
    /// tag of each chunk sealed again is compared before it leaves).
    package init(resuming dataKey: SymmetricKey, chunkShift: UInt8) throws {
        try self.init(dataKey: dataKey, chunkShift: chunkShift)
    }

    private init(dataKey: SymmetricKey, chunkShift: UInt8) throws {
        precondition(AttachmentObject.chunkShifts.contains(chunkShift))
        self.dataKey = dataKey
        self.chunkShift = chunkShift
        stream = StreamAEAD.Sealer(key: try AttachmentCrypto.payloadKey(dataKey),
                                   authenticating: AttachmentCrypto.chunkAAD(chunkShift: chunkShift))
    }

    /// Seals the next chunk: 2^chunkShift bytes, but for the last (1 to 2^chunkShift
    /// bytes, or empty when it is the only one).
    package mutating func seal(_ chunk: some RawBytes, last: Bool) throws -> [UInt8] {
        let size = 1 << Int(chunkShift), count = chunk.withUnsafeBytes(\.count)
        precondition(last ? count <= size && (count > 0 || stream.index == 0) : count == size,
                     "a chunk of \(count) bytes where the format says otherwise")
        return try stream.seal(chunk, last: last)
    }

    /// The key part: the data key wrapped under the member's key-wrap key, bound to
    /// the account, the member and the content's address.
    package func wrapKey(address: ContentAddress, account: AccountID, keys: MemberKeys) throws -> [UInt8] {
        try AttachmentCrypto.wrapDataKey(dataKey, address: address, account: account, keys: keys)
    }
}

/// Opens the chunks of one version 2 attachment, whose data key opened from its key
/// part (which binds it to the address).
package struct AttachmentOpener: Sendable {
    private let payloadKey: SymmetricKey
    private let aad: [UInt8]
    private let address: ContentAddress

    package init(dataKey: SymmetricKey, chunkShift: UInt8, address: ContentAddress) throws {
        payloadKey = try AttachmentCrypto.payloadKey(dataKey)
        aad = AttachmentCrypto.chunkAAD(chunkShift: chunkShift)
        self.address = address
    }

    /// Opens sealed chunk `index` of `count`.
    ///
    /// - Throws: `VaultError` `address_mismatch` when it is not that chunk of this
    ///   object (moved, cut, from another object, altered).
    package func open(_ sealed: [UInt8], index: Int, of count: Int) throws -> SecureBytes {
        do {
            return try StreamAEAD.open(sealed, index: UInt64(index), last: index == count - 1, using: payloadKey, authenticating: aad)
        } catch is CryptoError {
            throw doesNotOpen(index, of: count)
        }
    }

    /// Opens sealed chunk `index` of `count` into `scratch` and lends its content to
    /// `body` (the scratch is wiped after).
    ///
    /// - Throws: as ``open(_:index:of:)``; whatever `body` throws.
    package func open<R>(_ sealed: [UInt8], index: Int, of count: Int, into scratch: inout SecureScratch,
                         _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        guard sealed.count >= StreamAEAD.tagByteCount, sealed.count - StreamAEAD.tagByteCount <= scratch.count else {
            throw doesNotOpen(index, of: count)
        }
        return try scratch.withWritten(sealed.count - StreamAEAD.tagByteCount, { out in
            do {
                try StreamAEAD.open(sealed, index: UInt64(index), last: index == count - 1, using: payloadKey, authenticating: aad, into: out)
            } catch is CryptoError {
                throw doesNotOpen(index, of: count)
            }
        }, body)
    }

    private func doesNotOpen(_ index: Int, of count: Int) -> VaultError {
        VaultError(.addressMismatch, "chunk \(index) of \(count) of the content stored at \(address) does not open: it was moved, cut or altered")
    }
}
