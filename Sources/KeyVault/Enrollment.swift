import Foundation
import KeyVaultCrypto
import KeyVaultMnemonic
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultVault

extension Vault {
    /// Creates an account whose first device is this one, with master key generation
    /// 1, then sets `code` as its recovery code. The account is saved in `home` as
    /// soon as the server has it, so an interruption before the recovery code is set
    /// leaves a working device (`keyctl status` says the code is missing).
    package static func createAccount(home: DeviceHome, server: String, transport: any HTTPTransport, invite: String? = nil, name: String,
                                     code: Mnemonic, parameters: Argon2id.Parameters,
                                     progress: @escaping ProgressReporter = { _ in }) async throws -> Vault {
        try await locked(home) {
            if try home.exists {
                // Named from the file without opening it: no passphrase asked for, no key derived.
                throw KeyVaultError(.alreadyInitialized, "\(home.directory) already holds a device\(home.storedAccount.map { " of account \($0)" } ?? "")")
            }
            try Vault.checkName(name, of: "a device")
            let keys = DeviceKeys()
            let master = SymmetricKey()
            let genesis = ChainLink.genesis(signingKey: keys.signing, boxKey: keys.boxKey.publicKey, name: name,
                                            time: Int64(Date().timeIntervalSince1970),
                                            masterKeyCheck: try MasterKeyCheck.compute(master, generation: 1))
            let state = try ChainState(genesis: genesis)
            var box = KeyBox(generation: 1, sequence: 0, recipient: keys.id.rawValue, box: base64Encode(try keys.boxKey.publicKey.sealedBox(for: master)),
                             signer: keys.id.rawValue, signature: "")
            box.sign(with: keys.signing, account: state.account)
            let api = ServerAPI(transport: transport)
            progress(.creatingAccount(server: server))
            let created = try await api.createAccount(CreateAccountRequest(genesis: genesis, boxes: [box], recovery: nil), invite: invite)
            guard created.account == state.account, created.head == state.head else {
                throw KeyVaultError(.wrongAccount, "the server answered with another account than the one this device made",
                                  kind: .verification)
            }
            let record = DeviceRecord(server: server, account: state.account, name: name, head: state.head, sequence: 0, enrolled: true,
                                      keys: keys, masterKeys: [1: master])
            try home.save(record)
            let vault = Vault(home: home, record: record, transport: transport, progress: progress)
            await vault.start(links: [genesis], state: state)
            do {
                try await vault.setRecoveryCode(RecoveryCode(code), argon2: parameters)
            } catch let error as KeyVaultError {
                throw KeyVaultError(error.code, "account \(state.account) was created and this device is in it, but setting the recovery code failed: \(error.message)", kind: error.kind, status: error.status)
            }
            await vault.stateHead(try await vault.chain)
            return vault
        }
    }

