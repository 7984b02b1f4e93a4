import Foundation
import KeyVaultCrypto

/// Loads a JSON vector file from the test bundle's `Vectors` folder.
enum Vectors {
    static func load<T: Decodable>(_ name: String, as type: T.Type = T.self) throws -> T {
        guard let url = Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Vectors") else {
            throw CryptoError(.io, "vector file \(name).json is not in the test bundle")
        }
        return try JSONDecoder().decode(T.self, from: Data(contentsOf: url))
    }
}

func hex(_ text: String) throws -> [UInt8] { try Hex.decode(text) }

func key(_ text: String) throws -> SymmetricKey {
    var bytes = try Hex.decode(text)
    return try SymmetricKey(SecureBytes(wiping: &bytes))
}
