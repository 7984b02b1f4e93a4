import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultVault

// Moving an account to another server (docs/formats/account-export.md): an export of
// everything the server holds for it, ciphertext only, checked by this device as it is
// read; an import of that file onto another server, checked again by the device that
// puts it there and by that server; and each device pointed at the new server only
// once it holds the chain the device has seen, or a later one.

/// The lines of an account export, one JSON object each (docs/formats/account-export.md).
struct ExportLine: Codable {
    struct Header: Codable {
        var format: String
        var version: Int
        var account: AccountID
        var sequence: UInt64
        var head: String
        var device: DeviceID
        var time: Int64
    }

    /// An attachment: put whole (an `object` line follows) or in chunks (`chunks` lines follow).
    struct Attachment: Codable {
        var member: MemberID
        var address: String
        /// Base64 of its sealed name and details, when one was stored and opened here.
        var meta: String?
        var whole: Bool?
        /// Base64 key part, the chunk size's shift, the chunk count and the plaintext size of one in chunks.
        var key: String?
        var chunkShift: Int?
        var chunks: Int?
        var size: Int?
    }

    struct End: Codable {
        var links: Int
        var attachments: Int
    }

    var header: Header? = nil
    var state: ImportAccountRequest? = nil
    var attachment: Attachment? = nil
    /// Base64 of an object put whole.
    var object: String? = nil
    /// Base64 of one sealed chunk.
    var chunk: String? = nil
    var end: End? = nil

    static let format = "keyvault-account-export"
    static let version = 1
}

extension Vault {
    /// What ``exportAccount(toFileAt:)`` wrote.
    public struct ExportSummary: Sendable {
        /// The chain's links, genesis included.
        public let links: Int
        public let attachments: Int
        /// Attachments whose stored name did not open here: exported without it.
        public let namesLeftOut: Int
        /// The file's size.
        public let bytes: Int
    }

