import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultVault

extension Vault {
    /// The account whose member this is (the sharer's for a shared member): attachments are bound to it.
    func owner(of member: Member) -> AccountID { member.sharer ?? account }

    /// The content address of a file under the member's newest key (nothing is uploaded).
    ///
    /// - Throws: ``KeyVaultError`` `io` when the file cannot be read.
    public func address(ofFileAt path: String, member: Member) async throws -> ContentAddress {
        try await exclusively {
            let keys = try await memberKeys(member, generation: member.generation)
            do {
                return try keys.contentAddressKey.address(ofFileAt: path)
            } catch let error as CryptoError {
                throw KeyVaultError(.io, "cannot read \(path): \(error.message)")
            }
        }
    }

    /// `12.1 MB`: a size as file managers say it.
    public static func sizeText(_ bytes: Int) -> String {
        ByteCountFormatter.string(fromByteCount: Int64(bytes), countStyle: .file)
    }

    public struct PutResult: Sendable {
        public let address: ContentAddress
        public let size: Int
        public let existed: Bool
        /// Chunks an upload cut off before had stored already, not sent again (0 for an
        /// upload that started afresh).
        public var resumedChunks = 0
        /// Why the name given was not stored, when it was not: a shared member's attachment
        /// that has a name already (only the sharer's devices rename), or a server that takes
        /// no names from a grantee. The content is stored all the same.
        public var nameNotStored: String?
    }

