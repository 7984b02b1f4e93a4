import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore

extension ServiceState {
    /// The sharing relay's rules on an append (docs/formats/member-sharing.md, "The
    /// relay: routes"), judged against the chain with the link applied: every identity
    /// wrap and share box is one the chain explains, and `identity.set`, `master.rotate`,
    /// `share.grant` and `member.rotate` come with the wraps and boxes they need (an
    /// identity renewal's re-sealed boxes are the client's to send), so that an honest
    /// client that forgot one finds out now, not when a device or a grantee lacks a key.
    func checkSharing(_ append: AppendRequest, after: ChainState) throws {
        let master = after.masterGeneration
        let kept = after.identityGenerations
        for wrap in append.identityWraps {
            let identity = after.identity?.generation ?? 0
            guard kept.contains(wrap.identityGeneration), wrap.masterGeneration == master,
                  base64Decode(wrap.envelope).map({ (62...4096).contains($0.count) }) == true
            else {
                throw APIError.badRequest("an identity wrap names an identity generation of the account (\(kept.first ?? 1) to \(identity)) and its current master generation (\(master)), with a base64 envelope of 62 to 4096 bytes")
            }
        }
        let wrapped = Set(append.identityWraps.map(\.identityGeneration))
        switch append.link.type {
        case .identitySet:
            let generation = after.identity?.generation ?? 0
            guard wrapped.contains(generation) else {
                throw APIError.badRequest("an identity.set link comes with the identity wrap of its generation \(generation) under master generation \(master)")
            }
        case .masterRotate:
            if let missing = kept.first(where: { !wrapped.contains($0) }) {
                throw APIError.badRequest("a master.rotate link comes with a wrap of every identity generation (\(kept.first ?? 1) to \(kept.last ?? 1)) under master generation \(master); \(missing) is missing")
            }
        default: break
        }

        for box in append.shareBoxes { try box.verify(in: after) }
        let needed: [(grant: ChainState.Grant, generations: ClosedRange<UInt32>)]
        switch append.link.type {
        case .shareGrant:
            // The grant this link made: a box of every generation of its member so far.
            needed = after.grants.values.filter { $0.granted == append.link.sequence }
                .map { ($0, 1...(after.members[$0.member]?.generation ?? 1)) }
        case .memberRotate:
            // Every grant of the rotated member in force: a box of the new generation.
            guard let member = append.link.body["member"].flatMap(MemberID.init(rawValue:)),
                  let generation = after.members[member]?.generation else { return }
            needed = after.grants.values.filter { $0.member == member }.sorted { $0.granted < $1.granted }.map { ($0, generation...generation) }
        default:
            return
        }
        for (grant, generations) in needed {
            for generation in generations where !append.shareBoxes.contains(where: {
                $0.member == grant.member && $0.grantee == grant.grantee && $0.grant == grant.granted && $0.memberGeneration == generation
            }) {
                throw APIError.badRequest("a \(append.link.type.rawValue) link comes with a share box of member key generation \(generation) for \(grant.grantee) (the grant of link \(grant.granted)); it is missing")
            }
        }
    }
}
