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

    /// The rule both stores keep for a deleted account (`deleted_accounts`): it is founded
    /// again only by an import signed by the device that deleted it (`deleter`), of a chain
    /// (`hashes`, from its genesis) that strictly goes on from the head it had.
    ///
    /// - Throws: ``accountDeleted(sequence:head:)`` otherwise.
    package static func checkFoundingAgain(deletedAt sequence: UInt64, head: String, deleter: String?,
                                           hashes: [String], importedBy: DeviceID?) throws {
        guard let importedBy, deleter == importedBy.rawValue, sequence < UInt64(hashes.count - 1), hashes[Int(sequence)] == head else {
            throw accountDeleted(sequence: sequence, head: head)
        }
    }
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
    /// A value a write spends (``ChainWrite/spends``) was used before.
    case usedBefore
}

/// An error of a store that lost a race for a lock: another write held what this one
/// needed (PostgreSQL chose it as a deadlock's victim or could not serialize it; SQLite
/// waited out its busy timeout for another process's write). The write was not made,
/// and the operation may succeed when it is tried again: the server answers it with
/// 503 `unavailable` and Retry-After, never 500.
package protocol StoreContention: Error {
    var isContention: Bool { get }
    /// What the store said, for the log (a SQLSTATE, a SQLite result code): never a value of the write.
    var contentionDetail: String { get }
}

/// An error of a store that could not be reached or gave no answer in time: no connection
/// to the database could be had, or it was lost or closed (also by the service, for a lease
/// past its deadline), or the database is out of resources, shutting down or a standby.
/// Whether a write the request carried was made is not known: sent again, it may be refused
/// as done already (a stale chain head, a value used before). The server answers it with
/// 503 `unavailable` and `Retry-After: 5` (the client is told at once), never 500.
package protocol StoreUnreachable: Error {
    var isUnreachable: Bool { get }
    /// What the store said, for the log (a SQLSTATE, the driver's code): never a value of the request.
    var unreachableDetail: String { get }
}
