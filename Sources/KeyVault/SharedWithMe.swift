import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultVault

// What other accounts share with this one (docs/formats/member-sharing.md, "Share
// boxes"): every box checked against the sharer's chain, as fresh as the window
// allows, and this account's own pin of the sharer, before it is opened.

extension Vault {
    // MARK: Receiving

    /// What other accounts share with this one.
    public struct SharedView: Sendable {
        /// Members whose keys opened, checked against each sharer's chain and this account's pin of it.
        public internal(set) var members: [Member]
        /// Sharers whose boxes were refused, and why (an unverified sharer, a changed identity, a forged box).
        public internal(set) var refused: [Refusal]
    }

    /// A sharer whose boxes were refused, and why.
    public struct Refusal: Sendable, Equatable {
        public let sharer: AccountID
        public let reason: String
    }

    /// The members other accounts share with this one. For each sharer the server
    /// lists: its chain (served to this account's devices while it pins this account) is
    /// replayed from its genesis, which must be the sharer's account id; the sharer
    /// must be a contact this account pinned, with the same identity now; every share
    /// box must pass ``ShareBox/verify(from:for:)`` before it is opened with this
    /// account's identity. A sharer that fails is reported in `refused`, never used.
    public func sharedMembers() async throws -> SharedView {
        try await exclusively {
            try await sync()
            let me = try chain
            var view = SharedView(members: [], refused: [])
            guard me.identity != nil else { return view }
            for entry in try await api.shared().sorted(by: { $0.sharer.rawValue < $1.sharer.rawValue }) {
                do {
                    view.members += try await openShared(entry, me: me)
                } catch let error as KeyVaultError where error.kind == .verification || error.kind == .server {
                    sharedKeys[entry.sharer] = nil
                    view.refused.append(Refusal(sharer: entry.sharer, reason: error.message))
                }
            }
            view.members.sort { ($0.name, $0.sharer?.rawValue ?? "") < ($1.name, $1.sharer?.rawValue ?? "") }
            return view
        }
    }

    private func openShared(_ entry: SharedWithAccount, me: ChainState) async throws -> [Member] {
        let sharer = entry.sharer
        guard sharer != account else { throw KeyVaultError(.badResponse, "the server lists this account as sharing with itself", kind: .verification) }
        guard me.contacts[sharer] != nil else {
            throw KeyVaultError(.unknownContact, "\(sharer) is not a contact this account verified; nothing it shares is opened", kind: .verification)
        }
        let state = try await contactChain(sharer)
        var keys = [MemberID: [UInt32: SymmetricKey]]()
        for box in entry.boxes {
            do {
                try box.verify(from: state, for: me)
            } catch {
                throw KeyVaultError.verification(error, "a share box from \(sharer) is refused")
            }
            let identity = try await identityKeys(generation: box.granteeIdentityGeneration)
            guard let sealed = base64Decode(box.box), let key = try? SymmetricKey(identity.boxKey.openSealedBox(sealed)) else {
                throw KeyVaultError(.badBox, "a share box from \(sharer) does not open with this account's identity", kind: .verification)
            }
            keys[box.member, default: [:]][box.memberGeneration] = key
        }
        sharedKeys[sharer] = keys
        var members = [Member]()
        for grant in state.grants.values where grant.grantee == account {
            guard let member = state.members[grant.member], let key = keys[grant.member]?[member.nameGeneration] else { continue }
            let name: String
            do {
                name = try MemberName.open(member.name, account: sharer, member: member.id, key: key)
            } catch {
                throw KeyVaultError.verification(error, "the name of a member \(sharer) shares")
            }
            members.append(Member(id: member.id, name: name, generation: member.generation, sharer: sharer, readOnly: grant.readOnly))
        }
        return members
    }

    /// A key of a member another account shares, as its checked share box gave it
    /// (opened again from the sharer when this session has not yet).
    func sharedKey(_ member: Member, generation: UInt32) async throws -> SymmetricKey {
        guard let sharer = member.sharer else { throw KeyVaultError(.noSuchMember, "\(member.name) is not a shared member") }
        if sharedKeys[sharer]?[member.id]?[generation] == nil { _ = try await sharedMembers() }
        guard let key = sharedKeys[sharer]?[member.id]?[generation] else {
            throw KeyVaultError(.missingKey, "\(sharer) has sent this account no key of generation \(generation) of \(member.name)", kind: .verification)
        }
        return key
    }

    /// A shared member as its sharer's chain has it now (its newest generation, whether
    /// read-only), checked again; an error when it is no longer shared or now refused.
    func current(_ member: Member) async throws -> Member {
        guard let sharer = member.sharer else { return member }
        let view = try await sharedMembers()
        if let now = view.members.first(where: { $0.id == member.id && $0.sharer == sharer }) { return now }
        let refusal = view.refused.first { $0.sharer == sharer }
        throw KeyVaultError(refusal == nil ? .noSuchMember : .contactChanged,
                            "\(member.name) is no longer shared with this account" + (refusal.map { ": \($0.reason)" } ?? ""), kind: refusal == nil ? .input : .verification)
    }
}
