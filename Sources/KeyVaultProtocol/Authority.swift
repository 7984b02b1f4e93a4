import KeyVaultModel

// docs/formats/account-chain.md, "Authority": the one table of what each link type
// grants, and what revoking the device that signed it (or one it descends from)
// does to it. The chain refuses a link type that has no row, and the revocation
// plan (``ChainState/revocation(of:keeping:keepingContacts:by:)``) is computed from the rows.

/// What a link of one type grants, what revocation does to it, and the fields its
/// body may have.
package struct LinkAuthority: Sendable, Equatable {
    /// What a link grants while it is in force.
    package enum Grant: String, Sendable, Equatable {
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
    package enum OnRevocation: String, Sendable, Equatable {
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

    package let grants: Grant
    package let onRevocation: OnRevocation
    /// Every field a body of this type may have; any other is refused (`malformed_link`).
    package let fields: Set<String>

    /// The table: one row per link type the chain accepts.
    package static let table: [LinkType: LinkAuthority] = {
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
            // A new sealed name: readable by whoever holds that generation, which it grants no one.
            .memberRename: LinkAuthority(grants: .nothing, onRevocation: .nothing, fields: ["member", "name", "nameGeneration"]),
            // Takes a member's key generations out of use (the server drops its wraps and attachments).
            .memberRemove: LinkAuthority(grants: .nothing, onRevocation: .nothing, fields: ["member"]),
            // Revokes every other device and ends every member, share and contact; grants a
            // new master key generation and, like recovery.set, a recovery code, compromised
            // when its signer is revoked (a new master generation is renewed then too).
            .accountReset: LinkAuthority(grants: .recoveryCode, onRevocation: .compromised,
                                         fields: ["masterGeneration", "masterKeyCheck", "authKey", "boxKey", "recoveryGeneration"]),
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
    package var authority: LinkAuthority? { LinkAuthority.table[self] }
}

extension ChainState {
    /// Authority a link granted that is in force now, and that revocation ends
    /// (``LinkAuthority/OnRevocation/ended``): a contact pin or a share grant, with
    /// the device that signed it.
    package struct Standing: Sendable, Hashable {
        package enum Subject: Sendable, Hashable {
            case contactPin(AccountID)
            case shareGrant(GrantKey)
        }
        package var subject: Subject
        /// The type of the link that made it.
        package var type: LinkType {
            switch subject {
            case .contactPin: .contactPin
            case .shareGrant: .shareGrant
            }
        }
        /// The link that made it.
        package var link: UInt64
        /// The device that signed that link.
        package var signer: DeviceID

        /// The account it concerns: the pinned contact, or the grantee.
        package var account: AccountID {
            switch subject {
            case .contactPin(let account): account
            case .shareGrant(let key): key.grantee
            }
        }
    }

    /// Every pin and grant in force, each with its signer, oldest first.
    package var standing: [Standing] {
        let pins = contacts.map { Standing(subject: .contactPin($0.key), link: $0.value.link, signer: $0.value.signer) }
        let shares = grants.map { Standing(subject: .shareGrant($0.key), link: $0.value.granted, signer: $0.value.signer) }
        return (pins + shares).sorted { $0.link < $1.link }
    }

    /// Pins and grants in force that a revoked device signed: a revocation not yet
    /// finished, or one an earlier client left (`keyctl audit` reports them).
    package var orphaned: [Standing] {
        standing.filter { devices[$0.signer]?.isActive != true }
    }

    /// What revoking devices takes with it, computed from ``LinkAuthority/table``.
    package struct Revocation: Sendable, Equatable {
        /// The devices revoked: those asked for, then every active device that
        /// descends from them (``descends(_:from:)``), less those kept.
        package var devices: [Device]
        /// Devices that descend from them and stay: kept by the person, or the revoking device.
        package var keptDevices: [Device]
        /// Pins and grants the revoked devices signed, ended before the master rotation.
        package var ended: [Standing]
        /// Pins and grants they signed that the person keeps: re-signed by the revoking device.
        package var kept: [Standing]
        /// Whether the current recovery code is (or becomes) compromised.
        package var compromisesRecovery: Bool
    }

    /// The revocation of `targets` by device `revoker`, keeping the devices in `keep`
    /// and the contacts in `keepContacts` (their pins and the grants to them): each
    /// row of ``LinkAuthority/table`` applied to what links of its type granted.
    package func revocation(of targets: [Device], keeping keep: Set<DeviceID> = [], keepingContacts keepContacts: Set<AccountID> = [],
                           by revoker: DeviceID) -> Revocation {
        var result = Revocation(devices: targets, keptDevices: [], ended: [], kept: [], compromisesRecovery: recovery?.isCompromised == true)
        // The rows in a fixed order: devices first, since what is ended or compromised depends on who is revoked.
        let rows = LinkAuthority.table.sorted { ($0.value.onRevocation.order, $0.key.rawValue) < ($1.value.onRevocation.order, $1.key.rawValue) }
        for (type, row) in rows {
            switch row.onRevocation {
            case .revokedWithSigner:
                // The devices they added (`device.add`, the one row of this kind), and theirs in
                // turn (``descends(_:from:)``).
                var next = 0
                while next < result.devices.count {
                    for added in devicesAdded(by: result.devices[next].id)
                    where !result.devices.contains(where: { $0.id == added.id }) && !result.keptDevices.contains(where: { $0.id == added.id }) {
                        if keep.contains(added.id) || added.id == revoker { result.keptDevices.append(added) } else { result.devices.append(added) }
                    }
                    next += 1
                }
            case .compromised:
                // A code a revoked device (or one it added) set (``recoveryCompromised(byRevoking:)``).
                result.compromisesRecovery = result.compromisesRecovery
                    || result.devices.contains { $0.isActive && recoveryCompromised(byRevoking: $0.id) }
            case .ended:
                let gone = Set(result.devices.map(\.id))
                for item in standing where item.type == type && (gone.contains(item.signer) || devices[item.signer]?.isActive != true) {
                    if keepContacts.contains(item.account) { result.kept.append(item) } else { result.ended.append(item) }
                }
            case .renewed, .nothing:
                break  // renewed by the rotations that follow every revocation; nothing to take back
            }
        }
        // A grant rests on the pin of its grantee: ending the pin ends the grants to that account too.
        let unpinned = Set(result.ended.compactMap { if case .contactPin(let account) = $0.subject { account } else { nil } })
        for item in standing where !result.ended.contains(item) && !result.kept.contains(item) && unpinned.contains(item.account) {
            result.ended.append(item)
        }
        result.ended.sort { $0.link < $1.link }
        result.kept.sort { $0.link < $1.link }
        return result
    }
}

extension LinkAuthority.OnRevocation {
    /// The order rows are applied in: who is revoked first, then what they set or signed.
    var order: Int {
        switch self {
        case .revokedWithSigner: 0
        case .compromised: 1
        case .ended: 2
        case .renewed: 3
        case .nothing: 4
        }
    }
}
