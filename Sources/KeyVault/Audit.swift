import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultVault

extension Vault {
    /// One thing the audit found wrong.
    public struct Finding: Sendable, Equatable {
        public var area: String
        public var message: String
    }

    public struct AuditReport: Sendable {
        public var links = 0
        public var boxes = 0
        public var wraps = 0
        public var auditEntries = 0
        public var refusals = 0
        public var findings: [Finding] = []
    }

    /// Checks everything the server holds for this account against the chain:
    /// every box (signed, addressed to someone the chain knows, none for a revoked
    /// device at the current generation, one for every active device), every wrap
    /// (opens for its member and generation), the device list and the audit log.
    public func audit() async throws -> AuditReport {
        try await exclusively {
            var report = AuditReport()
            let state = try chain
            report.links = links.count
            // Findings quote the server (device names, audit events) and other devices (names in the chain): made terminal-safe here, once.
            func finding(_ area: String, _ message: String) { report.findings.append(Finding(area: area, message: message.printable)) }

            // Boxes.
            let boxes = try await api.boxes(all: true)
            report.boxes = boxes.count
            let g = state.masterGeneration
            // Every box, of every generation, is judged by the chain as it stood at the link it names.
            for box in boxes {
                let label = "box for \(box.recipient.prefix(8)) generation \(box.generation) at link \(box.sequence)"
                do { try box.verify(in: state) } catch { finding("boxes", "\(label): \((error as? ProtocolError)?.message ?? "\(error)")") }
            }
            for device in state.activeDevices where !boxes.contains(where: { $0.generation == g && $0.recipient == device.id.rawValue }) {
                finding("boxes", "active device \(device.name) (\(device.id.rawValue.prefix(8))) has no box of the current master key \(g)")
            }
            for device in state.devices.values where !device.isActive {
                if boxes.contains(where: { $0.generation == g && $0.recipient == device.id.rawValue }) {
                    finding("boxes", "revoked device \(device.name) (\(device.id.rawValue.prefix(8))) has a box of the current master key")
                }
            }
            if let recovery = state.recovery, let link = recovery.compromised {
                finding("recovery", "the recovery code was compromised at link \(link) (the device it comes from was revoked): it opens nothing new and a new one is needed")
            } else if state.recovery != nil, !boxes.contains(where: { $0.generation == g && $0.recipient == ChainLink.recoverySigner }) {
                finding("boxes", "the recovery code has no box of the current master key \(g)")
            }
            // Pins and grants a revoked device signed, still in force: a revocation not finished.
            for item in state.orphaned {
                let signer = state.devices[item.signer].map { "\($0.name) (\($0.id.rawValue.prefix(8)))" } ?? item.signer.rawValue
                switch item.subject {
                case .contactPin(let contact):
                    finding("sharing", "the pin of contact \(contact) (link \(item.link)) was signed by revoked device \(signer) and is still in force: finish the revocation")
                case .shareGrant(let key):
                    finding("sharing", "member \(key.member.rawValue.prefix(8)) is still shared with \(key.grantee) by a grant (link \(item.link)) that revoked device \(signer) signed: finish the revocation")
                }
            }
            if let mine = boxes.first(where: { $0.generation == g && $0.recipient == device.rawValue }), let cached = record.masterKeys[g],
               let sealed = base64Decode(mine.box) {
                if let opened = try? SymmetricKey(record.keys.boxKey.openSealedBox(sealed)), opened == cached {} else {
                    finding("boxes", "this device's box of master key \(g) does not hold the key this device has")
                }
            }

            // Wraps: every generation of every member, under the current master key.
            let (master, _) = try await masterKey()
            for member in state.members.values.sorted(by: { $0.id.rawValue < $1.id.rawValue }) {
                let wraps = try await api.wraps(member: member.id)
                report.wraps += wraps.count
                for wrap in wraps where wrap.member != member.id {
                    finding("wraps", "the server listed a wrap of member \(wrap.member.rawValue.prefix(8)) under member \(member.id.rawValue.prefix(8))")
                }
                for h in 1...member.generation {
                    guard let wrap = wraps.first(where: { $0.memberGeneration == h && $0.masterGeneration == g }) else {
                        finding("wraps", "member \(member.id.rawValue.prefix(8)) generation \(h) has no wrap under master key \(g)")
                        continue
                    }
                    do {
                        let key = try MemberKeyWrap.open(wrap, account: account, masterKey: master, masterGeneration: g)
                        if let cached = record.memberKeys[member.id]?[h], cached != key {
                            finding("wraps", "member \(member.id.rawValue.prefix(8)) generation \(h): the wrap holds another key than this device has")
                        }
                    } catch {
                        finding("wraps", (error as? VaultError)?.message ?? "\(error)")
                    }
                }
                for wrap in wraps where wrap.memberGeneration > member.generation || wrap.masterGeneration > g {
                    finding("wraps", "member \(member.id.rawValue.prefix(8)): a wrap of generation \(wrap.memberGeneration)/\(wrap.masterGeneration) the chain does not have")
                }
            }

            // The device list the server keeps must say what the chain says.
            let listed = try await api.devices()
            for device in state.devices.values {
                guard let info = listed.first(where: { $0.id == device.id }) else {
                    finding("devices", "the server does not list device \(device.name) (\(device.id.rawValue.prefix(8)))"); continue
                }
                if (info.status == .active) != device.isActive {
                    finding("devices", "the server lists \(device.name) as \(info.status.rawValue), the chain says \(device.isActive ? "active" : "revoked")")
                }
            }
            for info in listed where state.devices[info.id] == nil {
                finding("devices", "the server lists device \(info.name) (\(info.id.rawValue.prefix(8))), which the chain never added")
            }

            // The audit log must record every link of the chain, and no link the chain does not have.
            let entries = try await api.audit()
            report.auditEntries = entries.count
            report.refusals = entries.filter { $0.event.hasPrefix("refused.") }.count
            var logged = [UInt64: String]()
            for entry in entries where entry.event.hasPrefix("link.") {
                // A server (or replica) from before the typed sequence wrote it as the detail "sequence N".
                let older = entry.detail.flatMap { $0.hasPrefix("sequence ") ? UInt64($0.dropFirst(9)) : nil }
                guard let sequence = entry.sequence ?? older ?? (entry.event == "link.genesis" ? 0 : nil) else { continue }
                let type = String(entry.event.dropFirst(5))
                if let first = logged[sequence] {
                    finding("audit log", "the audit log records link \(sequence) twice (\(first), then \(type))")
                }
                logged[sequence] = type
            }
            for link in links {
                if let type = logged[link.sequence] {
                    if type != link.type.rawValue {
                        finding("audit log", "link \(link.sequence) is \(link.type.rawValue) in the chain but \(type) in the audit log")
                    }
                } else {
                    finding("audit log", "link \(link.sequence) (\(link.type.rawValue)) is missing from the audit log")
                }
            }
            for (sequence, type) in logged where sequence > state.sequence {
                finding("audit log", "the audit log records link \(sequence) (\(type)), which the chain does not have")
            }
            return report
        }
    }
}