    /// Writes everything the server holds for this account to one file
    /// (docs/formats/account-export.md): the chain, every key box, the member keys' and
    /// the sharing identity's wraps under the current master key, the recovery slot, and
    /// every attachment of every member with its sealed name, as the server keeps them:
    /// ciphertext only. This device checks all of it as it reads it (the chain against
    /// the head it has seen, each box where it was made, each wrap and attachment by
    /// opening it), so a file written is one ``importAccount(fromFileAt:to:transport:invite:keepingOldCopy:)`` takes.
    /// Memory stays bounded: attachments in chunks pass through one chunk at a time (an
    /// object an older server kept whole, at most its limit, whole). The file appears
    /// (mode 0600) only once complete.
    ///
    /// - Throws: ``KeyVaultError`` `io` when the file cannot be written; a verification
    ///   error when something the server holds does not check (nothing is written).
    public func exportAccount(toFileAt path: String) async throws -> ExportSummary {
        try await sync()
        return try await exclusively {
            let state = try chain, links = self.links
            let boxes = try await api.boxes(all: true)
            do {
                _ = try ChainState.replay(links, checking: boxes)
            } catch {
                throw KeyVaultError.verification(error, "a key box the server holds")
            }
            let master = state.masterGeneration
            var wraps = [MemberWrap]()
            for member in state.members.values.sorted(by: { $0.id.rawValue < $1.id.rawValue }) {
                wraps += try await api.wraps(member: member.id).filter { $0.masterGeneration == master }
            }
            let identityWraps = state.identityGenerations.isEmpty ? [] : try await api.identityWraps().filter { $0.masterGeneration == master }
            var recovery: RecoverySlot?
            if let code = state.recovery {
                let slot = try await api.recoverySlot()
                guard slot.names(code) else {
                    throw KeyVaultError(.badResponse, "the server's recovery slot is not the one of the code the chain set last", kind: .verification)
                }
                recovery = slot
            }

            let request = ImportAccountRequest(links: links, boxes: boxes, wraps: wraps, recovery: recovery, identityWraps: identityWraps)
            try await checkKept(request, in: state, from: "the server")
            guard try ServerAPI.encoder.encode(request).count <= ImportAccountRequest.maxBytes else {
                throw KeyVaultError(.payloadTooLarge, "the account's history and keys are larger than an import takes (\(Self.sizeText(ImportAccountRequest.maxBytes))): it cannot move this way")
            }

            let file: AtomicFile.Writer
            do { file = try AtomicFile.Writer(path) } catch let error as AtomicFile.Failure { throw KeyVaultError(.io, error.message) }
            var bytes = 0
            func write(_ line: ExportLine) throws {
                var data = Array(try ServerAPI.encoder.encode(line))
                data.append(UInt8(ascii: "\n"))
                do { try data.withUnsafeBytes { try file.append($0) } } catch let error as AtomicFile.Failure { throw KeyVaultError(.io, error.message) }
                bytes += data.count
            }
            try write(ExportLine(header: .init(format: ExportLine.format, version: ExportLine.version, account: account, sequence: state.sequence,
                                               head: state.head, device: device, time: clock())))
            try write(ExportLine(state: request))
            var count = 0, namesLeftOut = 0
            for member in try await members() {
                for attachment in try await attachments(member: member) {
                    if attachment.sealedMeta != nil, attachment.nameProblem != nil { namesLeftOut += 1 }
                    let meta = attachment.nameProblem == nil ? attachment.sealedMeta.map(base64Encode) : nil
                    let address = attachment.address
                    var line = ExportLine.Attachment(member: member.id, address: address.description, meta: meta)
                    // One in chunks: its plaintext size from its last chunk's length, for the import's upload to name.
                    if let list = try await api.chunkList(member: member.id, address: address) {
                        // The server's word, bounded before any arithmetic on it (the download checks the rest).
                        guard let shift = list.readableShift, case let (whole, overflow) = (list.chunks - 1).multipliedReportingOverflow(by: 1 << Int(shift)), !overflow,
                              whole <= ServerAPI.maxExportedAttachmentBytes else {
                            throw KeyVaultError(.badResponse, "the server's chunk list of \(address) is not one a reader takes", kind: .verification)
                        }
                        let last = try await api.attachmentChunk(member: member.id, address: address, index: list.chunks - 1)
                        line.chunkShift = list.chunkShift
                        line.chunks = list.chunks
                        line.size = whole + max(0, last.count - StreamAEAD.tagByteCount)
                    } else {
                        line.whole = true
                    }
                    var written = 0
                    try await open(address, member: member, tap: { part in
                        switch part {
                        case .whole(let object):
                            guard line.whole == true else { throw Self.changedWhileExported(address) }
                            try write(ExportLine(attachment: line))
                            try write(ExportLine(object: base64Encode(object)))
                        case .chunked(let list, let key):
                            guard list.chunks == line.chunks, list.chunkShift == line.chunkShift else { throw Self.changedWhileExported(address) }
                            line.key = base64Encode(key)
                            try write(ExportLine(attachment: line))
                        case .chunk(let sealed):
                            try write(ExportLine(chunk: base64Encode(sealed)))
                            written += 1
                        }
                    }, into: { _ in })
                    guard line.whole == true || written == line.chunks else { throw Self.changedWhileExported(address) }
                    count += 1
                    progress(.exportingAttachments(done: count))
                }
            }
            try write(ExportLine(end: .init(links: links.count, attachments: count)))
            do { try file.commit() } catch let error as AtomicFile.Failure { throw KeyVaultError(.io, error.message) }
            return ExportSummary(links: links.count, attachments: count, namesLeftOut: namesLeftOut, bytes: bytes)
        }
    }