    /// Enrolls a new device with the account's recovery code: proves the code to the
    /// server, opens the anchor, checks the chain against it, opens the master key
    /// sealed to the recovery key and adds this device with a link signed by it.
    package static func enrollWithRecoveryCode(home: DeviceHome, server: String, transport: any HTTPTransport, account: AccountID,
                                              name: String, code: Mnemonic,
                                              progress: @escaping ProgressReporter = { _ in }) async throws -> Vault {
        try await locked(home) {
            let leftover = try await prepareNewDevice(home: home, name: name).flatMap { $0.account == account ? $0 : nil }
            let api = ServerAPI(transport: transport, account: account)
            let slot = try await api.recoverySlot()
            let parameters: Argon2id.Parameters
            do {
                parameters = try Argon2id.Parameters(iterations: slot.iterations, memoryKiB: slot.memoryKiB)
            } catch let error as CryptoError where error.code == .parametersAboveCeiling {
                throw KeyVaultError(.kdfAboveCeiling, "the server's recovery slot asks for Argon2id t=\(slot.iterations), m=\(slot.memoryKiB) KiB: \(error.message); refusing to use it", kind: .verification)
            } catch let error as CryptoError {
                throw KeyVaultError(.weakKDF, "the server's recovery slot asks for Argon2id t=\(slot.iterations), m=\(slot.memoryKiB) KiB: \(error.message); refusing to use it", kind: .verification)
            }
            guard let salt = try? Hex.decode(slot.salt), salt.count == Argon2id.saltByteCount, let anchorEnvelope = try? Envelope(base64: slot.anchor) else {
                throw KeyVaultError(.badResponse, "the server's recovery slot does not parse")
            }
            progress(.derivingRecoveryKeys(iterations: parameters.iterations, memoryKiB: parameters.memoryKiB))
            let keys = try await RecoveryKeys.derive(code: code, salt: salt, parameters: parameters)
            let anchor: RecoveryAnchor
            do {
                anchor = try RecoveryAnchor.open(anchorEnvelope, with: keys, account: account)
            } catch let error as VaultError {
                throw KeyVaultError(KeyVaultError.Code(error.code), error.message,
                                  kind: .rejected)
            }
            progress(.provingRecoveryCode)
            let challenge = try await api.recoveryChallenge()
            let session = try await api.recoveryProof(keys.proof(for: challenge.challenge, account: account))
            let state = try verify(session.chain.links, account: account, seenHead: "", seenSequence: 0)
            guard session.chain.links.first?.hash == anchor.genesis else {
                throw KeyVaultError(.wrongAccount, "the chain the server sent does not start at the genesis link your recovery code names", kind: .verification)
            }
            guard let recovery = state.recovery, recovery.authKey == keys.authKey.publicKey, recovery.boxKey == keys.boxKey.publicKey else {
                throw KeyVaultError(.chainInvalid, "the account chain names another recovery code than this one", kind: .verification)
            }
            let g = state.masterGeneration
            // Sealed to this code: made at or after the link that set it (an earlier code may hold a box of the same generation).
            guard let recoveryBox = session.boxes.first(where: { $0.recipient == ChainLink.recoverySigner && $0.generation == g && $0.sequence >= recovery.set }) else {
                throw KeyVaultError(.missingKey, "the server has no master key box of generation \(g) for the recovery code", kind: .verification)
            }
            let master = try open(recoveryBox, in: state, with: keys.boxKey)

            // An earlier run whose enrollment committed but whose answer was lost saved the
            // keys it enrolled: finish with them rather than add a second device.
            if var record = leftover, let known = state.devices[record.keys.id] {
                guard known.isActive else {
                    throw KeyVaultError(.deviceRevoked, "this device was added to account \(account) and revoked since (link \(known.revoked ?? 0))")
                }
                return try await finish(&record, at: state)
            }
            // The same keys again, should that earlier answer still arrive.
            let device = leftover?.keys ?? DeviceKeys()
            var link = ChainLink(sequence: state.sequence + 1, previous: state.head, type: .deviceAdd, signer: ChainLink.recoverySigner,
                                 time: Int64(Date().timeIntervalSince1970), body: device.fields(name: name))
            link.sign(with: keys.authKey)
            var box = KeyBox(generation: g, sequence: link.sequence, recipient: device.id.rawValue, box: base64Encode(try device.boxKey.publicKey.sealedBox(for: master)),
                             signer: ChainLink.recoverySigner, signature: "")
            box.sign(with: keys.authKey, account: account)
            var after = state
            try after.apply(link)
            // Keep the keys before the server knows the device: a crash after enrollment must not lose them.
            var record = DeviceRecord(server: server, account: account, name: name, head: "", sequence: 0, enrolled: false, keys: device)
            try home.save(record)
            progress(.addingDevice)
            try await api.recoveryEnroll(RecoveryEnrollRequest(token: session.token, link: link, boxes: [box]))
            return try await finish(&record, at: after)

            /// The device is in the account at `state`: saved as enrolled, then synced.
            func finish(_ record: inout DeviceRecord, at state: ChainState) async throws -> Vault {
                record.enrolled = true
                record.head = state.head
                record.sequence = state.sequence
                record.masterKeys[g] = master
                try home.save(record)
                let vault = Vault(home: home, record: record, transport: transport, progress: progress)
                try await vault.sync()
                return vault
            }
        }
    }

    /// Checks the home of a device about to join (locked by the caller), which must not
    /// hold an enrolled device already; returns what an unfinished enrollment left there.
    @discardableResult
    static func prepareNewDevice(home: DeviceHome, name: String) async throws -> DeviceRecord? {
        // Only an empty home, or one an enrollment or link left unfinished, may take a new
        // device: a device whose record cannot be read now (sealed, damaged, a storage
        // error) is never overwritten.
        var leftover: DeviceRecord?
        do {
            let existing = try await home.loadOnThreadOfItsOwn()
            if existing.enrolled {
                throw KeyVaultError(.alreadyInitialized, "\(home.directory) already holds an enrolled device of account \(existing.account)")
            }
            leftover = existing
        } catch let error as KeyVaultError where error.code == .notInitialized {}
        try Vault.checkName(name, of: "a device")
        return leftover
    }

