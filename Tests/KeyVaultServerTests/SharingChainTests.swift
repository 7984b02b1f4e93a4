import Foundation
import HTTPTypes
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultPostgres
import Testing
@testable import KeyVaultServer

/// The service appends the sharing links of docs/formats/member-sharing.md exactly as
/// the chain rules say, and refuses them with the chain's codes and the statuses of
/// docs/api.md; the chain it serves replays to the same state.
@Test(arguments: StoreBackend.all) func theServerAppendsSharingLinksAndRefusesThemWithTheChainsCodes(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let phone = TestDevice("phone")
        var state = try await client.createAccount(phone)
        let member = MemberID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))
        let grantee = AccountID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))
        func keys(_ generation: UInt32) -> [String: String] {
            ["identityGeneration": String(generation), "signingKey": Hex.encode(Ed25519.PrivateKey().publicKey.rawRepresentation),
             "boxKey": Hex.encode(X25519.PrivateKey().publicKey.rawRepresentation)]
        }
        let identity = Ed25519.PrivateKey()
        let ownKeys = ["identityGeneration": "1", "signingKey": Hex.encode(identity.publicKey.rawRepresentation),
                       "boxKey": Hex.encode(X25519.PrivateKey().publicKey.rawRepresentation)]
        let grant = ["member": member.rawValue, "grantee": grantee.rawValue, "granteeIdentityGeneration": "1", "readOnly": "true"]
        var pin = keys(1)
        pin["account"] = grantee.rawValue
        var wrongGeneration = grant
        wrongGeneration["granteeIdentityGeneration"] = "2"
        let revoke = ["member": member.rawValue, "grantee": grantee.rawValue]
        let steps: [(LinkType, [String: String], HTTPResponse.Status, String?)] = [
            (.memberAdd, ["member": member.rawValue, "memberGeneration": "1"], .created, nil),
            (.shareGrant, grant, .conflict, "no_identity"),
            (.identitySet, ownKeys, .created, nil),
            (.shareGrant, grant, .badRequest, "unknown_contact"),
            (.contactPin, pin, .created, nil),
            (.shareGrant, wrongGeneration, .conflict, "contact_changed"),
            (.shareGrant, grant, .created, nil),
            (.shareGrant, grant, .conflict, "grant_exists"),
            (.shareRevoke, revoke, .created, nil),
            (.shareRevoke, revoke, .badRequest, "unknown_grant"),
        ]
        for (type, body, status, code) in steps {
            // What the relay needs with the links (SharingRelayTests): the identity's wrap, the grant's box.
            let link = phone.link(type, after: state, body: body)
            var append = AppendRequest(link: link)
            if type == .identitySet {
                append.identityWraps = [IdentityWrap(identityGeneration: 1, masterGeneration: 1, envelope: base64Encode(SystemRandom.bytes(count: 100)))]
            }
            if type == .shareGrant {
                var box = ShareBox(member: member, memberGeneration: 1, grantee: grantee, granteeIdentityGeneration: 1, grant: link.sequence,
                                   box: base64Encode(SystemRandom.bytes(count: 80)))
                box.sign(with: identity, sharer: state.account)
                append.shareBoxes = [box]
            }
            let response = try await client.append(phone, &state, append)
            #expect(response.status == status && errorCode(response) == code, "\(type.rawValue): \(String(buffer: response.body))")
        }
        let chain = try decode(ChainResponse.self, try await client.signed(phone, .get, "/v1/accounts/\(state.account)/chain"))
        let served = try ChainState(links: chain.links)
        #expect(served == state)
        #expect(served.identity?.generation == 1 && served.contacts[grantee]?.generation == 1)
        #expect(served.grants.isEmpty && served.revokedGrants.count == 1)
    }
}