    /// What moves beside the chain must let every device go on where it moves: a box of
    /// the current master key for each active device and for the recovery code (unless
    /// compromised), this device's opening to the key the chain names; under that key, a
    /// wrap of every member key generation and of every identity generation kept, each
    /// opening here, to the key this device holds where it holds one.
    func checkKept(_ request: ImportAccountRequest, in state: ChainState, from source: String) async throws {
        func missing(_ what: String) -> KeyVaultError {
            KeyVaultError(.missingKey, "\(source) holds no \(what): devices could not open the account where it moves", kind: .verification)
        }
        let g = state.masterGeneration
        var recipients = state.activeDevices.map(\.id.rawValue)
        if let code = state.recovery, !code.isCompromised { recipients.append(ChainLink.recoverySigner) }
        for recipient in recipients where !request.boxes.contains(where: { $0.recipient == recipient && $0.generation == g }) {
            throw missing("box of master key generation \(g) for \(recipient == ChainLink.recoverySigner ? "the recovery code" : "device " + recipient.prefix(8) + "…")")
        }
        guard let mine = request.boxes.first(where: { $0.recipient == device.rawValue && $0.generation == g }) else { throw missing("box for this device") }
        let masterKey = try Self.open(mine, in: state, with: record.keys.boxKey)
        for member in state.members.values {
            for generation in 1...member.generation {
                guard let wrap = request.wraps.first(where: { $0.member == member.id && $0.memberGeneration == generation && $0.masterGeneration == g }) else {
                    throw missing("wrap of member \(member.id.rawValue.prefix(8))… key generation \(generation)")
                }
                let key: SymmetricKey
                do {
                    key = try MemberKeyWrap.open(wrap, account: account, masterKey: masterKey, masterGeneration: g)
                } catch {
                    throw KeyVaultError.verification(error, "the wrap of member \(member.id.rawValue.prefix(8))… key generation \(generation) in \(source)")
                }
                if let held = record.memberKeys[member.id]?[generation], held != key {  // constant time (SymmetricKey)
                    throw KeyVaultError(.badBox, "\(source) wraps another key as member \(member.id.rawValue.prefix(8))…'s generation \(generation) than the one this device holds",
                                        kind: .verification)
                }
            }
        }
        for generation in state.identityGenerations {
            guard let wrap = request.identityWraps.first(where: { $0.identityGeneration == generation && $0.masterGeneration == g }) else {
                throw missing("wrap of the sharing identity's generation \(generation)")
            }
            do {
                guard try IdentityKeyWrap.open(wrap, account: account, masterKey: masterKey, masterGeneration: g).matches(try publishedIdentity(generation)) else {
                    throw KeyVaultError(.badBox, "\(source) wraps another sharing identity as generation \(generation) than the chain publishes", kind: .verification)
                }
            } catch let error as KeyVaultError {
                throw error
            } catch {
                throw KeyVaultError.verification(error, "the wrap of the sharing identity's generation \(generation) in \(source)")
            }
        }
    }

    /// The longest line an attachment's part takes: a sealed chunk in base64, and its key.
    static let chunkLineLimit = ChunkLayout.maximumSealedChunkBytes / 3 * 4 + (64 << 10)

    private static func changedWhileExported(_ address: ContentAddress) -> KeyVaultError {
        KeyVaultError(.badResponse, "the server's answers about attachment \(address) changed while it was exported: export again", kind: .verification)
    }

    /// What ``importAccount(fromFileAt:to:transport:invite:keepingOldCopy:)`` did.
    public struct ImportSummary: Sendable {
        /// The chain's links, and how many of them the new server did not hold before.
        public let links: Int
        public let linksAppended: Int
        public let attachments: Int
        /// Attachments the new server held already (an import run again after a cut).
        public let attachmentsAlreadyThere: Int
        /// Whether this device now uses the new server, and the old server's copy is gone.
        public let moved: Bool
        /// Why the old copy was not deleted, when this device moved but that failed.
        public let oldCopyProblem: String?
    }