    /// What a new device shows while it links (docs/formats/device-link.md).
    public enum LinkEvent: Sendable, Equatable {
        /// The request is posted: show `code`; a device of the account approves with it.
        case requested(code: String, expires: Int64)
        /// The approver answered and this device revealed its value: show the SAS, which
        /// the person types on the approving device.
        case sas(String)
        /// A request made earlier from this home was approved while nobody was watching:
        /// the device joins with the keys it already has.
        case resumed(code: String)
    }

    /// How many times a new device asks for the approver's confirmation code before it
    /// stops (its home keeps the request: `link` again asks anew).
    public static let confirmationAttempts = 3

    /// Asks a device of the account to add this one: posts a request with a commitment
    /// to this device's keys and a random value r_N, waits for the approver's value,
    /// reveals r_N, reports the SAS through `events`, and waits until the request is
    /// approved, refused or expired; then asks `askConfirmation` (attempt 1, 2, 3) for
    /// the code the approving device shows, and joins only when it is the one this
    /// device computed.
    ///
    /// A home left by an earlier `link` that never saw its request end is looked at
    /// first: if that request was approved, the device asks for the code and joins with its keys.
    package static func link(home: DeviceHome, server: String, transport: any HTTPTransport, account: AccountID, name: String,
                            pollInterval: Duration = .seconds(1), events: (LinkEvent) -> Void,
                            askConfirmation: (_ attempt: Int) async throws -> String?,
                            progress: @escaping ProgressReporter = { _ in }) async throws -> Vault {
        try await locked(home) {
            let leftover = try await prepareNewDevice(home: home, name: name)
            var device = DeviceKeys()
            if let earlier = leftover, earlier.account == account, earlier.server == server, !earlier.enrolled {
                // A request made from this home may still be approved: keep the keys it named,
                // so that its approval never leaves a device nobody holds the keys of.
                device = earlier.keys
                if let code = earlier.linkCode {
                    let info: LinkRequestInfo?
                    do {
                        info = try await ServerAPI(transport: transport, account: account).linkRequest(code)
                    } catch let error as KeyVaultError where error.status == 404 {
                        info = nil
                    }
                    if let info, info.status == .approved, info.request.device == earlier.device {
                        events(.resumed(code: code))
                        return try await finishLink(home: home, record: earlier, transport: transport, askConfirmation: askConfirmation,
                                                    progress: progress)
                    }
                }
            }
            var record = DeviceRecord(server: server, account: account, name: name, head: "", sequence: 0, enrolled: false, keys: device)
            try home.save(record)
            let api = ServerAPI(transport: transport, account: account, keys: device)
            let nonce = SystemRandom.bytes(count: LinkCommitment.nonceByteCount)
            let signingKey = device.signing.publicKey.rawRepresentation, boxKey = device.boxKey.publicKey.rawRepresentation
            let commitment = LinkCommitment.compute(account: account, device: device.id, signingKey: signingKey, boxKey: boxKey,
                                                    name: name, nonce: nonce)
            let request = LinkRequestCreate(device: device.id, name: name, signingKey: Hex.encode(signingKey), boxKey: Hex.encode(boxKey),
                                            commitment: Hex.encode(commitment))
            let info = try await api.createLinkRequest(request)
            guard LinkCode.isValid(info.code) else { throw KeyVaultError(.badResponse, "the server's link request code is malformed") }
            record.linkCode = info.code
            try home.save(record)
            events(.requested(code: info.code, expires: info.expires))
            // The server says when the request expires; a server that keeps saying "pending" is not waited on for ever.
            let deadline = min(info.expires, Int64(Date().timeIntervalSince1970) + 15 * 60) + 30
            var revealed = false
            while true {
                try await Task.sleep(for: pollInterval)
                let status = try await api.linkRequest(info.code)
                switch status.status {
                case .pending:
                    guard Int64(Date().timeIntervalSince1970) <= deadline else { throw linkExpired }
                    // Reveal only once the approver's value is fixed: the server then chose it without knowing r_N.
                    if !revealed, let answer = status.approverNonce {
                        // The digits name the approving device: equal digits say which device adds
                        // this one, and only a chain where that device did is joined (finishLink).
                        guard let approver = status.approver, let approverNonce = try? Hex.decode(answer),
                              approverNonce.count == LinkCommitment.nonceByteCount,
                              let codes = LinkSAS.codes(account: account, code: info.code, approver: approver,
                                                        request: request, deviceNonce: nonce, approverNonce: approverNonce)
                        else { throw KeyVaultError(.badResponse, "the server's answer to link request \(info.code) names no approving device, or a malformed value") }
                        // Kept before the reveal: an approval this device does not see end is
                        // finished later (a second `link`) against the same approver.
                        (record.linkApprover, record.linkConfirmation) = (approver, codes.confirmation)
                        try home.save(record)
                        try await api.revealLinkRequest(info.code, nonce: nonce)
                        revealed = true
                        events(.sas(codes.sas))
                    }
                    // The server's expiry, bounded by this device's own deadline: no number of its choosing on the screen.
                    let left = max(0, min(status.expires, deadline) - Int64(Date().timeIntervalSince1970))
                    progress(.waitingForApproval(codeShown: revealed, secondsLeft: left))
                case .refused:
                    throw KeyVaultError(.linkRequestClosed, "the request was refused on the other device",
                                      kind: .rejected)
                case .expired:
                    throw linkExpired
                case .approved:
                    return try await finishLink(home: home, record: record, transport: transport, askConfirmation: askConfirmation,
                                                progress: progress)
                }
            }
        }
    }

