import Foundation
import KeyVaultCrypto
import KeyVaultMnemonic
import KeyVaultModel
import KeyVaultProtocol

// The names an app uses, from the modules below this one. Nothing here reaches a
// key's bytes: keys stay inside `Vault`, which verifies and uses them.

/// An account: 32 lowercase hex digits, the hash of its first chain link.
public typealias AccountID = KeyVaultModel.AccountID
/// A device of an account: 32 lowercase hex digits derived from its signing key.
public typealias DeviceID = KeyVaultModel.DeviceID
/// A family member (a person whose records are kept apart from the others').
public typealias MemberID = KeyVaultModel.MemberID
/// Where an attachment lives: a keyed hash of its plaintext under the member's key,
/// so the same file for the same member is stored once and the server learns nothing
/// from the address.
public typealias ContentAddress = KeyVaultCrypto.ContentAddress
/// Bytes wiped from memory when freed (an opened attachment).
public typealias SecureBytes = KeyVaultCrypto.SecureBytes

extension Vault {
    /// A device as the verified account chain records it: its name, the links that
    /// added it (and by whom) and revoked it. Its keys stay inside the library.
    public struct Device: Sendable, Equatable, Identifiable {
        public let id: DeviceID
        public let name: String
        /// The chain link that added it.
        public let added: UInt64
        /// The chain link that revoked it; nil while it is active.
        public let revoked: UInt64?
        /// The device that added it (for one the recovery code added, the device that set
        /// that code); nil for the account's first device.
        public let addedBy: DeviceID?
        public var isActive: Bool { revoked == nil }

        package init(_ device: ChainState.Device) {
            id = device.id
            name = device.name
            added = device.added
            revoked = device.revoked
            addedBy = device.addedBy
        }
    }

    // MARK: Starting

    /// URLSession, refusing plain HTTP off this machine and reading no answer past its limit.
    /// A transport an app gives instead must do both itself (``HTTPTransport``).
    static func defaultTransport(_ server: URL) -> any HTTPTransport { URLSessionTransport(baseURL: server) }

    /// Creates an account whose first device is this one, sets `recoveryCode` as the
    /// account's recovery code, and keeps the device in `storage`.
    ///
    /// Appends the genesis link (the new account's chain), then `recovery.set`.
    ///
    /// - Parameters:
    ///   - server: the KeyVault service (`https://…`; plain `http://` only to this machine).
    ///   - deviceName: how the other devices see this one (1 to 100 characters).
    ///   - recoveryCode: a new code (`RecoveryCode.generate()`);
    ///     show it to the person once and make sure they wrote it down.
    ///   - storage: where the device keeps its keys; it must hold no device yet.
    ///   - transport: how to reach `server` (default: `URLSession`).
    ///   - invite: the server's invite token, for a server that takes new accounts by
    ///     invitation only (its operator gives it); ask ``checkServer(_:invite:transport:)``
    ///     first, before the code is shown.
    ///   - parameters: what guessing the code costs (default `.recovery`).
    ///   - passphrase: seals the device's secrets in `storage` under this passphrase
    ///     (Argon2id; docs/formats/device-home.md); ``open(storage:offline:passphrase:progress:transportFor:)``
    ///     then needs it. At least 8 bytes.
    ///   - progress: a line for each long step (key derivation, the server round trips).
    /// - Throws: ``KeyVaultError`` `already_initialized` when `storage` holds a
    ///   device; `wrong_account` when the server answers for another account.
    public static func create(server: URL, deviceName: String, recoveryCode: RecoveryCode, storage: any DeviceStorage,
                              transport: (any HTTPTransport)? = nil, invite: String? = nil, parameters: RecoveryCost = .recovery,
                              passphrase: SecureBytes? = nil,
                              progress: @escaping ProgressReporter = { _ in }) async throws -> Vault {
        try await createAccount(home: try await home(storage, sealedUnder: passphrase), server: server.absoluteString,
                                transport: transport ?? defaultTransport(server), invite: invite, name: deviceName,
                                code: recoveryCode.mnemonic, parameters: parameters.parameters, progress: progress)
    }

