import KeyVaultCrypto
import KeyVaultModel

// docs/formats/head-statement.md is the specification of everything in this file.

extension HeadStatement {
    /// The bytes a statement's signature covers.
    package var signedBytes: [UInt8] {
        var w = CanonicalWriter(domain: "keyvault/v1/head-statement")
        w.u8(UInt8(clamping: version))
        w.short(account.rawValue)
        w.short(device.rawValue)
        w.u64(sequence)
        w.raw((try? Hex.decode(head)) ?? [])
        w.u64(UInt64(bitPattern: time))
        return w.bytes
    }

    /// Whether `signature` is `key`'s signature of this statement.
    package func isSigned(by key: Ed25519.PublicKey) -> Bool {
        guard let signature = base64Decode(signature), signature.count == 64 else { return false }
        return key.isValidSignature(signature, for: signedBytes)
    }

    /// A statement of `state`'s head by device `key`, at `time`.
    package static func signed(for state: ChainState, by key: Ed25519.PrivateKey, time: Int64) -> HeadStatement {
        var statement = HeadStatement(account: state.account, device: deviceID(for: key.publicKey), sequence: state.sequence,
                                      head: state.head, time: time)
        statement.signature = base64Encode(key.signature(for: statement.signedBytes))
        return statement
    }

    /// Checks the statement against the chain it speaks of (`links`, replayed into
    /// `state`): version 1, this account, a device of it that was active at the head it
    /// names, a valid signature, and a head that is a link of this chain.
    ///
    /// - Throws: `ProtocolError` `unsupported_version`, `wrong_account`, `unknown_signer`,
    ///   `bad_signature`, then `stale_chain` when it names a head this chain does not
    ///   have: a later one (the chain shown is behind what the device saw) or another
    ///   at the same place (a fork).
    package func verify(in state: ChainState, links: [ChainLink]) throws {
        guard version == 1 else { throw ProtocolError(.unsupportedVersion, "head statement version \(version) is not supported") }
        guard account == state.account else { throw ProtocolError(.wrongAccount, "a head statement of \(account) is not of \(state.account)") }
        guard let signer = state.devices[device] else {
            throw ProtocolError(.unknownSigner, "a head statement is signed by a device this account does not have")
        }
        guard isSigned(by: signer.signingKey) else {
            throw ProtocolError(.badSignature, "the head statement of device \(device) has an invalid signature")
        }
        guard sequence < UInt64(links.count), links[Int(sequence)].hash == head else {
            throw ProtocolError(.staleChain, sequence > state.sequence
                                ? "device \(signer.name) of \(account) saw link \(sequence) of its chain, which is shown here only up to \(state.sequence): the chain is being held back"
                                : "device \(signer.name) of \(account) saw another link \(sequence) than the chain shown here: the chain forked")
        }
        guard signer.wasActive(at: sequence) else {
            throw ProtocolError(.signerRevoked, "device \(signer.name) of \(account) was not active at link \(sequence)")
        }
    }
}

/// How recent a view of another account's chain is: for each device active at its
/// head, the newest statement it signed of a head of that chain.
package struct ChainFreshness: Sendable {
    /// How old the freshest statement of each active device may be: 14 days.
    package static let window: Int64 = 14 * 24 * 3600

    /// An active device with no statement newer than the window.
    package struct Stale: Sendable, Equatable {
        package var device: ChainState.Device
        /// Unix seconds of its freshest statement of this chain, if any.
        package var lastStatement: Int64?

        /// Whole days since its freshest statement at `now` (nil: none).
        package func daysSilent(at now: Int64) -> Int64? { lastStatement.map { ChainFreshness.age(of: $0, at: now) / 86400 } }
    }

    /// Seconds from `time` to `now`, for a `time` at or before `now` that a server may
    /// have chosen (as far back as an Int64 goes): saturates rather than overflows.
    static func age(of time: Int64, at now: Int64) -> Int64 {
        let (age, overflow) = now.subtractingReportingOverflow(time)
        return overflow ? .max : age
    }

    /// The active devices of `state` whose freshest statement of this chain is older
    /// than `window` at `now` (a statement dated after `now` counts as made now).
    ///
    /// - Throws: what ``HeadStatement/verify(in:links:)`` throws for any statement: a
    ///   statement that does not verify, or that names a head the chain shown does not
    ///   have, refuses the whole view.
    package static func stale(_ statements: [HeadStatement], of state: ChainState, links: [ChainLink], now: Int64,
                             window: Int64 = Self.window) throws -> [Stale] {
        var freshest = [DeviceID: Int64]()
        for statement in statements {
            try statement.verify(in: state, links: links)
            freshest[statement.device] = max(freshest[statement.device] ?? .min, min(statement.time, now))
        }
        return state.activeDevices.compactMap { device in
            if let last = freshest[device.id], Self.age(of: last, at: now) <= window { return nil }
            return Stale(device: device, lastStatement: freshest[device.id])
        }
    }
}