    /// Seals a file for a member and uploads it under its content address
    /// (``put(_:member:)`` with the file's content). The file is read twice, to
    /// address it and then to seal it, one chunk at a time: memory stays bounded
    /// whatever its size. An upload cut off before (the network, a killed process, a
    /// server restart) goes on after the chunks the server holds when the storage has
    /// a ``DeviceStorage/transferDirectory`` (docs/api.md, "Resuming").
    ///
    /// - Throws: ``KeyVaultError`` `io` when the file cannot be read or changed while
    ///   it was read; `payload_too_large` before anything is read when the server
    ///   takes no attachment that large.
    ///
    /// The file's name (its last path component), media type (from its extension),
    /// modification time and size are stored with it, sealed under the member key
    /// (docs/formats/attachment-meta.md): ``attachments(member:)`` shows them, and
    /// ``attachment(named:member:)`` finds it by name. For a member another account shares
    /// with this one, only when the attachment has no name yet (``PutResult/nameNotStored``
    /// says why not): its sharer's devices alone rename.
    public func put(fileAt path: String, member: Member) async throws -> PutResult {
        var info = stat()
        guard stat(path, &info) == 0 else { throw KeyVaultError(.io, "cannot read \(path): \(String(cString: strerror(errno)))") }
        let name = String(path.split(separator: "/").last ?? Substring(path))
        let modified = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date) ?? Date()
        let meta = AttachmentMeta.isValidName(name)
            ? AttachmentMeta(name: name, type: AttachmentMeta.mediaType(forName: name),
                             time: Int64(exactly: modified.timeIntervalSince1970.rounded(.down)) ?? 0, size: UInt64(info.st_size))
            : nil
        return try await put(size: Int(info.st_size), member: member, what: path, meta: meta, reading: { body in
            do {
                try forEachChunk(ofFileAt: path) { piece, _ in try body(piece) }
            } catch let error as CryptoError {
                throw KeyVaultError(.io, error.message)
            }
        }, chunks: { try ChunkReader(path: path, size: $0) })
    }

    /// Seals `plaintext` for `member` under the member's newest key and uploads it
    /// under its content address (the same bytes for the same member are stored once).
    /// A rotation an earlier revocation left undone is finished first, so nothing new
    /// is sealed under a key a revoked device knows.
    ///
    /// Appends, before it uploads: any work a revocation or recovery rotation left undone
    /// (``finishPendingRotations()``); for each grant of the member whose grantee's
    /// identity changed, `share.revoke` and then `member.rotate`. An upload itself writes
    /// no link.
    ///
    /// With a `name` (1 to 255 bytes, no control characters), the name, `mediaType`
    /// (from the name's extension when nil), the time now and the size are stored with
    /// it, sealed under the member key, as ``put(fileAt:member:)`` stores a file's.
    ///
    /// - Throws: ``KeyVaultError`` `payload_too_large` before anything is sealed when
    ///   the server takes no attachment that large; `invalid_input` for a name that
    ///   cannot be one.
    public func put(_ plaintext: [UInt8], member given: Member, name: String? = nil, mediaType: String? = nil) async throws -> PutResult {
        // Checked before anything is read or sent: a name refused after the upload would leave it nameless.
        let meta = try name.map { name in
            AttachmentMeta(name: name, type: try Self.mediaType(mediaType, forName: name), time: Int64(Date().timeIntervalSince1970),
                           size: UInt64(plaintext.count))
        }
        return try await put(size: plaintext.count, member: given, what: "the content", meta: meta,
                             reading: { body in try plaintext.withUnsafeBytes(body) }, chunks: { ChunkReader(bytes: plaintext, size: $0) })
    }

    /// An upload of content `read` hands over in pieces, as often as asked: once to
    /// address it, then to seal it, in chunks as `chunks` reads them (a shared member's
    /// through its sharer's relay) or, to a server too old to take chunks, whole.
    private func put(size: Int, member given: Member, what: String, meta: AttachmentMeta?,
                     reading read: @escaping ((UnsafeRawBufferPointer) throws -> Void) throws -> Void,
                     chunks: @escaping (Int) throws -> ChunkReader) async throws -> PutResult {
        try await exclusively {
            // A shared member as its sharer's chain has it now: checked again, its newest generation.
            let member = try await current(given)
            guard !member.readOnly else {
                throw KeyVaultError(.readOnlyGrant, "\(member.name) is shared with this account read-only by \(owner(of: member)): nothing can be put",
                                    kind: .input)
            }
            // Before any work: what the server would refuse anyway is not read or sealed.
            // In chunks when the server takes them (it says its limits), a shared member's
            // through its sharer's relay: a bounded amount of memory on both sides, whatever
            // the size. A relay that takes no chunks (an older server) takes it whole.
            let (inChunks, limit): (Bool, Int?) = switch (try await api.attachmentLimits(), member.sharer) {
            case (nil, _): (false, nil)
            case (let limits?, nil): (true, limits.any)
            case (let limits?, _?): (limits.shared != nil, limits.shared ?? limits.whole)
            }
            if let limit, AttachmentObject.streamedSize(ofContent: size) > limit {
                throw KeyVaultError(.payloadTooLarge, "\(what) is \(Vault.sizeText(size)), and this server takes attachments of up to about \(Vault.sizeText(limit))\(inChunks ? "" : " shared this way"): nothing was read or sent",
                                    kind: .rejected)
            }
            let keys = try await keysToSeal(for: member)
            var hasher = try ContentAddressHasher(key: keys.contentAddressKey)
            try read { try hasher.update($0) }
            let address = try hasher.finalize()
            let changed = KeyVaultError(.io, "\(what) changed while it was read: nothing was kept; try again once it is written")
            var resumed = 0
            func upload(replace: Bool) async throws -> AttachmentInfo {
                if inChunks {
                    return try await uploadInChunks(chunks, size: size, address: address, member: member, keys: keys,
                                                    replace: replace, changed: changed, resumed: &resumed)
                }
                let object: AttachmentObject
                do {
                    object = try AttachmentCrypto.seal(reading: read, address: address, account: owner(of: member), keys: keys)
                } catch let error as VaultError where error.code == .addressMismatch {
                    throw changed
                }
                return try await api.putAttachment(member: member.id, address: address, object: object, sharer: member.sharer,
                                                   replace: replace)
            }
            var info = try await upload(replace: false)
            // "Already there" may be an object another party holding the key (a grantee)
            // stored at an address it could predict, and that does not open: a device of
            // this account checks, and replaces it rather than let its upload vanish.
            if info.existed == true, member.sharer == nil {
                var current = member
                current.generation = keys.generation
                do {
                    // It opens and has this address: the same content (HMAC-SHA256 under the member's key).
                    try await open(address, member: current) { _ in }
                } catch let error as KeyVaultError where error.kind == .verification {
                    // Another party's object (a network failure is no reason to replace anything).
                    progress(.replacingUnopenableAttachment(address))
                    info = try await upload(replace: true)
                }
            }
            // Its name, sealed for the account that owns the member: the newest put's name is the
            // one it has; a grantee's names only an attachment that has none.
            var nameNotStored: String?
            if let meta {
                let sealed = try meta.seal(account: owner(of: member), address: address, keys: keys)
                do {
                    try await api.putAttachmentMeta(member: member.id, address: address, meta: sealed, sharer: member.sharer)
                } catch let error as KeyVaultError where member.sharer != nil && error.code == .attachmentNamed {
                    nameNotStored = "it has a name already, which only the sharer's devices change"
                } catch let error as KeyVaultError where member.sharer != nil && error.code == .notFound {
                    nameNotStored = "the server took no name for it (a server older than names from a grantee, or the share just ended)"
                }
            }
            return PutResult(address: address, size: size, existed: info.existed ?? false, resumedChunks: resumed, nameNotStored: nameNotStored)
        }
    }

    /// `given`, or the type `name`'s extension names: `invalid_input` for a name (or type)
    /// that cannot be one.
    static func mediaType(_ given: String?, forName name: String) throws -> String {
        let type = given ?? AttachmentMeta.mediaType(forName: name)
        if let problem = AttachmentMeta.problem(name: name, type: type) { throw KeyVaultError(.invalidInput, problem) }
        return type
    }

    /// The member keys to seal content or a name for `member` under, after what must come
    /// first: the newest chain, and a revocation another device made since followed by its
    /// rotation (an upload or a name writes no link, so no stale_chain would say so); a
    /// grantee whose identity changed (a revocation on its side) must not read what is
    /// sealed from now on: its share ends, and the key moves on without it. Then the
    /// member's newest generation from the chain, which finishing a rotation may have moved
    /// (a shared member's: as its sharer's chain said when it was read).
    func keysToSeal(for member: Member) async throws -> MemberKeys {
        try await sync()
        try await finishRevocationFirst()
        if member.sharer == nil, try await endGrantsToChangedContacts(of: member.id) {
            try await rotateMember(member.id)
        }
        return try await memberKeys(member, generation: try newest(member).generation)
    }

    /// Seals content chunk by chunk under a fresh data key and puts each chunk as it is
    /// sealed (docs/api.md, "Attachments in chunks"); the server makes it the attachment
    /// once every chunk is there. Content that is not what was addressed is never
    /// completed (the server drops the unfinished upload after a day).
    ///
    /// With a transfer directory, the upload keeps a journal there (``UploadJournal``) and
    /// one cut off resumes after the chunks the server holds, under the same data key,
    /// every chunk checked against the journal first (docs/api.md, "Resuming").
    private func uploadInChunks(_ chunks: (Int) throws -> ChunkReader, size: Int, address: ContentAddress, member: Member,
                                keys: MemberKeys, replace: Bool, changed: KeyVaultError, resumed: inout Int) async throws -> AttachmentInfo {
        let shift = AttachmentObject.defaultChunkShift
        let count = ChunkLayout.count(ofContent: size, chunkShift: shift)
        let directory = home.storage.transferDirectory
        if let directory { UploadJournal.sweep(directory) }
        let path = directory.map { UploadJournal.path(in: $0, account: owner(of: member), member: member.id, address: address) }
        var sealer: AttachmentSealer
        let journal: UploadJournal?, upload: String, stored: Int
        if let (found, dataKey, status) = try await resumableUpload(at: path, size: size, count: count, address: address, member: member) {
            sealer = try AttachmentSealer(resuming: dataKey, chunkShift: shift)
            (journal, upload, stored) = (found, found.header.upload, status.stored)
            resumed = stored
            progress(.resumingAttachment(from: stored, of: count))
        } else {
            sealer = AttachmentSealer(chunkShift: shift)
            let key = try sealer.wrapKey(address: address, account: owner(of: member), keys: keys)
            let started = try await api.beginUpload(member: member.id, address: address, key: key, chunkShift: shift,
                                                    size: size, sharer: member.sharer, replace: replace)
            if started.existed, !replace { return AttachmentInfo(address: address.description, size: 0, created: 0, existed: true) }
            guard let id = started.upload, started.chunks == count else {
                throw KeyVaultError(.badResponse, "the server's answer to an upload of \(count) chunks names \(started.chunks)")
            }
            (upload, stored) = (id, 0)
            journal = try path.map {
                try UploadJournal(creating: $0, header: .init(upload: id, key: base64Encode(key), chunkShift: Int(shift), size: size))
            }
        }
        var hasher = try ContentAddressHasher(key: keys.contentAddressKey)
        let reader = try chunks(1 << Int(shift))
        var index = 0
        // A few chunks in flight at once (each its own request on the transport's kept-open
        // connections): sealing and reading the file overlap the network. Memory: that many
        // sealed chunks. A failure stops the rest; the server's stored prefix says where a
        // resumption goes on.
        let api = self.api
        var sending = ChunkWindow<Void>(width: Self.chunksInFlight), sent = 0
        do {
            while case (var chunk, let last)? = try reader.next() {
                defer { secureWipe(&chunk) }
                guard index < count else { throw ContentChanged() }
                try hasher.update(chunk)
                // Sealed, then journaled before it leaves: a chunk sealed before under this data
                // key may only ever go again with the same content, which its tag says.
                let sealed = try sealer.seal(chunk, last: last)
                if let journal {
                    let tag = Array(sealed.suffix(UploadJournal.recordBytes))
                    if index < journal.count {
                        guard constantTimeEquals(tag, try journal.record(index)) else { throw ContentChanged() }
                    } else {
                        try journal.append(tag)
                    }
                }
                if index < stored {
                    sent += 1
                    progress(.sendingAttachment(done: sent, of: count))
                } else {
                    if sending.isFull {
                        try await sending.next()
                        sent += 1
                        progress(.sendingAttachment(done: sent, of: count))
                    }
                    sending.add { [index, member] in
                        try await api.putUploadChunk(member: member.id, address: address, sharer: member.sharer, upload: upload,
                                                     index: index, chunk: sealed)
                    }
                }
                index += 1
                try Task.checkCancellation()
            }
            while !sending.isEmpty {
                try await sending.next()
                sent += 1
                progress(.sendingAttachment(done: sent, of: count))
            }
            do {
                try AttachmentCrypto.check(try hasher.finalize(), against: address)
            } catch {
                throw ContentChanged()
            }
            guard index == count else { throw ContentChanged() }
        } catch {
            // Nothing of this upload goes on after it failed.
            await sending.stop()
            guard error is ContentChanged else { throw error }
            // This upload cannot be completed or resumed: the next one starts afresh.
            journal?.remove()
            throw changed
        }
        let info: AttachmentInfo
        do {
            info = try await api.completeUpload(member: member.id, address: address, sharer: member.sharer, upload: upload, replace: replace)
        } catch let error as KeyVaultError where error.status == 400 {
            // The server lacks chunks it said it held: this upload is not resumed again.
            journal?.remove()
            throw error
        }
        journal?.remove()
        return info
    }

    /// Chunks of a transfer on the network at once.
    static let chunksInFlight = 3

    /// The content read is not what was addressed, or not what the journal says was sealed.
    private struct ContentChanged: Error {}

    /// The upload this device began for this content and did not finish, if the server
    /// still has it: its journal, its data key (from the key part this device made, which
    /// opens only for this account, member and address) and where it stands. Otherwise
    /// the journal goes and nil: a journal of other content, an upload the server no
    /// longer has, or a server claiming chunks this device never sent.
    private func resumableUpload(at path: String?, size: Int, count: Int, address: ContentAddress, member: Member)
        async throws -> (UploadJournal, SymmetricKey, UploadStatus)? {
        guard let path, let journal = UploadJournal(opening: path) else { return nil }
        guard journal.header.size == size, journal.header.chunkShift == Int(AttachmentObject.defaultChunkShift),
              let key = base64Decode(journal.header.key),
              let status = try await api.uploadStatus(member: member.id, address: address, sharer: member.sharer, upload: journal.header.upload),
              status.upload == journal.header.upload, status.chunks == count,
              (0...journal.count).contains(status.stored)
        else {
            journal.remove()
            return nil
        }
        do {
            let (keyKeys, _) = try await keys(forKeyPart: key, address: address, member: member)
            return (journal, try AttachmentCrypto.openDataKey(key, address: address, account: owner(of: member), keys: keyKeys), status)
        } catch {
            journal.remove()
            return nil
        }
    }

    /// Downloads an attachment, opens it and checks it against its address.
    public func get(_ address: ContentAddress, member given: Member) async throws -> SecureBytes {
        try await exclusively {
            var chunks = [SecureBytes]()
            try await open(address, member: given) { chunks.append(SecureBytes(copying: $0)) }
            if chunks.count == 1 { return chunks[0] }
            return try SecureBytes(count: chunks.reduce(0) { $0 + $1.count }) { out in
                var at = 0
                for chunk in chunks {
                    chunk.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[at..<(at + $0.count)]).copyMemory(from: $0) }
                    at += chunk.count
                }
            }
        }
    }

    /// Downloads an attachment and opens it into `sink`, piece by piece; the content
    /// address is checked last (``AttachmentCrypto/open(_:address:account:keyKeys:addressKeys:into:)``).
    ///
    /// `resuming`: a file a download cut off before left content in: its whole chunks are
    /// kept and checked with the rest (the address covers them all), and the download
    /// goes on after them.
    ///
    /// `tap`: handed the sealed object as it arrives (``SealedPart``), before it is opened
    /// (an export copies it; a part that then does not open fails the call).
    /// `server`: where from (this device's server by default; an import checks what the new one holds).
    func open(_ address: ContentAddress, member given: Member, from server: ServerAPI? = nil, resuming file: AtomicFile.Writer? = nil,
              tap: ((SealedPart) throws -> Void)? = nil, into sink: (UnsafeRawBufferPointer) throws -> Void) async throws {
        let api = server ?? self.api
        let member = try newest(given)
        // From a server that keeps it in chunks (a shared member's through its sharer's relay): fetched chunk by chunk.
        if let list = try await api.chunkList(member: member.id, address: address, sharer: member.sharer) {
            try await openInChunks(list, address: address, member: member, from: api, resuming: file, tap: tap, into: sink)
            return
        }
        try file?.keep(first: 0) { _ in }
        let bytes = try await api.attachment(member: member.id, address: address, sharer: member.sharer,
                                             limit: try await api.attachmentLimits()?.any)
        try tap?(.whole(bytes))
        let object: AttachmentObject
        do {
            object = try AttachmentObject(bytes: bytes)
        } catch {
            throw KeyVaultError.verification(error, "the attachment \(address) from the server")
        }
        let (keyKeys, addressKeys) = try await keys(forKeyPart: object.key, address: address, member: member)
        do {
            try AttachmentCrypto.open(object, address: address, account: owner(of: member), keyKeys: keyKeys, addressKeys: addressKeys, into: sink)
        } catch let error as VaultError {
            throw KeyVaultError.verification(error, "the attachment is refused")
        }
    }

    /// The member keys of the generation a key part is wrapped under, and of the
    /// address's: both must be generations the member has.
    func keys(forKeyPart key: [UInt8], address: ContentAddress, member: Member) async throws
        -> (keyKeys: MemberKeys, addressKeys: MemberKeys) {
        let keyGeneration = try AttachmentCrypto.keyGeneration(of: key)
        guard (1...member.generation).contains(keyGeneration), (1...member.generation).contains(address.generation) else {
            throw KeyVaultError(.addressMismatch,
                              "the attachment \(address) names a key generation member \(member.name) does not have", kind: .verification)
        }
        return (try await memberKeys(member, generation: keyGeneration), try await memberKeys(member, generation: address.generation))
    }

    /// Fetches, opens and hands out one chunk at a time; the key part comes alone. The
    /// server's count and chunk size are its word only: a chunk opens only at its
    /// place, with its last flag, under a header naming its size, so any other count or
    /// size is refused (and the content address is checked last, as ever).
    private func openInChunks(_ list: ChunkList, address: ContentAddress, member: Member, from api: ServerAPI, resuming file: AtomicFile.Writer?,
                              tap: ((SealedPart) throws -> Void)?, into sink: (UnsafeRawBufferPointer) throws -> Void) async throws {
        guard let shift = list.readableShift else {
            throw KeyVaultError(.badResponse, "the server's chunk list of \(address) is not one a reader takes", kind: .verification)
        }
        let key = try await api.attachmentKey(member: member.id, address: address, sharer: member.sharer)
        try tap?(.chunked(list, key: key))
        let (keyKeys, addressKeys) = try await keys(forKeyPart: key, address: address, member: member)
        do {
            var reader = try SealedChunks(key: key, count: list.chunks, chunkShift: shift, address: address, account: owner(of: member),
                                          keyKeys: keyKeys, addressKeys: addressKeys)
            // Whole chunks a cut-off download left: hashed, not fetched again (the last always is).
            let start = min((file?.existingLength ?? 0) >> Int(shift), list.chunks - 1)
            try file?.keep(first: start << Int(shift)) { try reader.skip($0) }
            if start > 0 { progress(.resumingAttachment(from: start, of: list.chunks)) }
            // A few chunks fetched ahead (the transport's kept-open connections), opened in order.
            var fetching = ChunkWindow<[UInt8]>(width: Self.chunksInFlight)
            var next = start
            do {
                for index in start..<list.chunks {
                    while next < list.chunks, !fetching.isFull {
                        fetching.add { [next] in try await api.attachmentChunk(member: member.id, address: address, sharer: member.sharer, index: next) }
                        next += 1
                    }
                    let sealed = try await fetching.next()
                    try tap?(.chunk(sealed))
                    try reader.open(sealed, index: index) { try sink($0) }
                    progress(.receivingAttachment(done: index + 1, of: list.chunks))
                }
            } catch {
                // Nothing of this download goes on after it failed.
                await fetching.stop()
                throw error
            }
            try reader.finish()
        } catch let error as VaultError {
            throw KeyVaultError.verification(error, "the attachment is refused")
        }
    }

    /// Downloads an attachment, opens it chunk by chunk into a temporary file beside
    /// `path` (never through a symlink, mode 0600, named for `path` and the address), and
    /// only once the whole content matched its address syncs it and renames it over
    /// `path`. Content that does not match its address writes nothing, and a failed
    /// write leaves no temporary file behind; a download cut off (the network, the
    /// server, a killed process) leaves it, and the next call for the same file and
    /// address goes on after its whole chunks, which are checked with the rest.
    ///
    /// - Returns: the number of bytes written.
    /// - Throws: as ``get(_:member:)``; ``KeyVaultError`` `io` when the file cannot be written.
    @discardableResult
    public func get(_ address: ContentAddress, member: Member, toFileAt path: String) async throws -> Int {
        try await exclusively {
            do {
                // A name of its own for this file and content: a download cut off goes on there next time.
                let file = try AtomicFile.Writer(resumable: path, tag: Hex.encode(SHA256.hash(Array(address.description.utf8)).prefix(8)))
                var written = 0
                do {
                    try await open(address, member: member, resuming: file) { piece in
                        try file.append(piece)
                        written += piece.count
                    }
                    try file.commit()
                } catch let error as KeyVaultError where error.kind != .network {
                    // Refused content, a refusal, a file that cannot be written: nothing is kept.
                    file.abort()
                    throw error
                } catch {
                    // Cut off (the network, the server's database, a cancellation, an app's
                    // transport failing): what arrived is kept for the next try.
                    file.leaveForResumption(written: written)
                    throw error
                }
                return file.existingLength + written
            } catch let error as AtomicFile.Failure {
                throw KeyVaultError(.io, error.message)
            }
        }
    }

    /// An attachment the server lists: where it is, how large its sealed object is, and
    /// when it was stored (the server's word: it opens only with ``get(_:member:)``);
    /// and the name, media type, time and size a device sealed with it, opened here
    /// (docs/formats/attachment-meta.md).
    public struct Attachment: Sendable, Equatable {
        public let address: ContentAddress
        /// The sealed object's size in bytes.
        public let size: Int
        public let stored: Date
        /// The file's name, when one was stored with it and opened for this attachment.
        public internal(set) var name: String?
        public internal(set) var mediaType: String?
        /// The file's modification time (or when its content was put, for content put from memory).
        public internal(set) var time: Date?
        /// The plaintext's size in bytes.
        public internal(set) var plainSize: Int?
        /// Why a name stored with it is not shown: it does not open for this attachment
        /// (moved from another attachment, or altered: by the server, or by a grantee of a shared
        /// member). Nil when it opened or none was stored.
        public internal(set) var nameProblem: String?
        /// The sealed name as the server listed it.
        package var sealedMeta: [UInt8]?

        /// Shows the name and details `meta` opened for it.
        mutating func show(_ meta: AttachmentMeta) {
            (name, mediaType, time, plainSize) = (meta.name, meta.type, Date(timeIntervalSince1970: TimeInterval(meta.time)), Int(exactly: meta.size))
            nameProblem = nil
        }
    }

    /// The attachments the server lists for `member`, oldest first, with their names
    /// opened: a name that does not open for its attachment is left out, and
    /// ``Attachment/nameProblem`` says why.
    public func attachments(member given: Member) async throws -> [Attachment] {
        try await exclusively {
            let member = try newest(given)
            var list = try await api.attachments(member: member.id, sharer: member.sharer)
            for index in list.indices {
                guard let sealed = list[index].sealedMeta else { continue }
                let address = list[index].address
                do {
                    list[index].show(try await openMeta(sealed, address: address, member: member))
                } catch let error as VaultError {
                    list[index].nameProblem = error.message
                } catch let error as KeyVaultError where error.kind != .network {
                    list[index].nameProblem = error.message
                }
            }
            return list
        }
    }

    /// `member` at its newest generation: a `Member` kept across a rotation names an older
    /// one, and this account's own member is judged by the verified chain (a newer
    /// generation there is no server lie; a shared member's stays as its sharer's chain said).
    func newest(_ member: Member) throws -> Member {
        var member = member
        if member.sharer == nil, let now = try chain.members[member.id]?.generation, now > member.generation {
            member.generation = now
        }
        return member
    }

    /// Opens the name and details sealed with the attachment at `address`.
    ///
    /// - Throws: `VaultError` `address_mismatch` for one that does not open there.
    func openMeta(_ sealed: [UInt8], address: ContentAddress, member: Member) async throws -> AttachmentMeta {
        let generation = try AttachmentMeta.generation(of: sealed)
        // Sealed with the content, under the generation its address names or a later one:
        // never under an older generation a revoked device or a former grantee still holds.
        guard (address.generation...max(address.generation, member.generation)).contains(generation) else {
            throw VaultError(.addressMismatch, "the name stored with \(address) is sealed under key generation \(generation), not one from its address's (\(address.generation)) on")
        }
        return try AttachmentMeta.open(sealed, account: owner(of: member), address: address, keys: try await memberKeys(member, generation: generation))
    }

    /// The attachment of `member` called `name` (``Attachment/name``).
    ///
    /// - Throws: `no_such_attachment` when none is, or when several are (their
    ///   addresses in the message: give the one meant).
    public func attachment(named name: String, member: Member) async throws -> Attachment {
        let all = try await attachments(member: member)
        // A name that does not open counts for nothing: it names no attachment (the server, or
        // a grantee of a shared member, could store one), and refusing every lookup over it would
        // let either block them. The names that open are bound to their attachments.
        let matches = all.filter { $0.name == name }
        guard matches.count == 1 else {
            let unopened = all.filter { $0.nameProblem != nil }.count
            throw KeyVaultError(.noSuchAttachment, matches.isEmpty
                ? "\(member.name) has no attachment called \(name)"
                    + (unopened == 0 ? "" : " (\(unopened) of its names do not open and are not shown: give the address)")
                : "\(member.name) has \(matches.count) attachments called \(name): \(matches.map { "\($0.address)" }.joined(separator: ", "))")
        }
        return matches[0]
    }

    /// Deletes an attachment of one of this account's members from the server: its
    /// content, its chunks and its name. Takes this device's own signature.
    ///
    /// Authority: what it ends is the server's copy; a device that downloaded it keeps
    /// its copy, and the member key that opened it is unchanged.
    public func deleteAttachment(_ address: ContentAddress, member: Member) async throws {
        try Self.ownAccountOnly(member, "deletes")
        try await exclusively {
            try await api.deleteAttachment(member: member.id, address: address)
        }
    }

    /// Names the attachment at `address` of one of this account's members `name` (media
    /// type `mediaType`, or the one its extension names), replacing the name it had: one
    /// a device gave it, or one a grantee gave it or planted (docs/formats/attachment-meta.md).
    /// Sealed for this account as a put seals it, after what a put does first (a pending
    /// rotation finished, a share with a changed contact ended: links of their own). The
    /// time and size stay those of the name it had when that opens (that name's word: a
    /// grantee's, if a grantee named it); otherwise the content is fetched and opened to
    /// count its size, and its time is now.
    ///
    /// Authority: only a device of the member's own account renames (`invalid_input` for
    /// a shared member: a grantee names only a file without a name, when it puts it). Of
    /// the attachment, only its name changes.
    ///
    /// - Returns: the attachment as a list now shows it.
    @discardableResult
    public func renameAttachment(_ address: ContentAddress, member: Member, to name: String, mediaType: String? = nil) async throws -> Attachment {
        try Self.ownAccountOnly(member, "renames")
        let type = try Self.mediaType(mediaType, forName: name)
        return try await exclusively {
            let keys = try await keysToSeal(for: member)
            var member = member
            member.generation = keys.generation
            guard var listed = try await api.attachments(member: member.id).first(where: { $0.address == address }) else {
                throw KeyVaultError(.noSuchAttachment, "\(member.name) has no attachment \(address) on the server")
            }
            // A name that does not open counts for nothing (as in a list); a network failure is no reason to fetch the content.
            var had: AttachmentMeta?
            if let sealed = listed.sealedMeta {
                do {
                    had = try await openMeta(sealed, address: address, member: member)
                } catch is VaultError {
                } catch let error as KeyVaultError where error.kind != .network {}
            }
            let meta: AttachmentMeta
            if let had {
                meta = AttachmentMeta(name: name, type: type, time: had.time, size: had.size)
            } else {
                var counted: UInt64 = 0
                try await open(address, member: member) { counted += UInt64($0.count) }
                meta = AttachmentMeta(name: name, type: type, time: Int64(Date().timeIntervalSince1970), size: counted)
            }
            let sealed = try meta.seal(account: account, address: address, keys: keys)
            try await api.putAttachmentMeta(member: member.id, address: address, meta: sealed)
            listed.show(meta)
            listed.sealedMeta = sealed
            return listed
        }
    }

    private static func ownAccountOnly(_ member: Member, _ verb: String) throws {
        guard member.sharer == nil else {
            throw KeyVaultError(.invalidInput, "\(member.name) is shared with this account; only its own account \(verb) its attachments")
        }
    }

    public struct RewrapResult: Sendable {
        public var rewrapped = 0
        public var current = 0
    }

    /// Re-wraps every attachment key of a member under the member's newest key
    /// generation. Each attachment is one small request; running it again after an
    /// interruption picks up where it stopped.
    ///
    /// Appends nothing: it replaces attachment key wraps only.
    public func rewrap(member: Member) async throws -> RewrapResult {
        try Self.ownAccountOnly(member, "re-wraps")
        return try await exclusively {
            let list = try await api.attachments(member: member.id)
            let newest = try await memberKeys(member.id, generation: member.generation)
            var result = RewrapResult()
            for (index, listed) in list.enumerated() {
                progress(.rewrappingAttachments(done: index + 1, of: list.count))
                let address = listed.address
                let key = try await api.attachmentKey(member: member.id, address: address)
                let generation: UInt32
                do {
                    generation = try AttachmentCrypto.keyGeneration(of: key)
                } catch {
                    throw KeyVaultError.verification(error, "the key of attachment \(address)")
                }
                guard generation != member.generation else { result.current += 1; continue }
                guard (1..<member.generation).contains(generation) else {
                    throw KeyVaultError(.addressMismatch,
                                      "the key of attachment \(address) names generation \(generation), which member \(member.name) does not have",
                                      kind: .verification)
                }
                let rewrapped: [UInt8]
                do {
                    rewrapped = try AttachmentCrypto.rewrap(key, address: address, account: account,
                                                            from: try await memberKeys(member.id, generation: generation), to: newest)
                } catch let error as VaultError {
                    throw KeyVaultError.verification(error, "the key of attachment \(address)")
                }
                try await api.replaceAttachmentKey(member: member.id, address: address, key: rewrapped)
                result.rewrapped += 1
            }
            return result
        }
    }
}

