import Foundation
import Hummingbird
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol

/// A member's attachments: content-addressed objects whose data key can be re-wrapped.
struct AttachmentController: Sendable {
    let service: ServiceState
    /// An upload's begin: its key part and two numbers (the relay's takes the same).
    static let beginBodyLimit = 16 << 10

    func addRoutes(to routes: RouteBuilder) {
        let attachment = "/v1/accounts/{account}/members/{member}/attachments/{address}"
        routes.signed(.get, "/v1/accounts/{account}/members/{member}/attachments", use: list)
        routes.signed(.put, attachment, bodyLimit: service.configuration.maxWholeAttachmentBytes, use: put)
        routes.signed(.get, attachment, use: get)
        routes.signed(.get, attachment + "/key", use: getKey)
        routes.signed(.put, attachment + "/key", bodyLimit: AttachmentObject.maximumKeyBytes, use: putKey)
        // Its name and details, sealed by a device (docs/formats/attachment-meta.md); and its end.
        routes.signed(.put, attachment + "/meta", bodyLimit: AttachmentObject.maximumMetaBytes, use: putMeta)
        routes.signed(.delete, attachment, acceptsSessions: false, use: delete)
        // Attachments in chunks: any size through a bounded amount of memory (docs/api.md).
        routes.signed(.post, attachment + "/uploads", bodyLimit: Self.beginBodyLimit, use: beginUpload)
        routes.signed(.put, attachment + "/uploads/{upload}/chunks/{index}",
                      bodyLimit: ChunkLayout.maximumSealedChunkBytes, use: putChunk)
        routes.signed(.post, attachment + "/uploads/{upload}/complete", use: completeUpload)
        routes.signed(.get, attachment + "/uploads/{upload}", use: uploadStatus)
        routes.signed(.get, attachment + "/chunks", use: listChunks)
        routes.signed(.get, attachment + "/chunks/{index}", use: getChunk)
    }

    /// The member and address in the path.
    private func target(_ context: SignedRequestContext) throws -> (member: MemberID, address: String) {
        (try context.parameters.member(), try context.parameters.address().description)
    }

    @Sendable func list(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        try await list(context.account, member: try context.parameters.member())
    }

    /// With `?replace=true` (a device of the account, never a grantee), what is at the
    /// address is replaced: the device found it does not open (another party planted it).
    @Sendable func put(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (member, address) = try target(context)
        return try await put(context.account, member: member, address: address, body: context.body, by: context.device.id,
                             replace: try replacing(request))
    }

    @Sendable func get(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (member, address) = try target(context)
        return try await get(context.account, member: member, address: address)
    }

    // The three steps on the account that owns the attachment, which is the caller's
    // own, or a sharer's for a grantee (SharingController, once it checked the grant).

    func list(_ account: AccountID, member: MemberID) async throws -> Response {
        try .json(["attachments": try await service.database.attachments(account, member: member)])
    }

    /// - Parameter device: the device that sent it, for the audit log of `account`.
    func put(_ account: AccountID, member: MemberID, address: String, body: [UInt8], by device: DeviceID,
             replace: Bool = false) async throws -> Response {
        guard try await service.chainState(account).members[member] != nil else { throw APIError.notFound("member") }
        let object = try AttachmentObject(bytes: body)
        let info = replace
            ? try await service.database.replaceAttachment(account, member: member, address: address, key: Data(object.key),
                                                           data: Data(object.storedContent), device: device)
            : try await service.database.putAttachment(account, member: member, address: address, key: Data(object.key),
                                                       data: Data(object.storedContent), device: device)
        return try .json(info, status: info.existed == true ? .ok : .created)
    }

    func get(_ account: AccountID, member: MemberID, address: String) async throws -> Response {
        guard let stored = try await service.database.attachment(account, member: member, address: address) else {
            throw APIError.notFound("attachment")
        }
        guard let upload = stored.upload else {
            return .octetStream(AttachmentObject(key: [UInt8](stored.key), storedContent: [UInt8](stored.data)).bytes)
        }
        // Stored in chunks: the object is written out chunk by chunk, never whole in memory.
        let head = AttachmentObject(key: [UInt8](stored.key), storedContent: [UInt8](stored.data)).bytes
        let database = service.database, chunks = stored.chunks
        return Response(status: .ok, headers: [.contentType: "application/octet-stream"], body: ResponseBody { writer in
            try await writer.write(ByteBuffer(bytes: head))
            for index in 0..<chunks {
                // A chunk gone (the attachment replaced meanwhile) aborts the answer: the reader sees a cut transfer.
                guard let chunk = try await database.attachmentChunk(upload: upload, index: index) else {
                    throw APIError.notFound("chunk \(index)")
                }
                try await writer.write(ByteBuffer(bytes: chunk))
            }
            try await writer.finish(nil)
        })
    }

    // MARK: Reading in chunks

    @Sendable func listChunks(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (member, address) = try target(context)
        return try await listChunks(context.account, member: member, address: address)
    }

    @Sendable func getChunk(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (member, address) = try target(context)
        return try await getChunk(context.account, member: member, address: address, index: try context.parameters.chunkIndex())
    }