    /// Adds this device to `account` with the account's recovery code, and keeps it
    /// in `storage`. The server proves nothing it could fake: the code opens the
    /// account's anchor, which names the chain's first link; the chain is replayed
    /// from there.
    ///
    /// Appends `device.add` for this device, signed with the recovery key.
    ///
    /// `passphrase` seals the new device's secrets as ``create(server:deviceName:recoveryCode:storage:transport:parameters:passphrase:progress:)``
    /// does; `askPassphrase` is asked for the passphrase of a sealed device this call
    /// resumes (one whose enrollment was cut off), as `open`'s `passphrase` is (it must
    /// not wait for a Swift task to finish).
    ///
    /// - Throws: ``KeyVaultError`` `wrong_recovery_code` when the code does not open
    ///   the account's anchor; a `verification` kind error when the server's data
    ///   does not match what the code names.
    public static func enroll(server: URL, account: AccountID, deviceName: String, recoveryCode: RecoveryCode,
                              storage: any DeviceStorage, transport: (any HTTPTransport)? = nil, passphrase: SecureBytes? = nil,
                              askPassphrase: (@Sendable () throws -> SecureBytes)? = nil,
                              progress: @escaping ProgressReporter = { _ in }) async throws -> Vault {
        try await enrollWithRecoveryCode(home: try await home(storage, sealedUnder: passphrase, asking: askPassphrase), server: server.absoluteString,
                                         transport: transport ?? defaultTransport(server), account: account,
                                         name: deviceName, code: recoveryCode.mnemonic, progress: progress)
    }

    /// Asks a device of `account` to add this one (docs/formats/device-link.md), and
    /// returns once it has. `events` reports the code to show (``LinkEvent/requested(code:expires:)``)
    /// and then the six digits the person types on the approving device
    /// (``LinkEvent/sas(_:)``). Once that device approved, `askConfirmation` is asked
    /// (attempt 1 to ``confirmationAttempts``) for the six digits it shows then (what
    /// ``approve(_:typedSAS:)`` returned there), as the person types them here; the
    /// device joins only when they are the ones it computed, so that the device the
    /// person approved on is the one that added it. Return nil to stop: running `link`
    /// again in the same storage asks again.
    ///
    /// Appends nothing itself: the approving device appends `device.add`
    /// (``approve(_:typedSAS:)``).
    ///
    /// `passphrase` and `askPassphrase` are as in ``enroll(server:account:deviceName:recoveryCode:storage:transport:passphrase:askPassphrase:progress:)``:
    /// running it again in the same storage finishes a request approved meanwhile.
    ///
    /// - Throws: ``KeyVaultError`` `link_request_closed` when the request is refused
    ///   or expires.
    public static func link(server: URL, account: AccountID, deviceName: String, storage: any DeviceStorage,
                            transport: (any HTTPTransport)? = nil, passphrase: SecureBytes? = nil,
                            askPassphrase: (@Sendable () throws -> SecureBytes)? = nil, pollInterval: Duration = .seconds(1),
                            events: (LinkEvent) -> Void, askConfirmation: (_ attempt: Int) async throws -> String?,
                            progress: @escaping ProgressReporter = { _ in }) async throws -> Vault {
        try await link(home: try await home(storage, sealedUnder: passphrase, asking: askPassphrase), server: server.absoluteString,
                       transport: transport ?? defaultTransport(server), account: account, name: deviceName,
                       pollInterval: pollInterval, events: events, askConfirmation: askConfirmation, progress: progress)
    }

    /// Opens the device kept in `storage` and verifies the account chain against the
    /// newest head this device has seen (a server that rolls back or forks the chain
    /// is refused).
    ///
    /// `offline` opens it without the server, from the copy of the chain this device
    /// kept when it last verified one: what it has cached (members and their names,
    /// devices, contacts, grants, status, content addresses) reads as it was then.
    /// Calls that need the server still try it; call ``sync()`` when it is reachable.
    ///
    /// - Throws: ``KeyVaultError`` `not_initialized` when `storage` holds no device;
    ///   `device_revoked` when this device was revoked; offline, `invalid_input` when
    ///   the device keeps no copy of the chain yet.
    public static func open(storage: any DeviceStorage, transport: (any HTTPTransport)? = nil, offline: Bool = false,
                            progress: @escaping ProgressReporter = { _ in }) async throws -> Vault {
        try await open(storage: storage, offline: offline, progress: progress, transportFor: { server in transport ?? defaultTransport(server) })
    }

