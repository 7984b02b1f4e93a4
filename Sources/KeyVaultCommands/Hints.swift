import ArgumentParser
import KeyVault

/// What to do next, in `keyctl`'s words, for a library error. The library says what
/// happened in terms any app can show, and never what to run: that is keyctl's, here
/// alone. `command` is the command that failed, where the advice depends on it.
enum Hints {
    static func hint(for error: KeyVaultError, in command: (any ParsableCommand.Type)? = nil) -> String? {
        let contact = command == Contact.Add.self
        switch error.code {
        case .notInitialized:
            return "run `keyctl init --server URL --name NAME` for a new account, or `keyctl device enroll` / `keyctl device link` to join one; --home picks another directory"
        case .alreadyInitialized:
            return "use it as it is (`keyctl status`), or pick another directory with --home"
        case .passphraseRequired:
            return "run keyctl on a terminal to be asked for it, or set KEYCTL_PASSPHRASE_FILE to a file holding it"
        case .wrongPassphrase:
            return "type it again; it is case-sensitive"
        case .deviceBusy:
            return "another keyctl command is using this device home: wait for it to finish, then try again"
        case .homeDamaged:
            return "restore it from a backup, or move it away and enroll this computer again (`keyctl device enroll` with the recovery code)"
        case .home:
            return "choose another directory with --home or KEYCTL_HOME"
        case .io:
            return "check the path, its permissions and the free space (a file is written only into a directory that exists)"
        case .enrollmentIncomplete:
            return "run `keyctl device enroll` or `keyctl device link` again with the same --home: a link request approved meanwhile is picked up"
        case .deviceRevoked:
            return "another device of the account revoked this one, or reset the account: this device opens nothing new of it; to use this computer again, enroll it anew: `keyctl device enroll` (recovery code) or `keyctl device link`, with a fresh --home. If nobody you know did it, a device of yours may be in someone else's hands, and your recovery code may have been replaced"
        case .missingKey:
            return "another device must rotate the master key (`keyctl master rotate`) to include this one; for a member shared with this account, `keyctl shared list` shows what its account sent"
        case .badBox:
            return "a device, perhaps since revoked, sealed a key of its own: do not trust this server's boxes; another device can rotate the master key (`keyctl master rotate`)"
        case .linkRequestClosed:
            return "check the code the new device shows, or start again with `keyctl device link` on the new device; approve it within 10 minutes"
        case .contactRequestClosed, .contactRequestOutOfTurn:
            return "both people run `keyctl contact add` again, naming each other's account, the second within 10 minutes"
        case .sasMismatch where contact:
            return "if the digits differ, someone may be in the middle: run `keyctl contact add` again on both sides, and compare the codes on a call or in person"
        case .badReveal where contact:
            return "someone changed the exchange: do not trust this server's answers"
        case .sasMismatch where error.message.contains("most likely a typo"):
            return "start again: `keyctl device link` on the new device, then `keyctl device approve` here with the new code, and type its 6 digits carefully"
        case .badReveal, .sasMismatch:
            return "someone may have swapped the keys; start again with `keyctl device link` on the new device; if this repeats, do not trust this server"
        case .unknownContact:
            return "first compare safety codes: both people run `keyctl contact add` naming the other's account"
        case .contactChanged:
            return "verify it again: both people run `keyctl contact add` naming the other's account; `keyctl shared list` shows what is shared with this account now"
        case .contactStale:
            return "when that person has used the app on that device (or revoked it), try again"
        case .readOnlyGrant:
            return "ask the account that shares it to share it without --read-only"
        case .noSuchDevice:
            return "see the ids and names with `keyctl device list`"
        case .noSuchMember:
            return "see the members with `keyctl member list` (and those shared with this account with `keyctl shared list`); add one with `keyctl member add NAME`"
        case .memberExists:
            return "choose another name"
        case .network where error.message.localizedCaseInsensitiveContains("certificate"):
            return "this computer does not trust the server's certificate; if a private CA issued it, give that CA's certificate with --ca-cert FILE (or KEYCTL_CA_CERT)"
        case .network:
            return "check that `keyctl serve` is running there and the URL (--server) is right"
        case .insecureHTTP:
            return "anyone on the network path, and the server's host, would see every request's metadata, and a device-link exchange must not cross a network in the clear; use https://, or add --insecure-http if you accept that"
        case .staleTimestamp:
            return "check this computer's clock"
        case .badResponse where error.status != nil:
            return "is --server a KeyVault server (`keyctl serve`)?"
        case .tooManyConflicts:
            return "run the command again in a moment; if this repeats, do not trust this server"
        case .unavailable:
            return "the server is up but its database is busy or does not answer: run the command again in a moment; if it lasts, tell the server's operator"
        case .inviteRequired:
            return "this server takes new accounts by invitation: ask its operator for the token, and run again with it in KEYCTL_INVITE (or --invite-file FILE)"
        case .payloadTooLarge:
            return "the server's operator sets this limit (keyctl serve --max-attachment-bytes): ask them to raise it, or split the file"
        case .responseTooLarge:
            return "a KeyVault server never sends that much here; check --server, or report it if the server is yours"
        case .unknownDevice:
            return "was the account deleted, or moved to another server? if it moved: `keyctl server move URL`; else check `keyctl status` and --server"
        case .wrongRecoveryCode, .malformedAnchor:
            return "check the words (`keyctl recovery verify`) and the account id; a code replaced by `keyctl recovery rotate` no longer works"
        case .recoveryCompromised:
            return "set a new recovery code from a device you trust: `keyctl recovery rotate`"
        case .kdfAboveCeiling:
            return "a server may not make this device spend unbounded time and memory; do not use this server"
        case .weakKDF:
            return "a server may not lower the cost of guessing your code; do not use this server"
        default:
            return error.kind == .verification ? "the server's data does not verify; do not trust it. Nothing was changed here" : nil
        }
    }
}