    @Sendable func getKey(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (member, address) = try target(context)
        return try await getKey(context.account, member: member, address: address)
    }

    /// An attachment uploaded in chunks: its count, its chunk size, and chunk `i` from
    /// its rows, learnt without reading its content. One put whole (at most
    /// ``ServerConfiguration/maxWholeAttachmentBytes``) is read whole: cutting chunks out
    /// of it would load it all for each.
    private func chunks(_ account: AccountID, member: MemberID, address: String) async throws -> (list: ChunkList, upload: String) {
        guard let layout = try await service.database.attachmentLayout(account, member: member, address: address) else {
            throw APIError.notFound("attachment")
        }
        guard let upload = layout.upload, let shift = layout.chunkShift else {
            throw APIError.badRequest("this attachment was put whole: GET it whole")
        }
        return (ChunkList(chunks: layout.chunks, chunkShift: shift), upload)
    }

    func listChunks(_ account: AccountID, member: MemberID, address: String) async throws -> Response {
        try .json(try await chunks(account, member: member, address: address).list)
    }

    func getChunk(_ account: AccountID, member: MemberID, address: String, index: Int) async throws -> Response {
        let (list, upload) = try await chunks(account, member: member, address: address)
        guard index < list.chunks, let bytes = try await service.database.attachmentChunk(upload: upload, index: index) else {
            throw APIError.notFound("chunk")
        }
        return .octetStream(bytes)
    }

    /// The wrapped data key alone (a reader in chunks takes it first).
    func getKey(_ account: AccountID, member: MemberID, address: String) async throws -> Response {
        guard let key = try await service.database.attachmentKey(account, member: member, address: address) else {
            throw APIError.notFound("attachment")
        }
        return .octetStream(key)
    }

    // MARK: Uploads in chunks

    /// `?replace=true` (the whole PUT, an upload's begin and completion). Replacing
    /// destroys what was there: a device's own signature, never a session (whose key
    /// the server, and a stolen secret file, can make).
    private func replacing(_ request: Request) throws -> Bool {
        let replace: Bool
        switch request.uri.queryParameters.get("replace") {
        case nil, "false": replace = false
        case "true": replace = true
        default: throw APIError.badRequest("replace is true or false")
        }
        if replace, request.headers[Headers.session] != nil {
            throw APIError(.signatureRequired, "replacing an attachment takes a device's signature, not a session")
        }
        return replace
    }

    @Sendable func beginUpload(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (member, address) = try target(context)
        return try await beginUpload(context.account, member: member, address: address, startedBy: context.account, body: context.body,
                                     replace: try replacing(request))
    }

    @Sendable func putChunk(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (member, address) = try target(context)
        return try await putChunk(context.account, member: member, address: address, upload: try context.parameters.upload(),
                                  startedBy: context.account, index: try context.parameters.chunkIndex(), body: context.body)
    }

    @Sendable func uploadStatus(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (member, address) = try target(context)
        return try await uploadStatus(context.account, member: member, address: address, upload: try context.parameters.upload(),
                                      startedBy: context.account)
    }

    @Sendable func completeUpload(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (member, address) = try target(context)
        return try await completeUpload(context.account, member: member, address: address, upload: try context.parameters.upload(),
                                        startedBy: context.account, replace: try replacing(request), by: context.device.id)
    }

    // The steps of an upload in `account`, begun by a device of `starter`'s (the account
    // itself, or a grantee through the relay): an upload is found only with its starter.

    /// Begins an upload in chunks; an address already there (unless replacing) needs none.
    func beginUpload(_ account: AccountID, member: MemberID, address: String, startedBy starter: AccountID, body: [UInt8],
                     replace: Bool = false) async throws -> Response {
        let body = try decodeBody(BeginUploadRequest.self, from: body)
        guard let key = Data(base64Encoded: body.key) else { throw APIError.badRequest("key is standard base64") }
        try AttachmentObject.checkKey([UInt8](key))
        guard let shift = UInt8(exactly: body.chunkShift), AttachmentObject.chunkShifts.contains(shift) else {
            throw APIError(.malformedAttachment, "chunkShift is 10 to 22 (chunks of 2^chunkShift bytes)")
        }
        guard body.size >= 0, body.size <= ServerConfiguration.attachmentLimits.upperBound else {
            throw APIError.badRequest("size is the content's length in bytes, at most 2^40")
        }
        let chunks = ChunkLayout.count(ofContent: body.size, chunkShift: shift)
        let objectSize = AttachmentObject.streamedSize(ofContent: body.size, chunkShift: shift, keyLength: key.count)
        guard objectSize <= service.configuration.maxAttachmentBytes else {
            throw APIError(.payloadTooLarge, "the attachment would be \(objectSize) bytes, over this server's \(service.configuration.maxAttachmentBytes)")
        }
        guard try await service.chainState(account).members[member] != nil else { throw APIError.notFound("member") }
        if !replace, try await service.database.attachmentLayout(account, member: member, address: address) != nil {
            return try .json(UploadStarted(upload: nil, chunks: chunks, existed: true))
        }
        let upload = Hex.encode(SystemRandom.bytes(count: 16))
        try await service.database.beginUpload(account, member: member, address: address, upload: upload, startedBy: starter, key: key,
                                               chunkShift: Int(shift), size: body.size, chunks: chunks)
        return try .json(UploadStarted(upload: upload, chunks: chunks, existed: false), status: .created)
    }