    /// Asks for the approver's confirmation code up to ``confirmationAttempts`` times;
    /// returns once one typed equals `expected` (compared in constant time).
    private static func checkConfirmation(_ expected: String, _ askConfirmation: (_ attempt: Int) async throws -> String?) async throws {
        for attempt in 1...confirmationAttempts {
            guard let typed = try await askConfirmation(attempt) else {
                throw KeyVaultError(.linkRequestClosed, "no confirmation code was typed, so this device did not join; run the link again in the same home to type the code the approving device showed. If it showed none (its answer was lost), delete this home and link again, then revoke the unused device from a device of the account if it is listed",
                                    kind: .rejected)
            }
            if let digits = LinkSAS.digits(typed), constantTimeEquals(Array(digits.utf8), Array(expected.utf8)) { return }
        }
        throw KeyVaultError(.sasMismatch, "the confirmation code typed \(confirmationAttempts) times does not match the one this device computed, so it did not join. If you typed what the approving device showed, the server named another device to this one as its approver: do not use this device (delete its home) and revoke it from a device of the account. Otherwise run the link again in the same home and type the code once more (only the code the approving device showed after it approved; a code in an error message or a device name is not it)",
                            kind: .rejected)
    }

    static var linkExpired: KeyVaultError {
        KeyVaultError(.linkRequestClosed, "the request expired before it was approved", kind: .rejected)
    }

    /// Joins after an approval: the person types the confirmation code the approving
    /// device shows, which must be the one this device computed with the approver the
    /// server named to it; then the chain must hold this device with its keys, added by
    /// that approver. A new device has seen no head of the chain, so without both a server
    /// could show it a fork from before a revocation, where the revoked device (colluding)
    /// added it: the code says that the device the person approved on is the one the
    /// chain must show (docs/formats/device-link.md, version 4).
    private static func finishLink(home: DeviceHome, record: DeviceRecord, transport: any HTTPTransport,
                                   askConfirmation: (_ attempt: Int) async throws -> String?,
                                   progress: @escaping ProgressReporter) async throws -> Vault {
        guard let approver = record.linkApprover else {
            throw KeyVaultError(.linkRequestClosed, "the request was approved, but this device's home does not say which device answered it (the server called it approved before any answer), so this device cannot check who added it and does not join: link again from a new home, and revoke device \(record.device) from a device of the account if it is listed",
                                kind: .rejected)
        }
        guard let expected = record.linkConfirmation.flatMap(LinkSAS.digits) else {
            throw KeyVaultError(.linkRequestClosed, "the request was approved, but this device's home was written by an older version that keeps no confirmation code, so this device cannot check that the device you approved on added it and does not join: link again from a new home, and revoke device \(record.device) from a device of the account if it is listed",
                                kind: .rejected)
        }
        try await checkConfirmation(expected, askConfirmation)
        var record = record
        record.enrolled = true
        record.linkCode = nil
        record.linkApprover = nil
        record.linkConfirmation = nil
        let vault = Vault(home: home, record: record, transport: transport, progress: progress)
        try await vault.sync(addedBy: approver)
        _ = try await vault.masterKey()
        try await vault.saveRecord()
        return vault
    }


