import Foundation
import KeyVaultCrypto

/// Where a device keeps what it remembers between runs: one document holding its
/// keys, the newest chain head it has verified and the key generations it has
/// opened (docs/formats/device-home.md).
///
/// The document is secret: it holds the device's private keys and every key
/// generation it has opened, in the clear. Keep it where secrets go (the Keychain
/// on Apple platforms, a 0600 file, memory). KeyVault writes it whole each time and reads it
/// whole; an implementation only stores bytes. ``FileDeviceStorage`` and
/// ``MemoryDeviceStorage`` come with the library; an app adds its own (for example
/// one backed by the Keychain) by conforming to this protocol.
public protocol DeviceStorage: AnyObject, Sendable {
    /// Where the device lives, for messages (a path, a Keychain item name).
    var location: String { get }
    /// The stored document, or nil when no device is stored.
    func read() throws -> [UInt8]?
    /// Replaces the stored document. A crash must leave the old document or the new one.
    func write(_ document: [UInt8]) throws
    /// Removes the document (after the account is deleted).
    func erase() throws
    /// Takes an exclusive lock on the device until ``unlock()``, so that two
    /// processes never work on one device at once. Throws when it is held elsewhere.
    func lock() throws
    /// Releases the lock.
    func unlock()
    /// A directory of this device's own (mode 0700) where an upload in chunks keeps its
    /// journal, so that one cut off resumes (``Vault/put(fileAt:member:)``); nil when
    /// the storage has none: uploads then start afresh each time.
    var transferDirectory: String? { get }
}

extension DeviceStorage {
    public func lock() throws {}
    public func unlock() {}
    public var transferDirectory: String? { nil }

    /// Whether a device is stored here. A storage that cannot be read throws: that
    /// is not "no device".
    public var holdsDevice: Bool {
        get throws { try DeviceHome(storage: self).exists }
    }
}

/// A device kept in memory only: for tests, and for previews of an app. The
/// document is wiped when it is replaced, erased, or the storage is freed. It has no
/// lock: keep one `Vault` on it at a time.
public final class MemoryDeviceStorage: DeviceStorage {
    private let document = Locked<[UInt8]?>(nil)

    public init() {}

    deinit { try? erase() }

    public var location: String { "memory" }

    public func read() throws -> [UInt8]? { document.withLock { $0 } }

    public func write(_ document: [UInt8]) throws {
        self.document.withLock { stored in
            if stored != nil { secureWipe(&stored!) }
            stored = document
        }
    }

    public func erase() throws {
        document.withLock { stored in
            if stored != nil { secureWipe(&stored!) }
            stored = nil
        }
    }
}

/// A device kept in a directory (what `keyctl` uses): the directory is created 0700,
/// the file `device.json` in it 0600, written atomically (temporary file, fsync,
/// rename, fsync of the directory), and one process at a time holds its `lock` file.
public final class FileDeviceStorage: DeviceStorage {
    /// The directory the device lives in.
    public let directory: String
    private let lockDescriptor = Locked<Int32>(-1)

    public init(directory: String) {
        self.directory = directory
    }

    deinit {
        let fd = lockDescriptor.withLock { $0 }
        if fd >= 0 { close(fd) }
    }

    public var location: String { directory }
    var file: String { directory + "/device.json" }
    /// `transfers` in the device's directory.
    public var transferDirectory: String? { directory + "/transfers" }

    public func read() throws -> [UInt8]? {
        guard FileManager.default.fileExists(atPath: file) else { return nil }
        guard let data = FileManager.default.contents(atPath: file) else {
            throw storageError("cannot read \(file)")
        }
        return [UInt8](data)
    }

    public func lock() throws {
        // One Vault per storage: a second lock through the same instance would share the
        // first one's lock, and its release would release the first one's.
        guard lockDescriptor.withLock({ $0 }) < 0 else {
            throw KeyVaultError(.deviceBusy, "the device in \(directory) is already open in this process")
        }
        try ensureDirectory()
        let fd = open(directory + "/lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw storageError("cannot open the lock file in \(directory): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw KeyVaultError(.deviceBusy, "another process is using the device in \(directory)")
        }
        lockDescriptor.withLock { $0 = fd }
    }

    public func unlock() {
        let fd = lockDescriptor.withLock { fd in defer { fd = -1 }; return fd }
        if fd >= 0 { close(fd) }
    }

    public func erase() throws {
        unlink(file)
        unlink(file + ".tmp")
    }

    func ensureDirectory() throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw storageError("\(directory) exists and is not a directory") }
            return
        }
        guard mkdir(directory, 0o700) == 0 else {
            throw storageError("cannot create the device directory \(directory): \(String(cString: strerror(errno)))")
        }
    }

    func storageError(_ message: String) -> KeyVaultError {
        KeyVaultError(.home, message)
    }

    public func write(_ bytes: [UInt8]) throws {
        try ensureDirectory()
        do {
            try bytes.withUnsafeBytes { try AtomicFile.write($0, to: file) }
        } catch let error as AtomicFile.Failure {
            throw storageError(error.message)
        }
    }
}

/// A device storage whose document is sealed under a 32-byte key the app supplies,
/// for example one kept in the platform keychain apart from where the document lies
/// (docs/formats/device-home.md, "Sealed"): an envelope (docs/formats/envelope.md),
/// XChaCha20-Poly1305, purpose `device-storage`. The storage underneath (`base`) then
/// holds only ciphertext: a copy of it opens nothing without the key.
public final class SealedDeviceStorage: DeviceStorage {
    private let base: any DeviceStorage
    private let key: SymmetricKey
    private static let context = try! EnvelopeContext(purpose: "device-storage")

    /// - Throws: `invalid_input` when `key` is not 32 bytes.
    public init(_ base: any DeviceStorage, key: [UInt8]) throws {
        guard key.count == 32, let key = try? SymmetricKey(SecureBytes(copying: key)) else {
            throw KeyVaultError(.invalidInput, "a device storage key has 32 bytes", kind: .input)
        }
        self.base = base
        self.key = key
    }

    public var location: String { base.location }
    /// The journals hold no secret (docs/api.md, "Resuming"): kept where the base keeps them.
    public var transferDirectory: String? { base.transferDirectory }

    /// - Throws: `bad_box` (kind `.verification`) when the stored document does not
    ///   open with this key: another key, or a changed document.
    public func read() throws -> [UInt8]? {
        guard let sealed = try base.read() else { return nil }
        do {
            return try Envelope(bytes: sealed).open(using: key, context: Self.context).withUnsafeBytes { Array($0) }
        } catch {
            throw KeyVaultError(.badBox, "the device stored at \(location) does not open with the key given (another key, or a changed document)",
                                kind: .verification)
        }
    }

    public func write(_ document: [UInt8]) throws {
        try base.write(try Envelope.seal(document, under: key, generation: 1, context: Self.context).bytes)
    }

    public func erase() throws { try base.erase() }
    public func lock() throws { try base.lock() }
    public func unlock() { base.unlock() }
}
