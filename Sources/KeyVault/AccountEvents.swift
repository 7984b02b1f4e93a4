import Foundation
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultVault

// The account's key events in plain words, from the verified chain (issue 22, item 5):
// what `keyctl audit log` shows, and what each device is told once, on its next
// command, of what other devices changed.
//
// Authority: none. Events are read from the chain this device verified; the only thing
// stored is, in the device's own home, the sequence up to which it has told its person
// (``DeviceRecord/noticed``). The server chooses nothing here but which valid chain to
// serve, and a chain that goes back or forks is refused before any event is read.

extension Vault {
    /// One key event of the account: a link of its chain, in words.
    public struct AccountEvent: Sendable, Equatable {
        /// What happened: `account.created`, `device.added`, `device.revoked`,
        /// `recovery.set`, `recovery.replaced`, `keys.renewed`, `member.added`,
        /// `member.renewed`, `member.renamed`, `member.removed`, `account.reset`, `sharing.identity`, `contact.verified`, `share.started`,
        /// `share.ended` or `contact.removed`.
        public var kind: String
        /// The chain link's sequence number.
        public var sequence: UInt64
        /// When the signing device says it made the link (its clock: informational).
        public var time: Date
        /// The device that signed it, or nil when the recovery code did.
        public var byDevice: DeviceID?
        /// Its name, or "the recovery code".
        public var by: String
        /// What it concerns, by name where this device can read one (a device, a member, an account id).
        public var subject: String?
        /// The id of what it concerns (a device's, a member's, an account's).
        public var subjectID: String?
        /// The whole event in words, e.g. "member Alice was added by laptop".
        public var text: String
        /// Signed with this device's key, but not appended by this device's own vault
        /// (``untoldEvents()`` only): someone holds a copy of its keys, unless the same
        /// home was used from another copy of it.
        public var signedWithThisDevicesKey = false
    }

    /// Every key event of the account, oldest first (from the chain this device verified).
    public func events() async throws -> [AccountEvent] {
        try await exclusively { try await describe(links) }
    }

    /// What other devices (and the recovery code) changed since this device last told
    /// its person, once: the events are marked told as they are returned. A device
    /// that never told anything (new, or from a version before notices) starts from
    /// the link that added it. The links this device appended itself are never news to
    /// it; one signed with its key that it did not append is, flagged
    /// (``AccountEvent/signedWithThisDevicesKey``).
    public func untoldEvents() async throws -> [AccountEvent] {
        try await exclusively {
            let state = try chain
            let told = record.noticed ?? state.devices[device]?.added ?? state.sequence
            guard told < state.sequence else { return [] }
            let me = device.rawValue, mine = Set(record.written), firstLook = record.noticed == nil
            var news = try await describe(links.filter {
                // On a first look, every link this key signed counts as this device's (no record was kept before).
                $0.sequence > told && !mine.contains($0.hash) && !(firstLook && $0.signer == me)
                    && !($0.type == .deviceAdd && $0.body["device"] == me)
            })
            for index in news.indices where news[index].byDevice == device { news[index].signedWithThisDevicesKey = true }
            record.noticed = state.sequence
            record.written = []
            try home.save(record)
            return news
        }
    }