    /// Opens the device kept in `storage` as ``open(storage:transport:offline:progress:)``
    /// does, with a transport made for the server the device is stored with (a
    /// command line's, say, which trusts a private CA), and a passphrase asked for
    /// only when the device's secrets are sealed under one.
    ///
    /// - Parameters:
    ///   - passphrase: called when `storage` is sealed under a passphrase (a prompt);
    ///     nil: such a device is refused with `passphrase_required`. It is called, and
    ///     `storage` read, on a thread of their own (as the key is derived), not on
    ///     the caller's executor; where the system can start no thread, on one of
    ///     Swift's shared threads. So it must not wait for a Swift task to finish.
    ///   - transportFor: the transport for the stored server's URL.
    /// - Throws: as ``open(storage:transport:offline:progress:)``; `wrong_passphrase`
    ///   when the passphrase does not open the secrets.
    public static func open(storage: any DeviceStorage, offline: Bool = false,
                            passphrase: (@Sendable () throws -> SecureBytes)? = nil,
                            progress: @escaping ProgressReporter = { _ in },
                            transportFor transport: (URL) throws -> any HTTPTransport) async throws -> Vault {
        let home = DeviceHome(storage: storage)
        home.passphraseProvider = passphrase
        return try await open(home: home, transport: { server in
            guard let url = URL(string: server) else { throw KeyVaultError(.homeDamaged, "the stored server \(server.printable) is not a URL") }
            return try transport(url)
        }, offline: offline, progress: progress)
    }

    /// Whether the server at `server` answers as a KeyVault service and takes a new
    /// account with `invite` (or without one): an app asks before it shows a new
    /// recovery code for an account it cannot create there.
    ///
    /// - Throws: ``KeyVaultError`` of kind `network` when nothing answers;
    ///   `invite_required` when the server takes new accounts by invitation and
    ///   `invite` is not its token; the server's refusal otherwise.
    public static func checkServer(_ server: URL, invite: String? = nil, transport: (any HTTPTransport)? = nil) async throws {
        let api = ServerAPI(transport: transport ?? defaultTransport(server))
        try await api.health()
        try await api.checkInvite(invite)
    }

    /// The fewest bytes (UTF-8) a passphrase that seals a device may have.
    public static let minimumPassphraseBytes = 8

    /// The home of a new device, its secrets sealed under `passphrase` when one is
    /// given (its key derived now, on a thread of its own); `asking` is asked for the
    /// passphrase of a sealed one this call resumes.
    package static func home(_ storage: any DeviceStorage, sealedUnder passphrase: SecureBytes?,
                             asking: (@Sendable () throws -> SecureBytes)? = nil) async throws -> DeviceHome {
        let home = DeviceHome(storage: storage)
        home.passphraseProvider = asking
        if let passphrase {
            guard passphrase.count >= minimumPassphraseBytes else {
                throw KeyVaultError(.invalidInput, "a passphrase has at least \(minimumPassphraseBytes) bytes")
            }
            home.seal(under: try await DeviceHome.NewSealing.derive(passphrase))
        }
        return home
    }

    /// Seals this device's keys under `passphrase` (at least ``minimumPassphraseBytes``),
    /// replacing the one they are sealed under; nil stores them unsealed. Local to this
    /// device: nothing reaches the server, and no other device's passphrase changes.
    /// The key is derived (Argon2id) on a thread of its own, not on the caller's executor.
    public func setPassphrase(_ passphrase: SecureBytes?) async throws {
        if let passphrase, passphrase.count < Self.minimumPassphraseBytes {
            throw KeyVaultError(.invalidInput, "a passphrase has at least \(Self.minimumPassphraseBytes) bytes", kind: .rejected)
        }
        // Derived in the vault's turn (on a thread of its own): a change made after this
        // one waits for it, and lands after it (passphraseChangesLandInTheOrderTheyWereMade).
        try await exclusively {
            var new: DeviceHome.NewSealing?
            if let passphrase { new = try await DeviceHome.NewSealing.derive(passphrase) }
            try home.save(record, sealedUnder: new)
        }
    }