    /// Stores one sealed chunk: its index within the upload, and exactly the length
    /// its place takes (2^s + 16 bytes, the last what remains).
    func putChunk(_ account: AccountID, member: MemberID, address: String, upload: String, startedBy starter: AccountID, index: Int,
                  body: [UInt8]) async throws -> Response {
        guard let info = try await service.database.unfinishedUpload(account, member: member, address: address, upload: upload,
                                                                     startedBy: starter) else {
            throw APIError.notFound("upload")
        }
        guard index < info.chunks else { throw APIError.badRequest("the upload has \(info.chunks) chunks, 0 to \(info.chunks - 1)") }
        let expected = ChunkLayout.sealedLength(ofChunk: index, content: info.size, chunkShift: UInt8(clamping: info.chunkShift))
        guard body.count == expected else {
            throw APIError(.malformedAttachment, "chunk \(index) is \(expected) bytes sealed, not \(body.count)")
        }
        guard try await service.database.putUploadChunk(account, member: member, address: address, upload: upload, startedBy: starter,
                                                        index: index, data: Data(body)) else {
            throw APIError.notFound("upload")
        }
        return Response(status: .noContent)
    }

    /// Where an unfinished upload stands, for a device resuming it: its chunk count and
    /// how many chunks are stored from index 0 on. 404 once it completed or was dropped.
    func uploadStatus(_ account: AccountID, member: MemberID, address: String, upload: String, startedBy starter: AccountID) async throws -> Response {
        guard let info = try await service.database.unfinishedUpload(account, member: member, address: address, upload: upload,
                                                                     startedBy: starter) else {
            throw APIError.notFound("upload")
        }
        let stored = try await service.database.storedChunkPrefix(upload: upload)
        return try .json(UploadStatus(upload: upload, chunks: info.chunks, stored: min(stored, info.chunks)))
    }

    /// Makes a complete upload the attachment at its address.
    ///
    /// - Parameter device: the device that sent it, for the audit log of `account`.
    func completeUpload(_ account: AccountID, member: MemberID, address: String, upload: String, startedBy starter: AccountID,
                        replace: Bool = false, by device: DeviceID) async throws -> Response {
        guard let info = try await service.database.unfinishedUpload(account, member: member, address: address, upload: upload,
                                                                     startedBy: starter) else {
            throw APIError.notFound("upload")
        }
        let objectSize = AttachmentObject.streamedSize(ofContent: info.size, chunkShift: UInt8(clamping: info.chunkShift), keyLength: info.keyLength)
        switch try await service.database.completeUpload(account, member: member, address: address, upload: upload, startedBy: starter,
                                                          replace: replace, objectSize: objectSize, device: device) {
        case .stored(let stored): return try .json(stored, status: stored.existed == true ? .ok : .created)
        case .unknown: throw APIError.notFound("upload")
        case .incomplete(let have, let need):
            throw APIError.badRequest("the upload has \(have) of its \(need) chunks: put the others first")
        }
    }

    /// Re-wrapping: replaces an attachment's wrapped data key, never its content.
    @Sendable func putKey(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (member, address) = try target(context)
        try AttachmentObject.checkKey(context.body)
        guard try await service.database.replaceAttachmentKey(context.account, member: member, address: address,
                                                              key: Data(context.body), device: context.device.id) else {
            throw APIError.notFound("attachment")
        }
        return Response(status: .noContent)
    }

    /// Grants nothing: an envelope only a holder of the member key made or opens.
    @Sendable func putMeta(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (member, address) = try target(context)
        return try await putMeta(context.account, member: member, address: address, body: context.body, grantee: nil)
    }

    /// - Parameter grantee: the grantee's device naming it, which names only an attachment that
    ///   has none (409 `attachment_named` otherwise), in `account`'s audit log; nil: a device of
    ///   the account, which replaces the name it has.
    func putMeta(_ account: AccountID, member: MemberID, address: String, body: [UInt8], grantee: DeviceID?) async throws -> Response {
        try AttachmentObject.checkMeta(body)
        switch try await service.database.setAttachmentMeta(account, member: member, address: address, meta: Data(body), grantee: grantee) {
        case .set: return Response(status: .noContent)
        case .noAttachment: throw APIError.notFound("attachment")
        case .named: throw APIError(.attachmentNamed, "this attachment has a name already: only the sharer's devices rename it")
        }
    }

    /// Destroys: a device's own signature (``RouteBuilder`` refuses sessions here).
    @Sendable func delete(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (member, address) = try target(context)
        guard try await service.database.deleteAttachment(context.account, member: member, address: address, device: context.device.id) else {
            throw APIError.notFound("attachment")
        }
        return Response(status: .noContent)
    }
}
