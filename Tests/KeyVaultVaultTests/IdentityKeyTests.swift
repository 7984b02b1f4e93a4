import Foundation
import KeyVaultModel
import KeyVaultTestSupport
import Testing
@testable import KeyVaultCrypto
@testable import KeyVaultVault

private struct IdentityKeyFile: Decodable {
    struct Wrap: Decodable { let identityGeneration: UInt32, masterGeneration: UInt32, envelope: String, signingKey: String, boxKey: String }
    let account: String, masterKey: String
    let wraps: [Wrap]
}

@Test func identityWrapsOpenAsTheIndependentImplementationSealedThem() throws {
    let v = try vectors.load("identity-key-v1", as: IdentityKeyFile.self)
    let account = try #require(AccountID(rawValue: v.account))
    let master = try key(v.masterKey)
    for w in v.wraps {
        let wrap = IdentityWrap(identityGeneration: w.identityGeneration, masterGeneration: w.masterGeneration, envelope: w.envelope)
        let keys = try IdentityKeyWrap.open(wrap, account: account, masterKey: master, masterGeneration: w.masterGeneration)
        #expect(keys.generation == w.identityGeneration)
        #expect(Hex.encode(keys.signing.publicKey.rawRepresentation) == w.signingKey)
        #expect(Hex.encode(keys.boxKey.publicKey.rawRepresentation) == w.boxKey)
        // Moved to another identity generation, master generation or account: refused.
        var moved = wrap
        moved.identityGeneration += 1
        #expect(throws: VaultError.self) { try IdentityKeyWrap.open(moved, account: account, masterKey: master, masterGeneration: w.masterGeneration) }
        #expect(throws: VaultError.self) { try IdentityKeyWrap.open(wrap, account: account, masterKey: master, masterGeneration: w.masterGeneration + 1) }
        let elsewhere = AccountID(unchecked: String(repeating: "0", count: 32))
        #expect(throws: VaultError.self) { try IdentityKeyWrap.open(wrap, account: elsewhere, masterKey: master, masterGeneration: w.masterGeneration) }
        #expect(throws: VaultError.self) { try IdentityKeyWrap.open(wrap, account: account, masterKey: SymmetricKey(), masterGeneration: w.masterGeneration) }
    }
    // Sealing round-trips, and the public halves are the ones the link body publishes.
    let fresh = SharingIdentityKeys(generation: 3)
    let sealed = try IdentityKeyWrap.seal(fresh, account: account, under: master, masterGeneration: 7)
    let opened = try IdentityKeyWrap.open(sealed, account: account, masterKey: master, masterGeneration: 7)
    #expect(opened.linkBody == fresh.linkBody)
}
