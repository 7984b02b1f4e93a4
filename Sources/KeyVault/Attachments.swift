import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultVault

extension Vault {
    /// The account whose member this is (the sharer's for a shared member): attachments are bound to it.
    func owner(of member: Member) -> AccountID { member.sharer ?? account }

    /// The content address of a file under the member's newest key (nothing is uploaded).
    ///
    /// - Throws: ``KeyVaultError`` `io` when the file cannot be read.
    public func address(ofFileAt path: String, member: Member) async throws -> ContentAddress {
        try await exclusively {
            let keys = try await memberKeys(member, generation: member.generation)
            do {
                return try keys.contentAddressKey.address(ofFileAt: path)
            } catch let error as CryptoError {
                throw KeyVaultError(.io, "cannot read \(path): \(error.message)")
            }
        }
    }

    public struct PutResult: Sendable {
        public let address: ContentAddress
        public let size: Int
        public let existed: Bool
    }

    /// Seals a file for a member and uploads it under its content address
    /// (``put(_:member:)`` with the file's content).
    ///
    /// - Throws: ``KeyVaultError`` `io` when the file cannot be read.
    public func put(fileAt path: String, member: Member) async throws -> PutResult {
        try await exclusively {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw KeyVaultError(.io, "cannot read \(path)")
            }
            var plaintext = [UInt8](data)
            defer { secureWipe(&plaintext) }
            return try await put(plaintext, member: member)
        }
    }

    /// Seals `plaintext` for `member` under the member's newest key and uploads it
    /// under its content address (the same bytes for the same member are stored once).
    /// A rotation an earlier revocation left undone is finished first, so nothing new
    /// is sealed under a key a revoked device knows.
    ///
    /// Appends, before it uploads: any work a revocation or recovery rotation left undone
    /// (``finishPendingRotations()``); for each grant of the member whose grantee's
    /// identity changed, `share.revoke` and then `member.rotate`. An upload itself writes
    /// no link.
    public func put(_ plaintext: [UInt8], member given: Member) async throws -> PutResult {
        try await exclusively {
            // A shared member as its sharer's chain has it now: checked again, its newest generation.
            let member = try await current(given)
            guard !member.readOnly else {
                throw KeyVaultError(.readOnlyGrant, "\(member.name) is shared with this account read-only by \(owner(of: member)): nothing can be put",
                                    kind: .input)
            }
            // The newest chain first: a revocation another device made since must be
            // followed by its rotation before anything is sealed (an upload writes no link,
            // so no stale_chain would say so).
            try await sync()
            try await finishRevocationFirst()
            // A grantee whose identity changed (a revocation on its side) must not read
            // what is sealed from now on: its share ends, and the key moves on without it.
            if member.sharer == nil, try await endGrantsToChangedContacts(of: member.id) {
                try await rotateMember(member.id)
            }
            // The member's newest generation from the chain, which finishing a rotation may
            // have moved (a shared member's: as its sharer's chain said when it was read).
            let generation = member.sharer == nil ? try chain.members[member.id]?.generation ?? member.generation : member.generation
            let keys = try await memberKeys(member, generation: generation)
            let address = try keys.contentAddressKey.address(of: plaintext)
            let object = try AttachmentCrypto.seal(plaintext, address: address, account: owner(of: member), keys: keys)
            var info = try await api.putAttachment(member: member.id, address: address, object: object, sharer: member.sharer)
            // "Already there" may be an object another party holding the key (a grantee)
            // stored at an address it could predict, and that does not open: a device of
            // this account checks, and replaces it rather than let its upload vanish.
            if info.existed == true, member.sharer == nil {
                var current = member
                current.generation = generation
                let matches: Bool
                do {
                    matches = constantTimeEquals(try await get(address, member: current), plaintext)
                } catch let error as KeyVaultError where error.kind == .verification {
                    matches = false  // another party's object (a network failure is no reason to replace anything)
                }
                if !matches {
                    progress(.replacingUnopenableAttachment(address))
                    info = try await api.putAttachment(member: member.id, address: address, object: object, replace: true)
                }
            }
            return PutResult(address: address, size: plaintext.count, existed: info.existed ?? false)
        }
    }

    /// Downloads an attachment, opens it and checks it against its address.
    public func get(_ address: ContentAddress, member given: Member) async throws -> SecureBytes {
        try await exclusively {
            // A `Member` kept across a rotation names an older generation: this account's own
            // member is judged by the verified chain (a newer generation there is no server lie).
            var member = given
            if member.sharer == nil, let now = try chain.members[member.id]?.generation, now > member.generation {
                member.generation = now
            }
            let bytes = try await api.attachment(member: member.id, address: address, sharer: member.sharer)
            let object: AttachmentObject
            do {
                object = try AttachmentObject(bytes: bytes)
            } catch {
                throw KeyVaultError.verification(error, "the attachment \(address) from the server")
            }
            let keyGeneration = try AttachmentCrypto.keyGeneration(of: object.key)
            guard (1...member.generation).contains(keyGeneration), (1...member.generation).contains(address.generation) else {
                throw KeyVaultError(.addressMismatch,
                                  "the attachment \(address) names a key generation member \(member.name) does not have", kind: .verification)
            }
            do {
                return try AttachmentCrypto.open(object, address: address, account: owner(of: member),
                                                 keyKeys: try await memberKeys(member, generation: keyGeneration),
                                                 addressKeys: try await memberKeys(member, generation: address.generation))
            } catch let error as VaultError {
                throw KeyVaultError.verification(error, "the attachment is refused")
            }
        }
    }

    /// Downloads an attachment, opens it, checks it against its address, and only
    /// then writes it to `path`: through a new temporary file beside it (created
    /// exclusively, never through a symlink, mode 0600), synced, then renamed over
    /// `path`. Content that does not match its address writes nothing; a failed
    /// write leaves no temporary file behind.
    ///
    /// - Returns: the number of bytes written.
    /// - Throws: as ``get(_:member:)``; ``KeyVaultError`` `io` when the file cannot be written.
    @discardableResult
    public func get(_ address: ContentAddress, member: Member, toFileAt path: String) async throws -> Int {
        let content = try await get(address, member: member)
        do {
            try content.withUnsafeBytes { try AtomicFile.write($0, to: path) }
        } catch let error as AtomicFile.Failure {
            throw KeyVaultError(.io, error.message)
        }
        return content.count
    }

    /// An attachment the server lists: where it is, how large its sealed object is, and
    /// when it was stored (the server's word: it opens only with ``get(_:member:)``).
    public struct Attachment: Sendable, Equatable {
        public let address: ContentAddress
        /// The sealed object's size in bytes.
        public let size: Int
        public let stored: Date
    }

    /// The attachments the server lists for `member`, oldest first.
    public func attachments(member: Member) async throws -> [Attachment] {
        try await exclusively {
            try await api.attachments(member: member.id, sharer: member.sharer)
        }
    }

    public struct RewrapResult: Sendable {
        public var rewrapped = 0
        public var current = 0
    }

    /// Re-wraps every attachment key of a member under the member's newest key
    /// generation. Each attachment is one small request; running it again after an
    /// interruption picks up where it stopped.
    ///
    /// Appends nothing: it replaces attachment key wraps only.
    public func rewrap(member: Member) async throws -> RewrapResult {
        try await exclusively {
            if let sharer = member.sharer {
                throw KeyVaultError(.invalidInput, "\(member.name) is shared with this account; only its own account (\(sharer)) re-wraps its attachments")
            }
            let list = try await api.attachments(member: member.id)
            let newest = try await memberKeys(member.id, generation: member.generation)
            var result = RewrapResult()
            for (index, listed) in list.enumerated() {
                progress(.rewrappingAttachments(done: index + 1, of: list.count))
                let address = listed.address
                let key = try await api.attachmentKey(member: member.id, address: address)
                let generation: UInt32
                do {
                    generation = try AttachmentCrypto.keyGeneration(of: key)
                } catch {
                    throw KeyVaultError.verification(error, "the key of attachment \(address)")
                }
                guard generation != member.generation else { result.current += 1; continue }
                guard (1..<member.generation).contains(generation) else {
                    throw KeyVaultError(.addressMismatch,
                                      "the key of attachment \(address) names generation \(generation), which member \(member.name) does not have",
                                      kind: .verification)
                }
                let rewrapped: [UInt8]
                do {
                    rewrapped = try AttachmentCrypto.rewrap(key, address: address, account: account,
                                                            from: try await memberKeys(member.id, generation: generation), to: newest)
                } catch let error as VaultError {
                    throw KeyVaultError.verification(error, "the key of attachment \(address)")
                }
                try await api.replaceAttachmentKey(member: member.id, address: address, key: rewrapped)
                result.rewrapped += 1
            }
            return result
        }
    }
}
