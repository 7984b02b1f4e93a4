import KeyVaultCrypto
import KeyVaultModel

// docs/formats/account-chain.md, "Signed bytes and hash": a link's bytes, hash and
// signature, the first link of an account, and device ids.

extension ChainLink {
    /// The bytes a link's signature covers.
    package var signedBytes: [UInt8] {
        var w = CanonicalWriter(domain: "keyvault/v1/chain-link")
        w.u8(UInt8(clamping: version))
        w.u64(sequence)
        w.raw((try? Hex.decode(previous)) ?? [])
        w.short(type.rawValue)
        w.short(signer)
        w.u64(UInt64(bitPattern: time))
        w.u8(UInt8(clamping: body.count))
        for key in body.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            w.short(key)
            w.long(Array(body[key]!.utf8))
        }
        return w.bytes
    }

    /// SHA-256 of the signed bytes followed by the 64-byte signature, in hex: the
    /// next link's `previous`.
    package var hash: String {
        Hex.encode(SHA256.hash(signedBytes + (base64Decode(signature) ?? [])))
    }

    /// Signs the link with `key` (sets `signature`).
    package mutating func sign(with key: Ed25519.PrivateKey) {
        signature = base64Encode(key.signature(for: signedBytes))
    }

    /// The account a genesis link founds: the first 16 bytes of its hash.
    package var accountID: AccountID { AccountID(unchecked: String(hash.prefix(32))) }
}

extension ChainLink {
    /// Whether the service takes `name` for a device it stores: 1 to 100 characters and no
    /// control character (Unicode Cc: NUL, which PostgreSQL's text cannot hold, or a
    /// terminal's escape). The chain itself asks only for the length, so a chain stored
    /// before this check still replays; clients ask for more (``Vault`` names are printable).
    package static func isStorableDeviceName(_ name: String) -> Bool {
        (1...100).contains(name.count) && !name.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// The body fields that introduce a device (genesis, device.add).
    package static func deviceFields(signingKey: Ed25519.PublicKey, boxKey: X25519.PublicKey, name: String) -> [String: String] {
        ["device": deviceID(for: signingKey).rawValue, "name": name,
         "signingKey": Hex.encode(signingKey.rawRepresentation), "boxKey": Hex.encode(boxKey.rawRepresentation)]
    }

    /// A signed genesis link for a new account whose first device holds these keys.
    /// - Parameter masterKeyCheck: the check value of master key generation 1
    ///   (docs/formats/member-keys.md, "Master key check"), so that a box of a key
    ///   other than the one this device made is refused.
    package static func genesis(signingKey: Ed25519.PrivateKey, boxKey: X25519.PublicKey, name: String, time: Int64,
                               masterKeyCheck: String? = nil) -> ChainLink {
        var fields = deviceFields(signingKey: signingKey.publicKey, boxKey: boxKey, name: name)
        fields["masterGeneration"] = "1"
        if let masterKeyCheck { fields["masterKeyCheck"] = masterKeyCheck }
        var link = ChainLink(sequence: 0, previous: noPrevious, type: .genesis, signer: deviceID(for: signingKey.publicKey).rawValue,
                             time: time, body: fields)
        link.sign(with: signingKey)
        return link
    }
}

/// A device id: the first 16 bytes of SHA-256("keyvault/v1/device-id" ‖ 0 ‖ signing key), hex.
package func deviceID(for signingKey: Ed25519.PublicKey) -> DeviceID {
    let digest = SHA256.hash(Array("keyvault/v1/device-id".utf8) + [0] + signingKey.rawRepresentation)
    return DeviceID(unchecked: Hex.encode(Array(digest.prefix(16))))
}
