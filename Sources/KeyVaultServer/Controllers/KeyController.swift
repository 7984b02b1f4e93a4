import Foundation
import Hummingbird
import KeyVaultModel

/// The key material stored with the chain: key boxes and member key wraps.
struct KeyController: Sendable {
    let service: ServiceState

    func addRoutes(to routes: RouteBuilder) {
        routes.signed(.get, "/v1/accounts/{account}/boxes", use: boxes)
        routes.signed(.get, "/v1/accounts/{account}/wraps", use: wraps)
    }

    @Sendable func boxes(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let generation = try request.query("generation", as: UInt32.self, "a positive number")
        // A device reads the boxes sealed to it; `recipient=all` lists every box (for audit).
        let all = request.uri.queryParameters.get("recipient") == "all"
        let boxes = if !all, generation == nil {
            // The request path's read: a replica may answer it from its copy read at the head this request saw.
            try await service.database.deviceBoxesJSON(context.account, recipient: context.device.id.rawValue, seen: context.head)
        } else {
            try await service.database.boxesJSON(context.account, recipient: all ? nil : context.device.id.rawValue, generation: generation)
        }
        var body = Data(#"{"boxes":["#.utf8)
        for (i, box) in boxes.enumerated() {
            if i > 0 { body.append(UInt8(ascii: ",")) }
            body.append(box)
        }
        body.append(contentsOf: Array("]}".utf8))
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    @Sendable func wraps(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let member = try request.query("member", as: MemberID.self, "32 lowercase hex digits")
        return try .json(["wraps": try await service.database.wraps(context.account, member: member)])
    }
}