extension ChunkList {
    /// The chunk size's shift, when the list is one a reader takes (a chunk at least,
    /// a size the format has); nil otherwise (the server's word, checked before use).
    var readableShift: UInt8? {
        guard chunks >= 1, let shift = UInt8(exactly: chunkShift), AttachmentObject.chunkShifts.contains(shift) else { return nil }
        return shift
    }
}

/// An attachment as the server keeps it, handed out as a download fetches it.
enum SealedPart {
    /// An object put whole (docs/formats/attachment-object.md).
    case whole([UInt8])
    /// An object in chunks: how it lies in them and its key part, before the chunks.
    case chunked(ChunkList, key: [UInt8])
    case chunk([UInt8])
}

/// A chunked attachment's sealed chunks, opened in order: each only at its place, with
/// its last flag and the length its place has, and the content address checked once
/// the last is in (docs/formats/attachment-stream.md).
struct SealedChunks: ~Copyable {
    let address: ContentAddress
    let count: Int
    private let opener: AttachmentOpener
    private var hasher: ContentAddressHasher
    /// Every chunk is opened into this one guarded region, in turn: a chunk's content at most.
    private var scratch: SecureScratch
    /// A full chunk's sealed length.
    private var full: Int { scratch.count + StreamAEAD.tagByteCount }

