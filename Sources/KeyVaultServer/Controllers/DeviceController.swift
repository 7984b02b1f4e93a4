import Foundation
import Hummingbird
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol

/// An account's devices, and the sessions a device opens for MAC-authenticated requests.
struct DeviceController: Sendable {
    let service: ServiceState

    func addRoutes(to routes: RouteBuilder) {
        routes.signed(.get, "/v1/accounts/{account}/devices", use: devices)
        // Only an Ed25519-signed request may open a session, not a session request.
        routes.signed(.post, "/v1/accounts/{account}/sessions", acceptsSessions: false, use: openSession)
    }

    @Sendable func devices(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let devices = try await service.database.devices(context.account).map {
            DeviceInfo(id: $0.id, name: $0.name, status: $0.status, added: $0.added,
                       revoked: $0.revoked, lastSeen: $0.lastSeen)
        }
        return try .json(["devices": devices])
    }

    /// The session key is sealed to the device's box key.
    @Sendable func openSession(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (id, key, expires) = try service.authenticator.sessions.open(for: context.device.id, now: Int64(Date().timeIntervalSince1970))
        let sealed = try X25519.PublicKey(rawRepresentation: context.device.boxKey).sealedBox(for: key)
        return try .json(SessionGrant(session: id, key: base64Encode(sealed), expires: expires), status: .created)
    }
}