    /// Puts an export of this account (``exportAccount(toFileAt:)``, from this device or
    /// another of the account) on the server `transport` reaches, checking it all again
    /// first: the chain must extend the head this device has seen (an older file is
    /// refused: export again), each box must verify where it was made, each attachment
    /// must open and match its address before it is completed there, each name must
    /// open for its attachment. The new server replays the chain too. Run again after a
    /// cut, it goes on: links and attachments already there are kept.
    ///
    /// Then, unless `keepingOldCopy`, the move is closed: once the old server is seen to
    /// hold nothing the new one lacks (no link more, such as a revocation made there
    /// since; no attachment more), this device moves to `server` and the old copy is
    /// deleted, so no change can land on it after (the other devices' next command there
    /// fails, and `server move` takes them over). With `keepingOldCopy`, this device stays
    /// where it is: ``move(to:transport:)`` and ``deleteAccount(on:server:)`` do the rest.
    /// `invite`: the new server's invite token, if it takes new accounts by invitation.
    ///
    /// - Throws: `grant_exists` when members are shared with other accounts (they live
    ///   on this server: end the shares first); `invalid_input` for a file that is not
    ///   an export of this account or is cut short.
    public func importAccount(fromFileAt path: String, to server: URL, transport: any HTTPTransport, invite: String? = nil,
                              keepingOldCopy: Bool = false) async throws -> ImportSummary {
        try await sync()
        return try await exclusively {
            let reader = try LineReader(path: path)
            func next(_ limit: Int, _ what: String) throws -> ExportLine {
                guard let bytes = try reader.next(limit: limit) else {
                    throw KeyVaultError(.invalidInput, "\(path) ends before \(what): it is cut short (export again)")
                }
                do {
                    return try JSONDecoder().decode(ExportLine.self, from: Data(bytes))
                } catch {
                    throw KeyVaultError(.invalidInput, "\(path) holds a line that is not part of an account export, where \(what) should be")
                }
            }
            guard let header = try next(64 << 10, "its header").header, header.format == ExportLine.format else {
                throw KeyVaultError(.invalidInput, "\(path) is not a KeyVault account export")
            }
            guard header.version == ExportLine.version else {
                throw KeyVaultError(.invalidInput, "\(path) is an account export of version \(header.version); this KeyVault reads version \(ExportLine.version)")
            }
            guard header.account == account else {
                throw KeyVaultError(.invalidInput, "\(path) is an export of account \(header.account), not of this device's account \(account)")
            }
            guard let request = try next(ImportAccountRequest.maxBytes + 64, "the account's chain").state else {
                throw KeyVaultError(.invalidInput, "\(path) has no chain where its second line should be")
            }
            // Checked as the server's chain is: it must extend what this device has seen.
            let state: ChainState
            do {
                state = try ChainState.replay(request.links, checking: request.boxes)
            } catch {
                throw KeyVaultError.verification(error, "the account chain in \(path) does not verify")
            }
            _ = try Self.verify(request.links, account: account, seenHead: record.head, seenSequence: record.sequence, from: path)
            guard state.devices[device]?.isActive == true else {
                throw KeyVaultError(.invalidInput, "this device is not active in the chain \(path) holds")
            }
            try await checkKept(request, in: state, from: path)
            if let grant = state.grants.values.first {
                throw KeyVaultError(.grantExists, "member \(grant.member) is shared with account \(grant.grantee), which stays on this server: end the share (unshare the member) and export again")
            }
            let target = ServerAPI(transport: transport, account: account, keys: record.keys)
            let instance = try await target.instance()
            guard try await api.instance() != instance else {
                throw KeyVaultError(.invalidInput, "\(server.absoluteString) is the server this account is on (the same service): nothing was imported")
            }
            let imported = try await target.importAccount(request, instance: instance, invite: invite)
            guard imported.head == state.head else {
                throw KeyVaultError(.badResponse, "the new server answered the import with another head than the file's", kind: .verification)
            }

            var count = 0, alreadyThere = 0
            // What the new server lists, per member: each checked before it is kept.
            var there = [MemberID: Set<ContentAddress>]()
            while true {
                let line = try next(Self.chunkLineLimit, "its end")
                if let end = line.end {
                    guard end.links == request.links.count, end.attachments == count else {
                        throw KeyVaultError(.invalidInput, "\(path) ends saying it holds \(end.links) changes and \(end.attachments) attachments, but it holds \(request.links.count) and \(count): it is damaged (export again)")
                    }
                    break
                }
                guard let attachment = line.attachment, let address = ContentAddress(attachment.address),
                      let generation = state.members[attachment.member]?.generation else {
                    throw KeyVaultError(.invalidInput, "\(path) holds an attachment line of no member of the account, or a stray line")
                }
                let member = Member(id: attachment.member, name: attachment.member.rawValue, generation: generation)
                if there[member.id] == nil { there[member.id] = Set(try await target.attachments(member: member.id).map(\.address)) }
                let existed = try await importAttachment(attachment, address: address, member: member, to: target,
                                                         listed: there[member.id]?.contains(address) == true,
                                                         next: { try next($0, "a part of attachment \(address)") })
                if let meta = attachment.meta {
                    guard let sealed = base64Decode(meta) else { throw KeyVaultError(.invalidInput, "\(path) holds a name that is not base64") }
                    do {
                        _ = try await openMeta(sealed, address: address, member: member)
                    } catch let error as VaultError {
                        throw KeyVaultError.verification(error, "the name of attachment \(address) in \(path)")
                    }
                    try await target.putAttachmentMeta(member: member.id, address: address, meta: sealed)
                }
                count += 1
                if existed { alreadyThere += 1 }
                progress(.importingAttachments(done: count))
            }
            guard !keepingOldCopy else {
                return ImportSummary(links: request.links.count, linksAppended: imported.appended, attachments: count,
                                     attachmentsAlreadyThere: alreadyThere, moved: false, oldCopyProblem: nil)
            }
            let (oldServer, oldHead) = try await checkNothingLeftBehind(on: api, comparedTo: target, pinned: record.instance)
            _ = try await move(to: server, transport: transport)
            var problem: String?
            do {
                try await api.deleteAccount(instance: oldServer, head: oldHead)
                record.movedFrom = nil
                try home.save(record)
            } catch let error as KeyVaultError {
                problem = error.message
            }
            return ImportSummary(links: request.links.count, linksAppended: imported.appended, attachments: count,
                                 attachmentsAlreadyThere: alreadyThere, moved: true, oldCopyProblem: problem)
        }
    }