    // MARK: The account at a glance

    /// What ``status()`` reports.
    public struct Status: Sendable, Equatable {
        public var account: AccountID
        public var device: DeviceID
        public var deviceName: String
        public var server: String
        /// The verified chain's length (links) and head hash.
        public var chainLength: UInt64
        public var head: String
        public var masterKeyGeneration: UInt32
        public var activeDevices: Int
        public var members: Int
        /// Every member's id and current key generation, from the chain (their names
        /// need the member keys: ``members()``).
        public var memberGenerations: [MemberID: UInt32]
        /// The recovery code's state: set (and its generation), missing, or
        /// compromised (the device that set it was revoked: set a new one).
        public var recovery: Recovery
        /// The generation of the newest recovery code set (0: none ever was).
        public var recoveryGeneration: UInt32
        /// Rotations a revocation left undone (``finishPendingRotations()`` does them).
        public var pendingRotation: PendingRotation

        public enum Recovery: Sendable, Equatable {
            case set(generation: UInt32)
            case missing
            case compromised(atLink: UInt64)
        }
    }

    /// The account as this device sees it, from the verified chain.
    public func status() throws -> Status {
        let state = try chain
        let recovery: Status.Recovery = switch state.recovery {
        case nil: .missing
        case let code? where code.compromised != nil: .compromised(atLink: code.compromised!)
        case let code?: .set(generation: code.generation)
        }
        return Status(account: account, device: device, deviceName: deviceName, server: server,
                      chainLength: state.sequence + 1, head: state.head, masterKeyGeneration: state.masterGeneration,
                      activeDevices: state.activeDevices.count, members: state.members.count,
                      memberGenerations: state.members.mapValues(\.generation),
                      recovery: recovery, recoveryGeneration: state.recovery?.generation ?? 0, pendingRotation: try pendingRotation())
    }

    /// Every device the chain knows, the active ones first.
    public func devices() throws -> [Device] {
        try chain.devices.values.map(Device.init).sorted { ($0.isActive ? 0 : 1, $0.added) < ($1.isActive ? 0 : 1, $1.added) }
    }

    /// When each device was added: the time in the link that added it, as the device
    /// (or recovery code) that signed that link wrote it. The chain is verified; the
    /// time is its signer's clock.
    public func addedTimes() throws -> [DeviceID: Date] {
        let links = self.links
        return Dictionary(try chain.devices.values.compactMap { device in
            Int(exactly: device.added).flatMap { links.indices.contains($0) ? (device.id, Date(timeIntervalSince1970: TimeInterval(links[$0].time))) : nil }
        }, uniquingKeysWith: { first, _ in first })
    }

    /// When the server last saw each device make a signed request. The server says
    /// so and nothing checks it: show it, decide nothing on it (revocation is the
    /// chain's, ``devices()``).
    public func lastSeen() async throws -> [DeviceID: Date] {
        Dictionary(try await api.devices().compactMap { info in info.lastSeen.map { (info.id, Date(timeIntervalSince1970: TimeInterval($0))) } },
                   uniquingKeysWith: { first, _ in first })
    }

    /// The contact pins and share grants in force, each with the link that made it
    /// and the device that signed it (what revoking that device would end).
    public func standing() throws -> [Standing] {
        try chain.standing.map(Standing.init)
    }

    // MARK: Attachments from memory

    /// The content address `data` gets for `member` (nothing is uploaded).
    public func address(of data: [UInt8], member: Member) async throws -> ContentAddress {
        try await exclusively {
            let keys = try await memberKeys(member.id, generation: member.generation)
            return try keys.contentAddressKey.address(of: data)
        }
    }
}
