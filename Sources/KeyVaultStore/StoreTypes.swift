import Foundation
import KeyVaultModel

/// How an attachment is kept, without its content: the upload whose chunks hold it, with
/// their size exponent and count, or neither for one put whole (``KeyVaultRepository/attachmentLayout(_:member:address:)``).
package struct AttachmentLayout: Sendable, Equatable {
    package var upload: String?
    package var chunkShift: Int?
    package var chunks: Int

    package init(upload: String?, chunkShift: Int?, chunks: Int) {
        self.upload = upload
        self.chunkShift = chunkShift
        self.chunks = chunks
    }
}

/// An attachment as the store holds it.
package struct StoredAttachment: Sendable, Equatable {
    /// The data key's wrap (the key part).
    package var key: Data
    /// The sealed content whole (version 1, or a version 2 object put whole), or the
    /// version 2 header (`0x02 ‖ s`) when the chunks are stored apart.
    package var data: Data
    /// The upload whose chunks hold the content, and how many there are.
    package var upload: String?
    package var chunks: Int

    package init(key: Data, data: Data, upload: String? = nil, chunks: Int = 0) {
        self.key = key
        self.data = data
        self.upload = upload
        self.chunks = chunks
    }
}

/// What completing an upload did.
package enum UploadOutcome: Sendable, Equatable {
    /// The attachment is stored (`existed`: one was already at the address, and the upload was dropped).
    case stored(AttachmentInfo)
    /// No such unfinished upload for this account, member and address.
    case unknown
    /// Chunks are missing: `have` of `need` were stored.
    case incomplete(have: Int, need: Int)
}

/// What ``KeyVaultRepository/setAttachmentMeta(_:member:address:meta:grantee:)`` did.
package enum MetaWrite: Sendable, Equatable {
    case set
    /// No attachment at that address.
    case noAttachment
    /// It has a name, and the write was not to rename: nothing changed.
    case named
}