    /// A link request on the approving side: what was fetched before this device drew
    /// its own value (kept, never re-read from the server), then the SAS.
    public struct LinkCandidate: Sendable {
        public let code: String
        package let request: LinkRequestCreate
        /// The SAS this device computed, once `exchange` saw the new device's reveal.
        /// Not public: it stays inside the library, compared only with what the person
        /// types (an app that could read it could approve with it, a yes/no in disguise).
        package internal(set) var sas: String?
        /// The confirmation code (version 4) computed with the SAS: ``Vault/approve(_:typedSAS:)``
        /// returns it once the device is added, for the person to type on the new device.
        package internal(set) var confirmation: String?
        /// The name the new device gives itself. Until the SAS is typed it is the server's
        /// word (it relays the request, and may make one up): show it as
        /// `deviceName.printableWithoutDigits`, so that no code of the server's choosing
        /// appears where the person will read the confirmation code (device link version 4).
        public var deviceName: String { request.name }
        /// The id the new device will have (the server's word too until the SAS is typed:
        /// it may grind keys for an id that shows digits, so show it after ``Vault/approve(_:typedSAS:)``).
        public var device: DeviceID { request.device }
    }

    /// Fetches the pending link request the new device shows `code` for (it touches no
    /// state of this vault, so it does not hold it).
    public func linkCandidate(code raw: String) async throws -> LinkCandidate {
        let code = raw.uppercased().filter { !$0.isWhitespace && $0 != "-" }
        guard LinkCode.isValid(code) else {
            throw KeyVaultError(.invalidInput, "\(code.printable.debugDescription) is not a link code")
        }
        let info: LinkRequestInfo
        do {
            info = try await api.linkRequest(code)
        } catch let error as KeyVaultError where error.status == 404 {
            throw KeyVaultError(.linkRequestClosed, "there is no link request \(code)", kind: .input)
        }
        guard info.code == code, info.request.isWellFormed else {
            throw KeyVaultError(.badResponse, "the server's link request \(code) is malformed; refusing it", kind: .verification)
        }
        guard info.status == .pending, info.approverNonce == nil else {
            throw KeyVaultError(.linkRequestClosed, "link request \(code) is \(info.status == .pending ? "already being answered by another device" : info.status.rawValue)", kind: .rejected)
        }
        return LinkCandidate(code: code, request: info.request, sas: nil, confirmation: nil)
    }

    /// The link requests waiting for a device of this account to answer them (a new
    /// device shows its code; ``linkCandidate(code:)`` fetches one by that code).
    /// Those another device is already answering are left out.
    public func pendingLinkRequests() async throws -> [LinkCandidate] {
        try await api.pendingLinkRequests()
            .filter { $0.status == .pending && $0.approverNonce == nil && $0.request.isWellFormed }
            .map { LinkCandidate(code: $0.code, request: $0.request, sas: nil, confirmation: nil) }
    }

    /// Posts this device's random value r_A, waits for the new device to reveal r_N,
    /// checks r_N against the commitment fetched before r_A was drawn, and computes the
    /// SAS. A reveal that does not open the commitment refuses the request. It touches
    /// no state of this vault, so it does not hold it: while it waits for a person at
    /// the new device, other calls go on.
    public func exchange(_ candidate: LinkCandidate, pollInterval: Duration = .seconds(1)) async throws -> LinkCandidate {
        let approverNonce = SystemRandom.bytes(count: LinkCommitment.nonceByteCount)
        try await api.respondToLinkRequest(candidate.code, nonce: approverNonce)
        let deadline = Int64(Date().timeIntervalSince1970) + 15 * 60
        while true {
            try await Task.sleep(for: pollInterval)
            let info = try await api.linkRequest(candidate.code)
            guard info.status == .pending else {
                throw KeyVaultError(.linkRequestClosed, "link request \(candidate.code) is \(info.status.rawValue)", kind: .rejected)
            }
            guard let reveal = info.deviceNonce else {
                guard Int64(Date().timeIntervalSince1970) <= deadline else { throw Self.linkExpired }
                progress(.waitingForNewDevice)
                continue
            }
            guard let deviceNonce = try? Hex.decode(reveal),
                  LinkCommitment.opens(account: account, request: candidate.request, nonce: deviceNonce),
                  let codes = LinkSAS.codes(account: account, code: candidate.code, approver: device,
                                            request: candidate.request, deviceNonce: deviceNonce, approverNonce: approverNonce)
            else {
                try? await api.refuseLinkRequest(candidate.code)
                throw KeyVaultError(.badReveal, "the new device's revealed value does not open the commitment it made: someone in between changed the request; it was refused and no device was added",
                                  kind: .verification)
            }
            var done = candidate
            (done.sas, done.confirmation) = (codes.sas, codes.confirmation)
            return done
        }
    }

