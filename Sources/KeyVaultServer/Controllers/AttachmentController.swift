import Foundation
import Hummingbird
import KeyVaultModel
import KeyVaultProtocol

/// A member's attachments: content-addressed objects whose data key can be re-wrapped.
struct AttachmentController: Sendable {
    let service: ServiceState

    func addRoutes(to routes: RouteBuilder) {
        let attachment = "/v1/accounts/{account}/members/{member}/attachments/{address}"
        routes.signed(.get, "/v1/accounts/{account}/members/{member}/attachments", use: list)
        routes.signed(.put, attachment, bodyLimit: service.configuration.maxAttachmentBytes, use: put)
        routes.signed(.get, attachment, use: get)
        routes.signed(.get, attachment + "/key", use: getKey)
        routes.signed(.put, attachment + "/key", bodyLimit: AttachmentObject.maximumKeyBytes, use: putKey)
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
        let replace: Bool
        switch request.uri.queryParameters.get("replace") {
        case nil, "false": replace = false
        case "true": replace = true
        default: throw APIError.badRequest("replace is true or false")
        }
        // Replacing destroys what was there: a device's own signature, never a session (whose
        // key the server, and a stolen secret file, can make).
        if replace, request.headers[Headers.session] != nil {
            throw APIError(.signatureRequired, "replacing an attachment takes a device's signature, not a session")
        }
        return try await put(context.account, member: member, address: address, body: context.body, by: context.device.id, replace: replace)
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
        return .octetStream(AttachmentObject(key: [UInt8](stored.key), storedContent: [UInt8](stored.data)).bytes)
    }

    @Sendable func getKey(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (member, address) = try target(context)
        guard let key = try await service.database.attachmentKey(context.account, member: member, address: address) else {
            throw APIError.notFound("attachment")
        }
        return .octetStream(key)
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
}
