import KeyVaultModel

// docs/formats/account-chain.md, "Authority": the one table of what each link type
// grants, and what revoking the device that signed it (or one it descends from)
// does to it. The chain refuses a link type that has no row, and the revocation
// plan (``ChainState/revocation(of:keeping:keepingContacts:by:)``) is computed from the rows.

/// What a link of one type grants, what revocation does to it, and the fields its
/// body may have.
public struct LinkAuthority: Sendable, Equatable {
    /// What a link grants while it is in force.
    public enum Grant: String, Sendable, Equatable {
        /// A device: it signs requests and links, and receives master key boxes.
        case device
        /// A recovery code: it adds devices, sets codes, receives master key boxes.
        case recoveryCode = "recovery code"
        /// A key generation (master, member) or a sharing identity, held by whoever was
        /// sealed it.
        case keyGeneration = "key generation"
        /// A contact's identity, trusted to receive share boxes and sign the contact's.
        case contactPin = "contact pin"
        /// A member's key generations, sealed to a contact.
        case shareGrant = "share grant"
        /// Nothing: the link takes authority away.
        case nothing
    }

    /// What revoking the device that signed a link (or one it descends from) does to
    /// what the link granted.
    public enum OnRevocation: String, Sendable, Equatable {
        /// Revoked with its signer (`device.revoke`), unless the person keeps it.
        case revokedWithSigner = "revoked with its signer"
        /// Compromised (`recovery_compromised`) until a device sets a new code.
        case compromised
        /// Replaced by a generation made after the revocation, which no revoked device receives.
        case renewed
        /// Ended by a link of the account (`share.revoke`, `contact.unpin`) before the
        /// master key rotation, unless the person keeps it (then re-signed by the revoking device).
        case ended
        /// Nothing to take back.
        case nothing
    }

    public let grants: Grant
    public let onRevocation: OnRevocation
    /// Every field a body of this type may have; any other is refused (`malformed_link`).
    public let fields: Set<String>

    /// The table: one row per link type the chain accepts.
    public static let table: [LinkType: LinkAuthority] = {
        let device: Set<String> = ["device", "name", "signingKey", "boxKey"]
        let identity: Set<String> = ["identityGeneration", "signingKey", "boxKey"]
        return [
            .genesis: LinkAuthority(grants: .device, onRevocation: .nothing,  // the first device: never revoked by its own line
                                    fields: device.union(["masterGeneration", "masterKeyCheck"])),
            .deviceAdd: LinkAuthority(grants: .device, onRevocation: .revokedWithSigner, fields: device),
            .deviceRevoke: LinkAuthority(grants: .nothing, onRevocation: .nothing, fields: ["device"]),
            .recoverySet: LinkAuthority(grants: .recoveryCode, onRevocation: .compromised,
                                        fields: ["authKey", "boxKey", "recoveryGeneration"]),
            .masterRotate: LinkAuthority(grants: .keyGeneration, onRevocation: .renewed, fields: ["masterGeneration", "masterKeyCheck"]),
            .memberAdd: LinkAuthority(grants: .keyGeneration, onRevocation: .renewed, fields: ["member", "memberGeneration", "name"]),
            .memberRotate: LinkAuthority(grants: .keyGeneration, onRevocation: .renewed, fields: ["member", "memberGeneration"]),
            .identitySet: LinkAuthority(grants: .keyGeneration, onRevocation: .renewed, fields: identity),
            .contactPin: LinkAuthority(grants: .contactPin, onRevocation: .ended, fields: identity.union(["account"])),
            .shareGrant: LinkAuthority(grants: .shareGrant, onRevocation: .ended,
                                       fields: ["member", "grantee", "granteeIdentityGeneration", "readOnly"]),
            .shareRevoke: LinkAuthority(grants: .nothing, onRevocation: .nothing, fields: ["member", "grantee"]),
            .contactUnpin: LinkAuthority(grants: .nothing, onRevocation: .nothing, fields: ["account"]),
        ]
    }()
}

extension LinkType {
    /// This type's row of ``LinkAuthority/table`` (nil: the chain refuses the type).
    public var authority: LinkAuthority? { LinkAuthority.table[self] }
}

