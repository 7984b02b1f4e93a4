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
    public static func createAccount(home: DeviceHome, server: String, transport: any HTTPTransport, name: String,
                                     code: Mnemonic, parameters: Argon2id.Parameters,
                                     progress: @escaping ProgressReporter = { _ in }) async throws -> Vault {
        try home.lock()
        if home.exists {
            let existing = try? home.load()
            throw ClientError(.alreadyInitialized, "\(home.directory) already holds a device\(existing.map { " of account \($0.account)" } ?? "")",
                              hint: "use it as it is (`keyctl status`), or pick another directory with --home")
        }
        guard (1...100).contains(name.count) else { throw ClientError(.invalidInput, "a device name has 1 to 100 characters") }
        let keys = DeviceKeys()
        let genesis = ChainLink.genesis(signingKey: keys.signing, boxKey: keys.agreement.publicKey, name: name,
                                        time: Int64(Date().timeIntervalSince1970))
        let state = try ChainState(genesis: genesis)
        let master = SymmetricKey()
        var box = KeyBox(generation: 1, sequence: 0, recipient: keys.id.rawValue, box: base64Encode(try keys.agreement.publicKey.sealedBox(for: master)),
                         signer: keys.id.rawValue, signature: "")
        box.sign(with: keys.signing, account: state.account)
        let api = ServerAPI(transport: transport)
        progress("creating the account on \(server)")
        let created = try await api.createAccount(CreateAccountRequest(genesis: genesis, boxes: [box], recovery: nil))
        guard created.account == state.account, created.head == state.head else {
            throw ClientError(.wrongAccount, "the server answered with another account than the one this device made",
                              kind: .verification)
        }
        let record = DeviceRecord(server: server, account: state.account, name: name, head: state.head, sequence: 0, enrolled: true,
                                  keys: keys, masterKeys: [1: master])
        try home.save(record)
        let vault = Vault(home: home, record: record, transport: transport, progress: progress)
        vault.links = [genesis]
        vault.state = state
        do {
            try await vault.setRecoveryCode(code, parameters: parameters)
        } catch let error as ClientError {
            throw ClientError(error.code, "account \(state.account) was created and this device is in it, but setting the recovery code failed: \(error.message)",
                              hint: "the code shown does not work yet: run `keyctl recovery rotate` for a new one", kind: error.kind, status: error.status)
        }
        return vault
    }

    /// Enrolls a new device with the account's recovery code: proves the code to the
    /// server, opens the anchor, checks the chain against it, opens the master key
    /// sealed to the recovery key and adds this device with a link signed by it.
    public static func enrollWithRecoveryCode(home: DeviceHome, server: String, transport: any HTTPTransport, account: AccountID,
                                              name: String, code: Mnemonic,
                                              progress: @escaping ProgressReporter = { _ in }) async throws -> Vault {
        try prepareNewDevice(home: home, name: name)
        let api = ServerAPI(transport: transport, account: account)
        let slot = try await api.recoverySlot()
        let parameters: Argon2id.Parameters
        do {
            parameters = try Argon2id.Parameters(iterations: slot.iterations, memoryKiB: slot.memoryKiB)
        } catch let error as CryptoError {
            throw ClientError(.weakKDF, "the server's recovery slot asks for Argon2id t=\(slot.iterations), m=\(slot.memoryKiB) KiB: \(error.message); refusing to use it",
                              hint: "a server may not lower the cost of guessing your code; do not use this server", kind: .verification)
        }
        guard let salt = try? Hex.decode(slot.salt), salt.count == Argon2id.saltByteCount, let anchorEnvelope = try? Envelope(base64: slot.anchor) else {
            throw ClientError(.badResponse, "the server's recovery slot does not parse")
        }
        progress("deriving keys from the recovery code (Argon2id \(parameters))")
        let keys = try RecoveryKeys(code: code, salt: salt, parameters: parameters)
        let anchor: RecoveryAnchor
        do {
            anchor = try RecoveryAnchor.open(anchorEnvelope, with: keys, account: account)
        } catch let error as VaultError {
            throw ClientError(ClientError.Code(rawValue: error.code.rawValue), error.message,
                              hint: "check the words (`keyctl recovery verify`) and the account id; a code replaced by `keyctl recovery rotate` no longer works",
                              kind: .rejected)
        }
        progress("proving the recovery code to the server")
        let challenge = try await api.recoveryChallenge()
        let session = try await api.recoveryProof(keys.proof(for: challenge.challenge, account: account))
        let state = try verify(session.chain.links, account: account, seenHead: "", seenSequence: 0)
        guard session.chain.links.first?.hash == anchor.genesis else {
            throw ClientError(.wrongAccount, "the chain the server sent does not start at the genesis link your recovery code names",
                              hint: "the server is not trustworthy; nothing was changed", kind: .verification)
        }
        guard let recovery = state.recovery, recovery.authKey == keys.authKey.publicKey, recovery.boxKey == keys.boxKey.publicKey else {
            throw ClientError(.chainInvalid, "the account chain names another recovery code than this one", kind: .verification)
        }
        let g = state.masterGeneration
        // Sealed to this code: made at or after the link that set it (an earlier code may hold a box of the same generation).
        guard let recoveryBox = session.boxes.first(where: { $0.recipient == ChainLink.recoverySigner && $0.generation == g && $0.sequence >= recovery.set }) else {
            throw ClientError(.missingKey, "the server has no master key box of generation \(g) for the recovery code", kind: .verification)
        }
        let master = try open(recoveryBox, in: state, with: keys.boxKey)

        let device = DeviceKeys()
        var link = ChainLink(sequence: state.sequence + 1, previous: state.head, type: .deviceAdd, signer: ChainLink.recoverySigner,
                             time: Int64(Date().timeIntervalSince1970), body: device.fields(name: name))
        link.sign(with: keys.authKey)
        var box = KeyBox(generation: g, sequence: link.sequence, recipient: device.id.rawValue, box: base64Encode(try device.agreement.publicKey.sealedBox(for: master)),
                         signer: ChainLink.recoverySigner, signature: "")
        box.sign(with: keys.authKey, account: account)
        var after = state
        try after.apply(link)
        // Keep the keys before the server knows the device: a crash after enrolment must not lose them.
        var record = DeviceRecord(server: server, account: account, name: name, head: "", sequence: 0, enrolled: false, keys: device)
        try home.save(record)
        progress("adding this device to the account")
        try await api.recoveryEnroll(RecoveryEnrollRequest(token: session.token, link: link, boxes: [box]))
        record.enrolled = true
        record.head = after.head
        record.sequence = after.sequence
        record.masterKeys[g] = master
        try home.save(record)
        let vault = Vault(home: home, record: record, transport: transport, progress: progress)
        try await vault.sync()
        return vault
    }

    /// Locks the home of a device about to join, which must not hold an enrolled device already.
    static func prepareNewDevice(home: DeviceHome, name: String) throws {
        try home.lock()
        if let existing = try? home.load(), existing.enrolled {
            throw ClientError(.alreadyInitialized, "\(home.directory) already holds an enrolled device of account \(existing.account)",
                              hint: "pick another directory with --home")
        }
        guard (1...100).contains(name.count) else { throw ClientError(.invalidInput, "a device name has 1 to 100 characters") }
    }

    /// What a new device shows while it waits for approval.
    public struct LinkTicket: Sendable {
        public let code: String
        public let sas: String
        public let expires: Int64
    }

    /// Asks an existing device to add this one: posts a link request, reports its
    /// code and SAS through `started`, and waits until it is approved, refused or expired.
    public static func link(home: DeviceHome, server: String, transport: any HTTPTransport, account: AccountID, name: String,
                            pollInterval: Duration = .seconds(1), started: (LinkTicket) -> Void,
                            progress: @escaping ProgressReporter = { _ in }) async throws -> Vault {
        try prepareNewDevice(home: home, name: name)
        let device = DeviceKeys()
        var record = DeviceRecord(server: server, account: account, name: name, head: "", sequence: 0, enrolled: false, keys: device)
        try home.save(record)
        let api = ServerAPI(transport: transport, account: account, keys: device)
        let request = LinkRequestCreate(device: device.id, name: name, signingKey: Hex.encode(device.signing.publicKey.rawRepresentation),
                                        boxKey: Hex.encode(device.agreement.publicKey.rawRepresentation),
                                        nonce: Hex.encode(SystemRandom.bytes(count: 16)))
        let info = try await api.createLinkRequest(request)
        // The SAS comes from what this device sent, never from the server's echo.
        started(LinkTicket(code: info.code, sas: LinkSAS.compute(account: account, code: info.code, request: request), expires: info.expires))
        // The server says when the request expires; a server that keeps saying "pending" is not waited on for ever.
        let deadline = min(info.expires, Int64(Date().timeIntervalSince1970) + 15 * 60) + 30
        while true {
            try await Task.sleep(for: pollInterval)
            let status = try await api.linkRequestStatus(info.code)
            if status.status == .pending, Int64(Date().timeIntervalSince1970) > deadline {
                throw ClientError(.linkClosed, "the request expired before it was approved",
                                  hint: "run `keyctl device link` again and approve it within 10 minutes", kind: .rejected)
            }
            switch status.status {
            case .pending:
                let left = max(0, status.expires - Int64(Date().timeIntervalSince1970))
                progress("waiting for approval on another device (\(left / 60):\(String(format: "%02d", left % 60)) left)")
                continue
            case .refused:
                throw ClientError(.linkClosed, "the request was refused on the other device",
                                  hint: "if that was a mistake, run `keyctl device link` again", kind: .rejected)
            case .expired:
                throw ClientError(.linkClosed, "the request expired before it was approved",
                                  hint: "run `keyctl device link` again and approve it within 10 minutes", kind: .rejected)
            case .approved:
                record.enrolled = true
                try home.save(record)
                let vault = Vault(home: home, record: record, transport: transport, progress: progress)
                try await vault.sync()
                _ = try await vault.masterKey()
                return vault
            }
        }
    }

    /// A pending link request with the SAS this device computes for it.
    public struct LinkCandidate: Sendable {
        public let code: String
        public let request: LinkRequestCreate
        public let sas: String
    }

    public func linkCandidate(code raw: String) async throws -> LinkCandidate {
        let code = raw.uppercased().filter { !$0.isWhitespace && $0 != "-" }
        guard let info = try await api.pendingLinkRequests().first(where: { $0.code == code }) else {
            throw ClientError(.linkClosed, "there is no pending link request \(code)",
                              hint: "check the code the new device shows; requests expire after 10 minutes", kind: .input)
        }
        let request = info.request
        func isHex(_ text: String, _ count: Int) -> Bool { text.utf8.count == count && (try? Hex.decode(text)) != nil }
        guard (1...100).contains(request.name.count), request.name.utf8.count <= 400, isHex(request.signingKey, 64),
              isHex(request.boxKey, 64), isHex(request.nonce, 32) else {
            throw ClientError(.badResponse, "the server's link request \(code) is malformed; refusing it")
        }
        return LinkCandidate(code: code, request: request, sas: LinkSAS.compute(account: account, code: code, request: request))
    }

    /// Approves a link request: signs `device.add` for exactly the keys in it and
    /// seals the current master key to its box key.
    public func approve(_ candidate: LinkCandidate) async throws {
        let request = candidate.request
        let signingKey: Ed25519.PublicKey, boxKey: X25519.PublicKey
        do {
            signingKey = try Ed25519.PublicKey(rawRepresentation: Hex.decode(request.signingKey))
            boxKey = try X25519.PublicKey(rawRepresentation: Hex.decode(request.boxKey))
        } catch {
            throw ClientError(.badResponse, "the link request's keys do not parse")
        }
        let fields = ChainLink.deviceFields(signingKey: signingKey, boxKey: boxKey, name: request.name)
        let newDevice = DeviceID(unchecked: fields["device"]!)
        try await write("device approve", send: { try await self.api.approveLinkRequest(candidate.code, $0) }) { state in
            let (master, g) = try await masterKey()
            let link = makeLink(.deviceAdd, fields, after: state)
            return (AppendRequest(link: link, boxes: [try box(master, generation: g, at: link.sequence, to: newDevice.rawValue, boxKey: boxKey)]), {})
        }
    }

    public func refuse(_ candidate: LinkCandidate) async throws {
        try await api.refuseLinkRequest(candidate.code)
    }
}
