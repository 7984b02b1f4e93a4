/// The system CSPRNG (libsodium `randombytes`), for values that are not secret
/// (nonces, salts, ids). Secrets come from ``SecureBytes/init(randomCount:)``.
package struct SystemRandom: RandomNumberGenerator, Sendable {
    package init() {}

    package mutating func next() -> UInt64 {
        var value: UInt64 = 0
        withUnsafeMutableBytes(of: &value) { Sodium.randomFill($0) }
        return value
    }

    /// `count` random bytes.
    package static func bytes(count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { Sodium.randomFill($0) }
        return out
    }

    /// A uniform value in `0..<upperBound`, without modulo bias.
    package static func uniform(below upperBound: UInt32) -> UInt32 {
        Sodium.randomUniform(upperBound)
    }
}
