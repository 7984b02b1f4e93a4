import Foundation
import KeyVaultMnemonic
import KeyVaultModel
import KeyVaultTestSupport
import Testing
@testable import KeyVaultCrypto
@testable import KeyVaultVault

struct RecoveryFile: Decodable {
    struct Vector: Decodable, Sendable, CustomTestStringConvertible {
        let mnemonic: String, entropy: String, salt: String, t: UInt32, m: UInt32
        let wrapKey: String, boxKey: String, boxPublicKey: String, authSeed: String, authPublicKey: String
        let account: String, anchor: String, anchorNonce: String, anchorEnvelope: String
        var testDescription: String { "t=\(t), m=\(m) KiB" }
    }
    let tests: [Vector]
}

/// This target's JSON vector files (its `Vectors` resources).
let vectors = Vectors(in: .module)

func loadRecoveryVectors() throws -> [RecoveryFile.Vector] {
    try vectors.load("recovery-keys-v1", as: RecoveryFile.self).tests
}

@Test(arguments: try loadRecoveryVectors())
func recoveryKeysMatchIndependentImplementation(_ v: RecoveryFile.Vector) throws {
    let code = try Mnemonic(phrase: v.mnemonic)
    #expect(Hex.encode(code.entropy) == v.entropy)
    let keys = try RecoveryKeys(code: code, salt: Hex.decode(v.salt), parameters: Argon2id.Parameters(iterations: v.t, memoryKiB: v.m))
    #expect(Hex.encode(keys.wrapKey) == v.wrapKey)
    #expect(Hex.encode(keys.boxKey.rawRepresentation) == v.boxKey)
    #expect(Hex.encode(keys.boxKey.publicKey.rawRepresentation) == v.boxPublicKey)
    #expect(Hex.encode(keys.authKey.seed) == v.authSeed)
    #expect(Hex.encode(keys.authKey.publicKey.rawRepresentation) == v.authPublicKey)

    let account = try #require(AccountID(rawValue: v.account))
    let envelope = try Envelope(bytes: Hex.decode(v.anchorEnvelope))
    let anchor = try RecoveryAnchor.open(envelope, with: keys, account: account)
    #expect(anchor.account == account)
    // Sealing the same anchor with the same nonce gives the same bytes.
    let sealed = try Envelope.seal(Array(v.anchor.utf8), under: keys.wrapKey, generation: 1,
                                   context: EnvelopeContext(purpose: "recovery-anchor", ["account": account.rawValue]),
                                   algorithm: .xchacha20Poly1305, nonce: Hex.decode(v.anchorNonce))
    #expect(Hex.encode(sealed.bytes) == v.anchorEnvelope)
    #expect(try JSONEncoder.sorted.encode(anchor) == Data(v.anchor.utf8))
}

@Test func anAnchorOpensOnlyWithItsCodeAndForItsAccount() throws {
    let v = try #require(try loadRecoveryVectors().first)
    let envelope = try Envelope(bytes: Hex.decode(v.anchorEnvelope))
    let parameters = try Argon2id.Parameters(iterations: v.t, memoryKiB: v.m)
    let keys = try RecoveryKeys(code: Mnemonic(phrase: v.mnemonic), salt: Hex.decode(v.salt), parameters: parameters)
    let otherAccount = AccountID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))
    #expect { try RecoveryAnchor.open(envelope, with: keys, account: otherAccount) } throws: {
        ($0 as? VaultError)?.code == .wrongRecoveryCode
    }
    let otherCode = try RecoveryKeys(code: Mnemonic.generate(), salt: Hex.decode(v.salt), parameters: parameters)
    do {
        _ = try RecoveryAnchor.open(envelope, with: otherCode, account: AccountID(unchecked: v.account))
        Issue.record("another code opened the anchor")
    } catch let error as VaultError {
        #expect(error.code == .wrongRecoveryCode)
    }
    // The other salt gives other keys.
    let otherSalt = try RecoveryKeys(code: Mnemonic(phrase: v.mnemonic), salt: SystemRandom.bytes(count: 16), parameters: parameters)
    #expect(otherSalt.wrapKey != keys.wrapKey)
}

@Test func aRecoveryProofVerifiesUnderTheAuthKey() throws {
    let keys = try RecoveryKeys(entropy: SecureBytes(randomCount: 32), salt: SystemRandom.bytes(count: 16), parameters: .floor)
    let account = AccountID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))
    let proof = keys.proof(for: "ab12", account: account)
    // The format written out here on purpose: the test pins the bytes, not the helper.
    let bytes = Array("keyvault/v1/recovery-proof".utf8) + [0] + Array(account.rawValue.utf8) + [0] + Array("ab12".utf8)
    #expect(keys.authKey.publicKey.isValidSignature(Data(base64Encoded: proof.signature).map { [UInt8]($0) } ?? [], for: bytes))
}

/// Argon2id takes a recovery code's second (and more on a phone) on a thread of its
/// own: the caller's executor runs its other work meanwhile. The watcher, on the same
/// one thread, must get 16 turns while it runs (`watcherTurns`): a derivation done on
/// that thread leaves it the hops only.
@Test(.timeLimit(.minutes(1)))
func derivingRecoveryKeysLeavesTheCallersThreadFree() async throws {
    var entropy = [UInt8](repeating: 7, count: 32)
    let code = try Mnemonic(entropy: SecureBytes(wiping: &entropy))
    let salt = [UInt8](repeating: 1, count: Argon2id.saltByteCount)
    let (keys, turns) = try await watcherTurns(upTo: 16) { try await RecoveryKeys.derive(code: code, salt: salt, parameters: .interactive) }
    #expect(keys.authKey.publicKey == (try RecoveryKeys(code: code, salt: salt, parameters: .interactive)).authKey.publicKey)
    #expect(turns == 16, "the other task ran only once the derivation had ended")
}
