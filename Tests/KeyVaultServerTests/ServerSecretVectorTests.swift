import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultTestSupport
import Testing
@testable import KeyVaultServer

/// Sessions (version 2) and recovery tickets against vectors made from
/// docs/formats/request-signature.md with Python's cryptography and hmac
/// (Scripts/vectors/generate.py, `server_secret_vectors`).
private struct SecretVectors: Decodable {
    struct Session: Decodable { let secret, device, random, session, key: String; let expires: Int64 }
    struct Ticket: Decodable { let secret, kind, account, random, ticket: String; let expires: Int64 }
    let sessions: [Session]
    let tickets: [Ticket]
}

private func secret(_ hex: String, in directory: TemporaryDirectory) throws -> ServerSecret {
    let path = directory.path(UUID().uuidString)
    #expect(FileManager.default.createFile(atPath: path, contents: Data((hex + "\n").utf8), attributes: [.posixPermissions: 0o600]))
    return try ServerSecret.load(orCreateAt: path)
}

@Test func sessionsAndRecoveryTicketsMatchTheIndependentVectors() throws {
    let vectors = try Vectors(in: .module).load("server-secret-v1", as: SecretVectors.self)
    let directory = try TemporaryDirectory("kv-secret-vectors")
    #expect(!vectors.sessions.isEmpty && !vectors.tickets.isEmpty)
    for vector in vectors.sessions {
        let sessions = try Sessions(secret: secret(vector.secret, in: directory))
        let opened = try sessions.open(for: DeviceID(unchecked: vector.device), now: vector.expires - Sessions.lifetime,
                                       random: try Hex.decode(vector.random))
        #expect(opened.id == vector.session && opened.expires == vector.expires)
        #expect(opened.key == (try SymmetricKey(SecureBytes(copying: Hex.decode(vector.key)))))
        let known = try #require(try sessions.get(vector.session, now: vector.expires))
        #expect(known.device.rawValue == vector.device && known.key == opened.key)
    }
    for vector in vectors.tickets {
        let lifetime = vector.kind == "recovery-challenge" ? RecoveryGate.challengeLifetime : RecoveryGate.tokenLifetime
        let ticket = KeyVaultServer.Ticket(kind: vector.kind, key: try secret(vector.secret, in: directory).key(for: vector.kind),
                                           lifetime: lifetime)
        let account = AccountID(unchecked: vector.account)
        let (issued, _) = try ticket.issue(for: account, now: vector.expires - lifetime, random: try Hex.decode(vector.random))
        #expect(issued == vector.ticket, "\(vector.kind)")
        #expect(ticket.expiry(of: vector.ticket, for: account, now: vector.expires) == vector.expires)
    }
}
