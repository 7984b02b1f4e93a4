import KeyVault

/// keyctl's words for the library's progress (an app has its own, in its language).
extension Vault.Progress {
    /// What keyctl prints for this report; nil for the reports between milestones (a
    /// transfer says where it is at each tenth, not at every chunk).
    var line: String? {
        switch self {
        case .sendingAttachment(let done, let of), .receivingAttachment(let done, let of):
            return of > 1 && (done == of || done * 10 / of != (done - 1) * 10 / of) ? text : nil
        default:
            return text
        }
    }

    var text: String {
        func short(_ id: some RawRepresentable<String>) -> String { "\(id.rawValue.prefix(8))…" }
        func clock(_ seconds: Int64) -> String { "\(seconds / 60):\(seconds % 60 < 10 ? "0" : "")\(seconds % 60)" }
        switch self {
        case .creatingAccount(let server): return "creating the account on \(server)"
        case .derivingRecoveryKeys(_, let memoryKiB):
            // Deliberately slow and memory-hungry (Argon2id): what makes guessing a code costly. Said so, not named.
            return "turning the recovery code into keys: a second or so and \(memoryKiB / 1024) MiB of memory, on purpose, so that guessing codes is slow"
        case .provingRecoveryCode: return "proving the recovery code to the server"
        case .addingDevice: return "adding this device to the account"
        case .waitingForApproval(let shown, let left):
            return shown ? "waiting for the code to be typed on the other device (\(clock(left)) left)"
                         : "waiting for a device of the account to answer (\(clock(left)) left)"
        case .waitingForNewDevice: return "waiting for the new device to show its code"
        case .revokingDevice(let name, let id): return "revoking \(name) (\(short(id)))"
        case .finishingPendingWork: return "finishing the key rotation an earlier revocation or recovery rotation left undone"
        case .rotatingMasterKey(let step, let of): return "rotating the master key (\(step)/\(of))"
        case .renewingSharingIdentity(let step, let of): return "renewing the sharing identity (\(step)/\(of))"
        case .rotatingMemberKey(let member, let step, let of): return "rotating member key \(short(member)) (\(step)/\(of))"
        case .rotatingMasterKeyAwayFromOldRecoveryCode: return "rotating the master key away from the old recovery code"
        case .makingSharingIdentity: return "making this account's sharing identity"
        case .rewrappingAttachments(let done, let of): return "re-wrapping attachment keys: \(done)/\(of)"
        case .endingShare(let member, let grantee, .madeByRevokedDevice):
            return "ending the share of member \(short(member)) with \(grantee), made by a revoked device"
        case .endingShare(let member, let grantee, .granteeIdentityChanged):
            return "\(grantee)'s sharing identity changed since it was verified: ending its share of \(short(member)) (verify it again, then share again)"
        case .endingShare(let member, let grantee, .granteeNotVerifiable(let error)):
            return "\(grantee)'s chain cannot be checked now (\(error.message)): ending its share of \(short(member)) (share again once it checks)"
        case .endingPin(let contact): return "ending the pin of contact \(contact), made by a revoked device"
        case .keepingShare(let member, let grantee): return "keeping the share of member \(short(member)) with \(grantee): signing it again"
        case .shareNotKept(let member, let grantee, let reason):
            return "the share of member \(short(member)) with \(grantee) could not be made again (\(reason.message)): share it again after the revocation"
        case .contactNotKept(let contact, nil): return "\(contact)'s identity is no longer the one pinned: it is not kept (verify it again)"
        case .contactNotKept(let contact, let reason?):
            return "\(contact): \(reason.message): it is not kept (verify it again, or share again once it checks)"
        case .rotatingMemberKeyAfterUnshare(_, let name, let grantee):
            return "rotating the key of \(name) so that \(grantee) cannot open what comes next"
        case .sendingAttachment(let done, let of): return "sent \(done * 100 / max(of, 1))% (\(done) of \(of) chunks)"
        case .receivingAttachment(let done, let of): return "received and checked \(done * 100 / max(of, 1))% (\(done) of \(of) chunks)"
        case .resumingAttachment(let from, let of): return "resuming where the last try stopped: \(from) of \(of) chunks are there already"
        case .replacingUnopenableAttachment(let address): return "what the server held at \(address) does not open to this content: replacing it"
        case .exportingAttachments(let done): return "attachment \(done) checked and written"
        case .importingAttachments(let done): return "attachment \(done) checked and put on the new server"
        case .retryingAfterAnotherDevice: return "another device changed the account first; fetching the chain and trying again"
        case .headStatementNotTaken(let error):
            return "the server did not take this device's statement of the account's head (\(error.message)): contacts may soon see this account as not recently seen"
        }
    }
}
