import KeyVaultModel
import KeyVaultProtocol

extension Vault {
    /// A contact pin or a share grant in force on the chain, and the device that signed
    /// it: what a revocation ends or keeps (docs/formats/account-chain.md, "Authority").
    public struct Standing: Sendable, Hashable {
        public enum Subject: Sendable, Hashable {
            /// This account's pin of a contact's identity.
            case contactPin(AccountID)
            /// A member shared with a grantee.
            case shareGrant(member: MemberID, grantee: AccountID)
        }

        public let subject: Subject
        /// The chain link that made it.
        public let link: UInt64
        /// The device that signed that link.
        public let signer: DeviceID

        /// The account it concerns: the pinned contact, or the grantee.
        public var account: AccountID {
            switch subject {
            case .contactPin(let account): account
            case .shareGrant(_, let grantee): grantee
            }
        }

        package init(_ standing: ChainState.Standing) {
            switch standing.subject {
            case .contactPin(let account): subject = .contactPin(account)
            case .shareGrant(let key): subject = .shareGrant(member: key.member, grantee: key.grantee)
            }
            link = standing.link
            signer = standing.signer
        }

    }
}