    /// One attachment of an import: opened and checked against its address as it is
    /// read, put whole or in chunks as it was kept, and completed only once it all
    /// checked. One the new server says it holds already is fetched from there and
    /// opened first: kept when it opens to this content, replaced when it does not
    /// (a server's "already there" is its word alone). True when it was kept.
    private func importAttachment(_ line: ExportLine.Attachment, address: ContentAddress, member: Member, to target: ServerAPI,
                                  listed: Bool, next: (Int) throws -> ExportLine) async throws -> Bool {
        func refused(_ error: any Error) -> KeyVaultError { KeyVaultError.verification(error, "attachment \(address) of the export") }
        let replace = listed ? !(try await opens(address, member: member, at: target)) : false
        if line.whole == true {
            let whole = try await target.attachmentLimits()?.whole ?? ServerAPI.maxAttachmentReplyBytes
            guard let text = try next(min(whole, ServerAPI.maxAttachmentReplyBytes) / 3 * 4 + 64).object, let bytes = base64Decode(text) else {
                throw KeyVaultError(.invalidInput, "attachment \(address) has no object line")
            }
            if listed, !replace { return true }
            do {
                let object = try AttachmentObject(bytes: bytes)
                let (keyKeys, addressKeys) = try await keys(forKeyPart: object.key, address: address, member: member)
                try AttachmentCrypto.open(object, address: address, account: account, keyKeys: keyKeys, addressKeys: addressKeys, into: { _ in })
                let existed = try await target.putAttachment(member: member.id, address: address, object: object, replace: replace).existed == true
                return existed ? try await keptThere(address, member: member, at: target) : false
            } catch let error as VaultError {
                throw refused(error)
            } catch let error as ProtocolError {
                throw refused(error)
            }
        }
        guard let keyText = line.key, let key = base64Decode(keyText), let shiftValue = line.chunkShift, let shift = UInt8(exactly: shiftValue),
              AttachmentObject.chunkShifts.contains(shift), let count = line.chunks, count >= 1, let size = line.size,
              (0...ServerAPI.maxExportedAttachmentBytes).contains(size), ChunkLayout.count(ofContent: size, chunkShift: shift) == count else {
            throw KeyVaultError(.invalidInput, "attachment \(address) names no chunk layout a reader takes")
        }
        if listed, !replace {
            for index in 0..<count where try next(Self.chunkLineLimit).chunk == nil {
                throw KeyVaultError(.invalidInput, "attachment \(address) has \(index) of its \(count) chunks")
            }
            return true
        }
        let (keyKeys, addressKeys) = try await keys(forKeyPart: key, address: address, member: member)
        var reader: SealedChunks
        do {
            reader = try SealedChunks(key: key, count: count, chunkShift: shift, address: address, account: account, keyKeys: keyKeys, addressKeys: addressKeys)
        } catch let error as VaultError {
            throw refused(error)
        }
        let started = try await target.beginUpload(member: member.id, address: address, key: key, chunkShift: shift, size: size, replace: replace)
        guard started.existed || started.chunks == count else {
            throw KeyVaultError(.badResponse, "the new server's answer to an upload of \(count) chunks names \(started.chunks)")
        }
        for index in 0..<count {
            guard let text = try next(Self.chunkLineLimit).chunk, let sealed = base64Decode(text) else {
                throw KeyVaultError(.invalidInput, "attachment \(address) has \(index) of its \(count) chunks")
            }
            do { try reader.open(sealed, index: index) } catch { throw refused(error) }
            if let upload = started.upload, !started.existed {
                try await target.putUploadChunk(member: member.id, address: address, upload: upload, index: index, chunk: sealed)
            }
            progress(.sendingAttachment(done: index + 1, of: count))
        }
        do { try reader.finish() } catch { throw refused(error) }
        guard let upload = started.upload, !started.existed else { return try await keptThere(address, member: member, at: target) }
        let info = try await target.completeUpload(member: member.id, address: address, upload: upload, replace: replace)
        return info.existed == true ? try await keptThere(address, member: member, at: target) : false
    }