    private func describe(_ chosen: [ChainLink]) async throws -> [AccountEvent] {
        let state = try chain
        // Names as this device reads them now; an id prefix where a name does not open.
        var memberNames = [MemberID: String]()
        for member in state.members.values {
            let key = try? await memberKey(member.id, generation: member.nameGeneration)
            memberNames[member.id] = key.flatMap { try? MemberName.open(member.name, account: account, member: member.id, key: $0) }
        }
        // The name a member.add or member.rename link sealed; for a removed member, its last one.
        var sealedNames = [UInt64: String]()
        var lastName = [MemberID: String]()
        for link in links {
            guard let (raw, generation) = link.sealedName, let id = MemberID(rawValue: raw), let sealed = link.body["name"] else { continue }
            if let key = try? await memberKey(id, generation: generation),
               let name = try? MemberName.open(sealed, account: account, member: id, key: key) {
                sealedNames[link.sequence] = name.printable
                lastName[id] = name
            }
        }
        for (id, name) in lastName where memberNames[id] == nil { memberNames[id] = name }
        func previousName(_ id: String?, before sequence: UInt64) -> String {
            let earlier = links.last { $0.sequence < sequence && ($0.type == .memberAdd || $0.type == .memberRename) && $0.body["member"] == id }
            return earlier.flatMap { sealedNames[$0.sequence] } ?? memberName(id)
        }
        func deviceName(_ id: String?) -> String {
            guard let id, let device = DeviceID(rawValue: id) else { return "an unknown device" }
            return state.devices[device]?.name.printable ?? "device \(id.prefix(8))"
        }
        func memberName(_ id: String?) -> String {
            guard let id else { return "a member" }
            return (MemberID(rawValue: id).flatMap { memberNames[$0] })?.printable ?? id.prefix(8) + "…"
        }
        func accountName(_ id: String?) -> String { "account " + (id.map { $0.prefix(12) + "…" } ?? "?") }

        return chosen.map { link in
            let signer = link.signer == ChainLink.recoverySigner ? nil : DeviceID(rawValue: link.signer)
            let by = signer == nil ? "the recovery code" : deviceName(link.signer)
            let byWords = signer == nil ? "with the recovery code" : "by \(by)"
            let body = link.body
            let (kind, subject, what): (String, String?, String) = switch link.type {
            case .genesis:
                ("account.created", nil, "the account was created \(byWords)")
            case .deviceAdd:
                ("device.added", deviceName(body["device"]), "device \(deviceName(body["device"])) was added \(byWords)")
            case .deviceRevoke:
                ("device.revoked", deviceName(body["device"]), "device \(deviceName(body["device"])) was revoked \(byWords)")
            case .recoverySet where body["recoveryGeneration"] == "1":
                ("recovery.set", nil, "a recovery code was set \(byWords)")
            case .recoverySet:
                ("recovery.replaced", nil, "the recovery code was replaced \(byWords); the written one before it opens nothing")
            case .masterRotate:
                ("keys.renewed", nil, "the account's keys were renewed \(byWords)")
            case .memberAdd:
                ("member.added", memberName(body["member"]), "member \(memberName(body["member"])) was added \(byWords)")
            case .memberRotate:
                ("member.renewed", memberName(body["member"]), "member \(memberName(body["member"]))'s key was renewed \(byWords)")
            case .memberRename:
                ("member.renamed", sealedNames[link.sequence] ?? memberName(body["member"]),
                 "member \(previousName(body["member"], before: link.sequence)) was renamed \(sealedNames[link.sequence] ?? "(a name this device cannot open)") \(byWords)")
            case .accountReset:
                ("account.reset", nil, "the account was reset \(byWords): every other device, member, share and contact ended, with a new recovery code")
            case .memberRemove:
                ("member.removed", previousName(body["member"], before: link.sequence),
                 "member \(previousName(body["member"], before: link.sequence)) was removed, with its attachments, \(byWords)")
            case .identitySet:
                ("sharing.identity", nil, "the account's sharing identity was set \(byWords)")
            case .contactPin:
                ("contact.verified", accountName(body["account"]), "\(accountName(body["account"])) was verified as a contact \(byWords)")
            case .shareGrant:
                ("share.started", memberName(body["member"]),
                 "member \(memberName(body["member"])) was shared with \(accountName(body["grantee"]))\(body["readOnly"] == "true" ? ", read-only," : "") \(byWords)")
            case .shareRevoke:
                ("share.ended", memberName(body["member"]), "sharing member \(memberName(body["member"])) with \(accountName(body["grantee"])) ended \(byWords)")
            case .contactUnpin:
                ("contact.removed", accountName(body["account"]), "\(accountName(body["account"])) is no longer a contact (\(byWords))")
            }
            let subjectID = body["device"] ?? body["member"] ?? body["account"] ?? body["grantee"]
            return AccountEvent(kind: kind, sequence: link.sequence, time: Date(timeIntervalSince1970: TimeInterval(link.time)),
                                byDevice: signer, by: by, subject: subject, subjectID: link.type == .genesis ? nil : subjectID, text: what)
        }
    }

    /// A request the server says it refused for this account (its audit log: the
    /// server's word, which nothing checks, shown as such).
    public struct RefusedRequest: Sendable, Equatable {
        public var time: Date
        /// The error code the request got, e.g. `bad_signature`.
        public var code: String
        /// The device the request named, if any.
        public var device: String?
        public var detail: String?
    }

    /// The refused requests the server's audit log records for this account.
    public func refusals() async throws -> [RefusedRequest] {
        try await api.audit().filter { $0.event.hasPrefix("refused.") }.map {
            RefusedRequest(time: Date(timeIntervalSince1970: TimeInterval($0.time)), code: String($0.event.dropFirst(8)),
                    device: $0.device, detail: $0.detail)
        }
    }
}