    /// How a typed code differs from the one this device computed, in words: one digit
    /// wrong or two neighbours swapped is most likely a typo; more is not one (the new
    /// device shows other digits: its keys may have been swapped on the way). Said only
    /// after the request is refused: the person types the digits, no attacker sees this.
    static func howCodesDiffer(typed: String?, expected: String) -> String {
        guard let typed else { return " (it is not 6 digits, most likely a typo)" }
        let pairs = Array(zip(typed, expected))
        let wrong = pairs.indices.filter { pairs[$0].0 != pairs[$0].1 }
        let swapped = wrong.count == 2 && wrong[1] == wrong[0] + 1 && pairs[wrong[0]].0 == pairs[wrong[1]].1 && pairs[wrong[1]].0 == pairs[wrong[0]].1
        if wrong.count == 1 || swapped {
            return " (\(swapped ? "two neighbouring digits are swapped" : "one digit differs"), most likely a typo)"
        }
        return " (\(wrong.count) of the 6 digits differ: that is not a typo; the new device may not be the one you think, or its keys were swapped on the way)"
    }

    /// Approves a link request when `typedSAS` (what the new device shows, as the person
    /// typed it) equals the SAS this device computed: signs `device.add` for exactly the
    /// keys in the request and seals the current master key to its box key. A mismatch
    /// refuses the request and adds nothing.
    ///
    /// Appends `device.add` (with the new device's master-key box) when the codes match;
    /// nothing on a mismatch.
    ///
    /// - Returns: the confirmation code ("ddd ddd") to show the person, who types it on
    ///   the new device: it joins only then (docs/formats/device-link.md, version 4).
    /// - Throws: `sas_mismatch` (kind `.rejected`) on a mismatch; `invalid_input` before `exchange`.
    public func approve(_ candidate: LinkCandidate, typedSAS: String) async throws -> String {
        try await exclusively {
            guard let sas = candidate.sas, let expected = LinkSAS.digits(sas), let confirmation = candidate.confirmation else {
                throw KeyVaultError(.invalidInput, "exchange values with the new device before approving it")
            }
            guard let typed = LinkSAS.digits(typedSAS), constantTimeEquals(Array(typed.utf8), Array(expected.utf8)) else {
                // Whatever the server answers the refusal, the error is this one: its words are the device's own.
                let refused = (try? await refuse(candidate)) != nil
                throw KeyVaultError(.sasMismatch, "the code typed does not match" + Self.howCodesDiffer(typed: LinkSAS.digits(typedSAS), expected: expected)
                                    + ": no device was added" + (refused ? " and the request was refused" : ", and the request ends when it expires (the server did not take its refusal)")
                                    + " (a code gets one try)")
            }
            let request = candidate.request
            let signingKey: Ed25519.PublicKey, boxKey: X25519.PublicKey
            do {
                signingKey = try Ed25519.PublicKey(rawRepresentation: Hex.decode(request.signingKey))
                boxKey = try X25519.PublicKey(rawRepresentation: Hex.decode(request.boxKey))
            } catch {
                throw KeyVaultError(.badResponse, "the link request's keys do not parse")
            }
            let fields = ChainLink.deviceFields(signingKey: signingKey, boxKey: boxKey, name: request.name)
            let newDevice = DeviceID(unchecked: fields["device"]!)
            try await write("device approve", send: { try await self.api.approveLinkRequest(candidate.code, $0) }) { state in
                let (master, g) = try await masterKey()
                let link = makeLink(.deviceAdd, fields, after: state)
                return (AppendRequest(link: link, boxes: [try box(master, generation: g, at: link.sequence, to: newDevice.rawValue, boxKey: boxKey)]), {})
            }
            return confirmation
        }
    }

    /// Refuses the request (it touches no state of this vault, so it never waits for a
    /// running `exchange`: a person can cancel while it polls).
    public func refuse(_ candidate: LinkCandidate) async throws {
        try await api.refuseLinkRequest(candidate.code)
    }
}
