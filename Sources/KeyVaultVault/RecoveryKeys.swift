import Foundation
import KeyVaultCrypto
import KeyVaultMnemonic
import KeyVaultModel
import KeyVaultProtocol

/// The three keys a recovery code stands for (docs/formats/recovery-keys.md):
///
/// ```
/// root = Argon2id(entropy, salt, parameters), 32 bytes
/// RW   = HKDF-SHA256(root, info "keyvault/v1/recovery/wrap")   opens the recovery anchor
/// RX   = HKDF-SHA256(root, info "keyvault/v1/recovery/box")    X25519: receives the master key
/// RA   = HKDF-SHA256(root, info "keyvault/v1/recovery/auth")   Ed25519 seed: proves the code to the server
/// ```
package struct RecoveryKeys: Sendable {
    /// RW: symmetric, opens the recovery anchor.
    package let wrapKey: SymmetricKey
    /// RX: the master key is sealed to its public half.
    package let boxKey: X25519.PrivateKey
    /// RA: signs the recovery proof and links made during recovery enrollment.
    package let authKey: Ed25519.PrivateKey

    static let wrapLabel = Array("keyvault/v1/recovery/wrap".utf8)
    static let boxLabel = Array("keyvault/v1/recovery/box".utf8)
    static let authLabel = Array("keyvault/v1/recovery/auth".utf8)

    /// Derives the keys of a recovery code, on the calling thread: the library calls
    /// ``derive(code:salt:parameters:)`` instead.
    ///
    /// - Parameters:
    ///   - salt: the 16-byte salt of the account's recovery slot.
    ///   - parameters: from the recovery slot; checked against the floor when decoded.
    /// - Throws: `CryptoError` for a bad salt or when Argon2id cannot get its memory.
    init(code: Mnemonic, salt: [UInt8], parameters: Argon2id.Parameters) throws {
        try self.init(entropy: code.entropy, salt: salt, parameters: parameters)
    }

    /// Derives the keys of a recovery code on a thread of their own: Argon2id holds a
    /// thread for a second or more (longer on a phone), and the caller's executor, most
    /// often a thread of Swift's shared pool, goes on with its other work meanwhile.
    package static func derive(code: Mnemonic, salt: [UInt8], parameters: Argon2id.Parameters) async throws -> RecoveryKeys {
        try await onThreadOfItsOwn { try RecoveryKeys(code: code, salt: salt, parameters: parameters) }
    }

    init(entropy: SecureBytes, salt: [UInt8], parameters: Argon2id.Parameters) throws {
        let root = try Argon2id.deriveKey(from: entropy, salt: salt, parameters: parameters, outputByteCount: 32)
        wrapKey = try HKDF.deriveKey(from: root, info: Self.wrapLabel)
        boxKey = try X25519.PrivateKey(rawRepresentation: HKDF.deriveKey(from: root, info: Self.boxLabel).bytes)
        authKey = try Ed25519.PrivateKey(seed: HKDF.deriveKey(from: root, info: Self.authLabel).bytes)
    }

    /// The public half that goes into the recovery slot and the recovery.set link.
    package func slot(salt: [UInt8], parameters: Argon2id.Parameters, anchor: Envelope) -> RecoverySlot {
        RecoverySlot(salt: Hex.encode(salt), iterations: parameters.iterations, memoryKiB: parameters.memoryKiB,
                     authKey: Hex.encode(authKey.publicKey.rawRepresentation), boxKey: Hex.encode(boxKey.publicKey.rawRepresentation),
                     anchor: anchor.base64)
    }

    /// The bytes RA signs to answer a recovery challenge.
    package func proof(for challenge: String, account: AccountID) -> RecoveryProof {
        RecoveryProof(challenge: challenge, signature: base64Encode(authKey.signature(
            for: RecoveryProofFormat.signedBytes(account: account, challenge: challenge))))
    }
}

/// What a brand-new device holding only the recovery code may trust: the account
/// and the hash of its genesis link, sealed under RW and bound to the account.
package struct RecoveryAnchor: Sendable, Codable, Equatable {
    package var account: AccountID
    /// Hex SHA-256 hash of the account's genesis link.
    package var genesis: String

    package init(account: AccountID, genesis: String) {
        self.account = account
        self.genesis = genesis
    }

    static func context(_ account: AccountID) throws -> EnvelopeContext {
        try EnvelopeContext(purpose: "recovery-anchor", ["account": account.rawValue])
    }

    /// Seals the anchor under RW; `generation` is the recovery generation.
    package func seal(under keys: RecoveryKeys, generation: UInt32) throws -> Envelope {
        let plaintext = try JSONEncoder.sorted.encode(self)
        return try Envelope.seal(Array(plaintext), under: keys.wrapKey, generation: generation, context: Self.context(account))
    }

    /// Opens an anchor for `account`.
    ///
    /// - Throws: `VaultError` `wrong_recovery_code` when RW does not open it (another
    ///   code, or an anchor moved from another account), `malformed_anchor` otherwise.
    package static func open(_ envelope: Envelope, with keys: RecoveryKeys, account: AccountID) throws -> RecoveryAnchor {
        let plaintext: SecureBytes
        do {
            plaintext = try envelope.open(using: keys.wrapKey, context: context(account))
        } catch let error as CryptoError where error.code == .authenticationFailure || error.code == .keyMismatch {
            throw VaultError(.wrongRecoveryCode, "this recovery code does not open account \(account)'s recovery anchor")
        }
        guard let anchor = try? JSONDecoder().decode(RecoveryAnchor.self, from: Data(plaintext.unprotectedCopy())),
              anchor.account == account else {
            throw VaultError(.malformedAnchor, "the recovery anchor does not name account \(account)")
        }
        return anchor
    }
}

/// The one error type of KeyVaultVault: what the client refuses, and why.
package struct VaultError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The shared codes (``ErrorCode``), with the vault's own below.
    package typealias Code = ErrorCode

    package let code: Code
    package let message: String
    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
    package var description: String { message }
}

/// The vault's own codes: what the client finds wrong in data it opens.
/// (`malformed_attachment` is shared with the service: ``ErrorCode/malformedAttachment``.)
extension ErrorCode {
    package static let wrongRecoveryCode = ErrorCode(rawValue: "wrong_recovery_code")
    package static let malformedAnchor = ErrorCode(rawValue: "malformed_anchor")
    /// A member key wrap that does not open for its member and generation.
    package static let wrapMismatch = ErrorCode(rawValue: "wrap_mismatch")
    /// An attachment whose content does not match its address, or does not open.
    package static let addressMismatch = ErrorCode(rawValue: "address_mismatch")
}

extension JSONEncoder {
    /// Sorted keys: the same value always encodes to the same bytes.
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