extension ChainState {
    /// Authority a link granted that is in force now, and that revocation ends
    /// (``LinkAuthority/OnRevocation/ended``): a contact pin or a share grant, with
    /// the device that signed it.
    public struct Standing: Sendable, Hashable {
        public enum Subject: Sendable, Hashable {
            case contactPin(AccountID)
            case shareGrant(GrantKey)
        }
        public var subject: Subject
        /// The type of the link that made it.
        public var type: LinkType {
            switch subject {
            case .contactPin: .contactPin
            case .shareGrant: .shareGrant
            }
        }
        /// The link that made it.
        public var link: UInt64
        /// The device that signed that link.
        public var signer: DeviceID

        /// The account it concerns: the pinned contact, or the grantee.
        public var account: AccountID {
            switch subject {
            case .contactPin(let account): account
            case .shareGrant(let key): key.grantee
            }
        }
    }

    /// Every pin and grant in force, each with its signer, oldest first: what links
    /// whose row says ``LinkAuthority/OnRevocation/ended`` made.
    public var standing: [Standing] {
        let pins = contacts.map { Standing(subject: .contactPin($0.key), link: $0.value.link, signer: $0.value.signer) }
        let shares = grants.map { Standing(subject: .shareGrant($0.key), link: $0.value.granted, signer: $0.value.signer) }
        return (pins + shares).filter { $0.type.authority?.onRevocation == .ended }.sorted { $0.link < $1.link }
    }

    /// Pins and grants in force that a revoked device signed: a revocation not yet
    /// finished, or one an earlier client left (`keyctl audit` reports them).
    public var orphaned: [Standing] {
        standing.filter { devices[$0.signer]?.isActive != true }
    }

    /// What revoking devices takes with it, computed from ``LinkAuthority/table``.
    public struct Revocation: Sendable, Equatable {
        /// The devices revoked: those asked for, then every active device that
        /// descends from them (``descends(_:from:)``), less those kept.
        public var devices: [Device]
        /// Devices that descend from them and stay: kept by the person, or the revoking device.
        public var keptDevices: [Device]
        /// Pins and grants the revoked devices signed, ended before the master rotation.
        public var ended: [Standing]
        /// Pins and grants they signed that the person keeps: re-signed by the revoking device.
        public var kept: [Standing]
        /// Whether the current recovery code is (or becomes) compromised.
        public var compromisesRecovery: Bool
    }

    /// The revocation of `targets` by device `revoker`, keeping the devices in `keep`
    /// and the contacts in `keepContacts` (their pins and the grants to them).
    public func revocation(of targets: [Device], keeping keep: Set<DeviceID> = [], keepingContacts keepContacts: Set<AccountID> = [],
                           by revoker: DeviceID) -> Revocation {
        var revoked = targets, kept = [Device]()
        var next = 0
        // The devices they added (`device.add`: revoked with its signer).
        while next < revoked.count {
            for added in devicesAdded(by: revoked[next].id)
            where !revoked.contains(where: { $0.id == added.id }) && !kept.contains(where: { $0.id == added.id }) {
                if keep.contains(added.id) || added.id == revoker { kept.append(added) } else { revoked.append(added) }
            }
            next += 1
        }
        let gone = Set(revoked.map(\.id))
        var ended = [Standing](), keptStanding = [Standing]()
        for item in standing where gone.contains(item.signer) || devices[item.signer]?.isActive != true {
            if keepContacts.contains(item.account) { keptStanding.append(item) } else { ended.append(item) }
        }
        // A grant rests on the pin of its grantee: ending the pin ends the grants to that account too.
        let unpinned = Set(ended.compactMap { if case .contactPin(let account) = $0.subject { account } else { nil } })
        for item in standing where !ended.contains(item) && !keptStanding.contains(item) && unpinned.contains(item.account) {
            ended.append(item)
        }
        let compromised = recovery?.isCompromised == true || revoked.contains { $0.isActive && recoveryCompromised(byRevoking: $0.id) }
        return Revocation(devices: revoked, keptDevices: kept, ended: ended.sorted { $0.link < $1.link }, kept: keptStanding,
                          compromisesRecovery: compromised)
    }
}