    init(key: [UInt8], count: Int, chunkShift: UInt8, address: ContentAddress, account: AccountID,
         keyKeys: MemberKeys, addressKeys: MemberKeys) throws {
        let dataKey = try AttachmentCrypto.openDataKey(key, address: address, account: account, keys: keyKeys)
        let opener = try AttachmentOpener(dataKey: dataKey, chunkShift: chunkShift, address: address)
        let hasher = try ContentAddressHasher(key: addressKeys.contentAddressKey)
        let scratch = try SecureScratch(count: 1 << Int(chunkShift))
        self.opener = opener
        self.hasher = hasher
        self.scratch = scratch
        self.address = address
        self.count = count
    }

    /// Content already opened before (a download resumed): hashed as chunks are.
    mutating func skip(_ content: UnsafeRawBufferPointer) throws { try hasher.update(content) }

    /// Opens sealed chunk `index`, hashes its content and lends it to `body`.
    ///
    /// - Throws: `VaultError` `address_mismatch` when it is not that chunk of this
    ///   object; whatever `body` throws.
    mutating func open(_ sealed: [UInt8], index: Int, _ body: (UnsafeRawBufferPointer) throws -> Void = { _ in }) throws {
        // The framing the format fixes: full chunks but the last, which holds content unless it is the only one.
        let last = index == count - 1
        guard last ? (sealed.count <= full && (sealed.count > StreamAEAD.tagByteCount || count == 1)) : sealed.count == full else {
            throw VaultError(.addressMismatch, "chunk \(index) of \(address) is \(sealed.count) bytes, which is not its place's length")
        }
        try opener.open(sealed, index: index, of: count, into: &scratch) { content in
            try hasher.update(content)
            try body(content)
        }
    }

    /// Checks the content opened against its address.
    consuming func finish() throws { try AttachmentCrypto.check(try hasher.finalize(), against: address) }
}