    /// An address the new server says it holds, though it listed it not: true when what
    /// it holds opens there; refused otherwise (the next import, finding it listed, replaces it).
    private func keptThere(_ address: ContentAddress, member: Member, at target: ServerAPI) async throws -> Bool {
        guard try await opens(address, member: member, at: target) else {
            throw KeyVaultError(.addressMismatch, "the new server holds something else at \(address): run the import again to replace it",
                                kind: .verification)
        }
        return true
    }

    /// Whether what `target` holds at `address` opens to content with that address
    /// (fetched and opened chunk by chunk, nothing kept).
    private func opens(_ address: ContentAddress, member: Member, at target: ServerAPI) async throws -> Bool {
        do {
            try await open(address, member: member, from: target, into: { _ in })
            return true
        } catch let error as KeyVaultError where error.kind == .verification {
            return false
        }
    }

    /// Points this device at `server`, once the account moved there
    /// (``importAccount(fromFileAt:to:transport:invite:keepingOldCopy:)``): its chain must verify and extend the head this
    /// device has seen, and hold this device, active, with its keys. A server that
    /// holds an older chain, another one, or none is refused, and nothing changes.
    /// Open the vault again to use the new server.
    ///
    /// - Returns: the link the new server's chain ends at.
    public func move(to server: URL, transport: any HTTPTransport) async throws -> UInt64 {
        try await exclusively {
            let there = try await ServerAPI(transport: transport, account: account, keys: record.keys).chain()
            let verified = try adopt(there.links, from: server.absoluteString)
            if !Self.sameServer(record.server, server.absoluteString) { record.movedFrom = record.server }
            record.server = server.absoluteString
            record.instance = try? await ServerAPI(transport: transport).instance()
            record.head = verified.head
            record.sequence = verified.sequence
            try home.save(record)
            return verified.sequence
        }
    }

    /// Deletes this account's copy on `server` (reached through `transport`): only the
    /// server this device moved away from (``move(to:transport:)``), and only when that
    /// copy holds nothing the account's server lacks: its chain must be the start of
    /// this server's (not a link more, such as a revocation made there after the
    /// export), and each of its attachments must be listed here too. This device and
    /// its home stay as they are. The old server never takes the account's id again.
    ///
    /// - Throws: `invalid_input` for another server, or naming what would be lost;
    ///   nothing is deleted then.
    public func deleteAccount(on transport: any HTTPTransport, server: URL) async throws {
        guard let left = record.movedFrom, Self.sameServer(left, server.absoluteString) else {
            throw KeyVaultError(.invalidInput, record.movedFrom.map { "this device moved away from \($0), not from \(server.absoluteString): nothing was deleted" }
                                ?? "this device has not moved from another server: nothing was deleted")
        }
        try await sync()
        try await exclusively {
            let old = ServerAPI(transport: transport, account: account, keys: record.keys)
            let (instance, head) = try await checkNothingLeftBehind(on: old, comparedTo: api)
            try await old.deleteAccount(instance: instance, head: head)
            record.movedFrom = nil
            try home.save(record)
        }
    }

