import KeyVault
import KeyVaultModel
import KeyVaultVault

/// What to do next, in `keyctl`'s words, for a library error: the library says
/// what happened in terms any app can show; the commands that fix it are keyctl's.
enum Hints {
    static func hint(for error: KeyVaultError) -> String? {
        switch error.code {
        case .notInitialized:
            "run `keyctl init --server URL --name NAME` for a new account, or `keyctl device enroll` / `keyctl device link` to join one; --home picks another directory"
        case .alreadyInitialized:
            "use it as it is (`keyctl status`), or pick another directory with --home"
        case .passphraseRequired:
            "run keyctl on a terminal to be asked for it, or set KEYCTL_PASSPHRASE_FILE to a file holding it"
        case .deviceBusy:
            "another keyctl command is using this device home: wait for it to finish, then try again"
        case .homeDamaged:
            "restore it from a backup, or move it away and enroll this computer again (`keyctl device enroll` with the recovery code)"
        case .home:
            "choose another directory with --home or KEYCTL_HOME"
        case .enrollmentIncomplete:
            "run `keyctl device enroll` or `keyctl device link` again with the same --home: a link request approved meanwhile is picked up"
        case .deviceRevoked:
            "to use this computer again, enroll it anew: `keyctl device enroll` (recovery code) or `keyctl device link`, with a fresh --home"
        // Where the library says what to do (a shared member's key, the contact exchange), that stands.
        case .missingKey, .badBox:
            error.hint ?? "another device must rotate the master key (`keyctl master rotate`) to include this one"
        case .linkRequestClosed:
            error.hint ?? "start again with `keyctl device link` on the new device, and approve it within 10 minutes"
        case .contactRequestClosed, .contactRequestOutOfTurn:
            error.hint ?? "both people run `keyctl contact add` again, naming each other's account, the second within 10 minutes"
        case .badReveal, .sasMismatch:
            error.hint ?? "someone may have swapped the keys; start again with `keyctl device link` on the new device; if this repeats, do not trust this server"
        case .noSuchDevice:
            "see the ids and names with `keyctl device list`"
        case .noSuchMember:
            "see the members with `keyctl member list`; add one with `keyctl member add NAME`"
        case .network where error.message.localizedCaseInsensitiveContains("certificate"):
            "this computer does not trust the server's certificate; if a private CA issued it, give that CA's certificate with --ca-cert FILE (or KEYCTL_CA_CERT)"
        case .network:
            "check that `keyctl serve` is running there and the URL (--server) is right"
        case .badResponse where error.status != nil:
            "is --server a KeyVault server (`keyctl serve`)?"
        case .tooManyConflicts:
            "run the command again in a moment; if this repeats, do not trust this server"
        case .responseTooLarge:
            "a KeyVault server never sends that much here; check --server, or report it if the server is yours"
        case .unknownDevice:
            "was the account deleted? check `keyctl status` and --server"
        case .wrongRecoveryCode, .malformedAnchor:
            "check the words (`keyctl recovery verify`) and the account id; a code replaced by `keyctl recovery rotate` no longer works"
        case .recoveryCompromised:
            "set a new recovery code from a device you trust: `keyctl recovery rotate`"
        default:
            nil
        }
    }
}
