/// One member key generation sealed to a grantee account's sharing identity and
/// signed by the sharer's identity (docs/formats/member-sharing.md, "Share boxes").
/// The sharer's account is not a field: the box is judged against that account's
/// chain, whose id goes into the signed bytes.
package struct ShareBox: Sendable, Codable, Equatable {
    package var member: MemberID
    /// The member key generation sealed in the box.
    package var memberGeneration: UInt32
    /// The account the member is shared with.
    package var grantee: AccountID
    /// The grantee's identity generation the box is sealed to (the one its grant names).
    package var granteeIdentityGeneration: UInt32
    /// The sequence of the `share.grant` link the box belongs to.
    package var grant: UInt64
    /// Base64 sealed box (to the grantee's identity box key).
    package var box: String
    /// Base64 Ed25519 signature by the sharer's identity signing key.
    package var signature: String

    package init(member: MemberID, memberGeneration: UInt32, grantee: AccountID, granteeIdentityGeneration: UInt32, grant: UInt64,
                box: String, signature: String = "") {
        self.member = member
        self.memberGeneration = memberGeneration
        self.grantee = grantee
        self.granteeIdentityGeneration = granteeIdentityGeneration
        self.grant = grant
        self.box = box
        self.signature = signature
    }
}
