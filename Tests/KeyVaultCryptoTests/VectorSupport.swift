import Foundation
import KeyVaultCrypto
import KeyVaultTestSupport

/// This target's JSON vector files (its `Vectors` resources).
let vectors = Vectors(in: .module)

func hex(_ text: String) throws -> [UInt8] { try Hex.decode(text) }

func key(_ text: String) throws -> SymmetricKey {
    var bytes = try Hex.decode(text)
    return try SymmetricKey(SecureBytes(wiping: &bytes))
}
