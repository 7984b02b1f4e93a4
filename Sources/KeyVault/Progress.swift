import KeyVaultCrypto
import KeyVaultModel

/// Reports long work as it happens: typed values an app shows in its own words and
/// language (keyctl's are in its `ProgressText.swift`).
public typealias ProgressReporter = @Sendable (Vault.Progress) -> Void

extension Vault {
    /// What a vault is doing now. `step` counts from 1 to `of` within one call.
    public enum Progress: Sendable, Equatable {
        // MARK: Accounts and devices
        /// Sending the new account's first link to `server`.
        case creatingAccount(server: String)
        /// Deriving keys from a recovery code (Argon2id with these passes and KiB of
        /// memory: seconds).
        case derivingRecoveryKeys(iterations: UInt32, memoryKiB: UInt32)
        /// Proving to the server that this device holds the recovery code.
        case provingRecoveryCode
        /// Appending the link that adds this device.
        case addingDevice
        /// A new device waits for a device of the account: to answer its request, or,
        /// once the codes are shown (`codeShown`), for the person to type the code there.
        case waitingForApproval(codeShown: Bool, secondsLeft: Int64)
        /// An approving device waits for the new device to show its code.
        case waitingForNewDevice
        /// Revoking a device (one of a revocation's targets).
        case revokingDevice(name: String, id: DeviceID)

        // MARK: Keys
        /// Finishing what an earlier revocation or recovery rotation left undone, before
        /// anything new is made.
        case finishingPendingWork
        case rotatingMasterKey(step: Int, of: Int)
        case renewingSharingIdentity(step: Int, of: Int)
        case rotatingMemberKey(MemberID, step: Int, of: Int)
        /// A new recovery code is set: the master key moves away from the old one.
        case rotatingMasterKeyAwayFromOldRecoveryCode
        /// Making the account's sharing identity (the first time sharing needs it).
        case makingSharingIdentity
        /// Re-wrapping attachment keys under a member's newest key.
        case rewrappingAttachments(done: Int, of: Int)

        // MARK: Sharing
        /// Ending a share before the member's next key generation.
        case endingShare(member: MemberID, grantee: AccountID, because: ShareEnding)
        /// Ending a contact pin a revoked device made.
        case endingPin(contact: AccountID)
        /// A revocation keeps this share: it is signed again by this device.
        case keepingShare(member: MemberID, grantee: AccountID)
        /// A share the revocation was to keep could not be made again (share it again later).
        case shareNotKept(member: MemberID, grantee: AccountID, reason: KeyVaultError)
        /// A contact the revocation was to keep is not kept: its identity is no longer
        /// the pinned one (`nil`), or it could not be checked (`reason`).
        case contactNotKept(AccountID, reason: KeyVaultError?)
        /// After an unshare: the member's key moves on so the grantee cannot open what comes next.
        case rotatingMemberKeyAfterUnshare(member: MemberID, name: String, grantee: AccountID)

        // MARK: The server
        /// What the server held at this address does not open to the uploaded content
        /// (another party planted it): replacing it.
        case replacingUnopenableAttachment(ContentAddress)
        /// An attachment in chunks: `done` of `of` chunks sent, or received and opened
        /// (one report per chunk; this library writes chunks of 1 MiB of content).
        case sendingAttachment(done: Int, of: Int)
        case receivingAttachment(done: Int, of: Int)
        /// A transfer cut off before goes on: `from` of its `of` chunks are there already
        /// (an upload: on the server, checked against this device's journal; a download:
        /// in the partial file, checked with the rest against the address at the end).
        case resumingAttachment(from: Int, of: Int)
        /// An account export or import: `done` attachments checked and written, or put on the new server.
        case exportingAttachments(done: Int)
        case importingAttachments(done: Int)
        /// Another device changed the account first: fetching the chain, trying again.
        case retryingAfterAnotherDevice
        /// The server did not take this device's statement of the chain's head: contacts
        /// may soon see this account as not recently seen.
        case headStatementNotTaken(KeyVaultError)
    }

    /// Why a share ends.
    public enum ShareEnding: Sendable, Equatable {
        /// A device since revoked made it (or the pin it rests on).
        case madeByRevokedDevice
        /// The grantee's sharing identity changed since it was verified.
        case granteeIdentityChanged
        /// The grantee's chain could not be checked now (stale, or refused).
        case granteeNotVerifiable(KeyVaultError)
    }
}
