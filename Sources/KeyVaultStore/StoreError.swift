import KeyVaultModel

/// Why the store refused a write. The server maps each case to an HTTP answer.
package enum StoreError: Error, Sendable, Equatable {
    /// The chain head moved since the writer read it.
    case staleChain(currentHead: String)
    case accountExists
    /// The account was deleted from this server at that link: only a chain that extends
    /// it founds the account here again (a copy of its chain as it once stood, from
    /// before a revocation, cannot come back where its devices were).
    case accountDeleted(sequence: UInt64, head: String)
    /// A device with this id is already in an account (device ids are global: one key, one account).
    case deviceExists
    case notFound
    /// Too many pending device-link requests from one client address, or on the whole server.
    case tooManyLinkRequests
    /// The account has ``KeyVaultDatabase/maxUnfinishedUploads`` uploads begun and not complete.
    case tooManyUploads
    /// The link request is no longer pending (approved, refused or expired).
    case linkRequestClosed
    /// The link request is pending but not at the step this write needs (answered
    /// already, not answered yet, or not revealed yet).
    case linkRequestOutOfTurn
}
