import KeyVaultCrypto

/// The parsers and state machines that meet bytes from outside, each as a function
/// of any bytes that must not crash and reports a broken invariant as a
/// ``FuzzFinding``. `keyvault-fuzz` runs them under libFuzzer (Scripts/fuzz.sh);
/// KeyVaultFuzzTests replays the committed seeds and every input a run ever
/// crashed on (Fuzz/Corpus, Fuzz/Regressions).
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// BIP39 phrases (the parser, the ASCII fast path, NFKD).
    case mnemonic
    /// The envelope decoder, and opening under a known key.
    case envelope
    /// The attachment object parser.
    case attachment
    /// Request-signature and session headers, and the session id.
    case headers
    /// Chain links as JSON, replayed by ChainState, optionally re-chained and re-signed.
    case chain
    /// The service's strict JSON decoding of every request body.
    case requestJSON = "request-json"

    /// Runs one input.
    ///
    /// - Throws: a ``FuzzFinding`` when an invariant breaks; every other outcome
    ///   (including every refusal of the input) returns normally.
    public func run(_ data: [UInt8]) throws(FuzzFinding) {
        switch self {
        case .mnemonic: try MnemonicTarget.run(data)
        case .envelope: try EnvelopeTarget.run(data)
        case .attachment: try AttachmentTarget.run(data)
        case .headers: try HeadersTarget.run(data)
        case .chain: _ = try ChainTarget.run(data)
        case .requestJSON: RequestJSONTarget.run(data)
        }
    }
}

/// An invariant the input broke: a bug, to be kept as a regression input.
public struct FuzzFinding: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws(FuzzFinding) {
    if !condition { throw FuzzFinding(message()) }
}

/// Fixed keys, so that the seeds made with them (``SeedCorpus``) are meaningful in
/// every run.
enum FixedKeys {
    static func symmetric(_ byte: UInt8) -> SymmetricKey {
        try! SymmetricKey(SecureBytes(copying: [UInt8](repeating: byte, count: 32)))
    }
    static func signing(_ byte: UInt8) -> Ed25519.PrivateKey {
        try! Ed25519.PrivateKey(seed: SecureBytes(copying: [UInt8](repeating: byte, count: 32)))
    }
    static func box(_ byte: UInt8) -> X25519.PrivateKey {
        try! X25519.PrivateKey(rawRepresentation: SecureBytes(copying: [UInt8](repeating: byte, count: 32)))
    }
}
