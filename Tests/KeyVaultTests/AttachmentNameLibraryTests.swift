import Foundation
import KeyVault
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultTestSupport
import KeyVaultVault
import Testing

// Issue 22, item 2, from the library's side: a name sealed under a member key
// generation older than its attachment's address is refused. Such a name could only
// come from whoever still holds that old generation: a device revoked since, or a
// grantee whose share ended, with the server's help.

@Test func aNameSealedUnderAGenerationOlderThanItsAttachmentIsNotShown() async throws {
    try await Fixture.run { fixture, laptop in
        let emma = try await laptop.addMember(name: "Emma")
        _ = try await laptop.put(Array("before".utf8), member: emma, name: "a.txt")
        try await laptop.rotateMember(emma.id)
        let current = try await laptop.member(named: "Emma")
        let put = try await laptop.put(Array("after".utf8), member: current, name: "b.txt")
        #expect(try await laptop.attachments(member: current).compactMap(\.name).sorted() == ["a.txt", "b.txt"])

        // What a holder of generation 1 alone can make for the new attachment: a name under generation 1.
        let old = try MemberKeys(member: emma.id, generation: 1, memberKey: try await laptop.memberKey(emma.id, generation: 1))
        let forged = try AttachmentMeta(name: "a.txt", type: "text/plain", time: 0, size: 6).seal(account: laptop.account, address: put.address, keys: old)
        let forge = rewriting("/attachments", as: [String: [AttachmentInfo]].self) { list in
            for index in list["attachments", default: []].indices where list["attachments"]![index].address == put.address.description {
                list["attachments"]![index].meta = Data(forged).base64EncodedString()
            }
        }
        fixture.transport.tamper { request, reply in
            if request.target.hasSuffix("/attachments") { try forge(request, &reply) }  // the list, not an attachment's chunks
        }
        let listed = try await laptop.attachments(member: current)
        let forgedOne = try #require(listed.first { $0.address == put.address })
        #expect(forgedOne.name == nil && forgedOne.nameProblem != nil, "an old generation's name was shown")
        // Looked up by name, it counts for nothing: a.txt is the one it named, and b.txt is not found.
        #expect(try await laptop.attachment(named: "a.txt", member: current).address != put.address)
        await expectRefusal("no_such_attachment", kind: .input) { _ = try await laptop.attachment(named: "b.txt", member: current) }
        // Renamed, its time and size are not the forged name's (0, 6 bytes): the content is counted.
        let renamed = try await laptop.renameAttachment(put.address, member: current, to: "b.txt")
        #expect(renamed.name == "b.txt" && renamed.plainSize == 5)
        #expect(try #require(renamed.time).timeIntervalSinceNow > -600)
    }
}