    /// Whether two server URLs name one server (scheme and host in any case, the default
    /// port, a trailing slash). Aliases of a host (an address, another name) are not found
    /// out; ``deleteAccount(on:server:)`` deletes only on the server this device left.
    static func sameServer(_ a: String, _ b: String) -> Bool {
        func key(_ text: String) -> String? {
            guard let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
            let port = url.port ?? (scheme == "https" ? 443 : 80)
            return "\(scheme)://\(host):\(port)/" + url.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        }
        return key(a) != nil && key(a) == key(b)
    }

    /// Refuses unless `old` is another service than `new` (their instances differ: never
    /// the only copy, under an alias) and holds nothing `new` lacks: its chain is the start
    /// of the one `new` holds (not a link more, such as a revocation made there after the
    /// export), and each of its attachments is listed by `new` too.
    ///
    /// - Returns: `old`'s instance and head, which its delete names (so that a change made
    ///   there meanwhile is not deleted, and no other server can replay the delete).
    /// - Throws: `invalid_input` naming what would be lost.
    private func checkNothingLeftBehind(on old: ServerAPI, comparedTo new: ServerAPI, pinned: String? = nil) async throws -> (instance: String, head: String) {
        let instance = try await instance(of: old, pinned: pinned, "the old server")
        guard try await new.instance() != instance else {
            throw KeyVaultError(.invalidInput, "the old and the new server are one service (the same instance): nothing was deleted")
        }
        let there = try await old.chain().links, here = try await new.chain().links
        guard let last = there.last, there.count <= here.count, here[there.count - 1].hash == last.hash else {
            throw KeyVaultError(.invalidInput, "the old server's copy of the account has changes the new one lacks (its chain ends at link \(max(there.count, 1) - 1)): nothing was deleted there; export again from a device still using it, and import again")
        }
        for member in try chain.members.keys {
            let kept = Set(try await new.attachments(member: member).map(\.address))
            let missing = try await old.attachments(member: member).filter { !kept.contains($0.address) }
            guard missing.isEmpty else {
                throw KeyVaultError(.invalidInput, "\(missing.count) attachment(s) on the old server are not on the new one (\(missing[0].address)…): nothing was deleted there; export and import again")
            }
        }
        return (instance, last.hash)
    }
}

/// A file read a line at a time, each line at most a given length.
final class LineReader {
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var start = 0
    /// Where the search for the next newline goes on (the bytes before it have none).
    private var scanned = 0
    private var atEnd = false

    init(path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw KeyVaultError(.io, "cannot open \(path) for reading") }
        self.handle = handle
    }

    deinit { try? handle.close() }

    /// The next line without its newline; nil at the end.
    ///
    /// - Throws: `invalid_input` for a line longer than `limit` bytes.
    func next(limit: Int) throws -> [UInt8]? {
        while true {
            if let newline = buffer[max(start, scanned)...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[start..<newline])
                start = newline + 1
                scanned = start
                return line
            }
            scanned = buffer.count
            guard buffer.count - start <= limit else { throw KeyVaultError(.invalidInput, "a line is longer than \(limit) bytes") }
            if atEnd {
                guard start < buffer.count else { return nil }
                let line = Array(buffer[start...])
                start = buffer.count
                return line
            }
            if start > 0 {
                buffer.removeFirst(start)
                scanned -= start
                start = 0
            }
            let more: Data?
            do { more = try handle.read(upToCount: 1 << 20) } catch { throw KeyVaultError(.io, "cannot read the file: \(error.localizedDescription)") }
            if let more, !more.isEmpty { buffer += more } else { atEnd = true }
        }
    }
}
