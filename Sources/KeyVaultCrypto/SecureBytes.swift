import Foundation

/// Bytes that may be read as a contiguous buffer: `[UInt8]`, `ArraySlice<UInt8>`,
/// ``SecureBytes`` and the key types.
public protocol RawBytes {
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}

extension Array: RawBytes where Element == UInt8 {}
extension ArraySlice: RawBytes where Element == UInt8 {}
extension UnsafeRawBufferPointer: RawBytes {
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try body(self) }
}

/// Guarded memory for one secret: locked against swapping where the system allows,
/// wiped when freed. Secrets of up to 64 bytes (keys, seeds, entropy) share slabs
/// from ``SecureArena``; larger ones get their own `sodium_malloc` region with
/// guard pages. `sodium_malloc` costs several system calls and at least three
/// pages per call, which made every 32-byte key cost tens of microseconds.
final class SecureStorage: @unchecked Sendable {
    // Immutable after `init` returns, hence safe to share across threads.
    let pointer: UnsafeMutableRawPointer
    let count: Int
    private let pooled: Bool

    /// - Throws: `backend_failure` when the guarded memory cannot be had. Sizes can
    ///   come from a server (an envelope, a sealed box), so this is an error the
    ///   caller reports, never a crash; nor does it fall back to ordinary
    ///   (swappable, unwiped) memory.
    init(count: Int, initialize: (UnsafeMutableRawBufferPointer) throws -> Void) throws {
        pooled = count <= SecureArena.slotSize
        guard let pointer = pooled ? SecureArena.shared.allocate() : Sodium.secureAllocate(count) else {
            throw CryptoError(.backendFailure, "guarded memory allocation failed for \(count) bytes")
        }
        self.pointer = pointer
        self.count = count
        // If this throws, every stored property is already set, so Swift runs
        // `deinit`, which wipes and frees the memory: no cleanup here.
        try initialize(UnsafeMutableRawBufferPointer(start: pointer, count: count))
    }

    deinit {
        if pooled {
            SecureArena.shared.release(pointer)  // wipes the slot
        } else {
            Sodium.secureFree(pointer)  // wipes before unmapping
        }
    }

    var buffer: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: pointer, count: count) }
}

/// Guarded memory that one owner writes again and again, as a stream's chunks are
/// opened in turn: locked and wiped as ``SecureBytes`` is, but taken once. A region
/// for each 1 MiB chunk cost its mapping, locking and the first touch of every page:
/// 300,000 page faults and about a second of CPU for a 1 GiB download (BENCHMARKS.md,
/// "One region for a download's chunks").
package struct SecureScratch: ~Copyable {
    private let storage: SecureStorage

    /// - Throws: `invalid_parameter` for a negative count; `backend_failure` when the
    ///   guarded memory cannot be had.
    package init(count: Int) throws {
        guard count >= 0 else { throw CryptoError(.invalidParameter, "a negative byte count (\(count))") }
        storage = try SecureStorage(count: count) { _ in }
    }

    package var count: Int { storage.count }

    /// Lets `fill` write the first `count` bytes, then lends them to `body`, and wipes
    /// them after, whatever either throws.
    ///
    /// - Throws: `invalid_parameter` for more than the scratch holds; whatever `fill` or `body` throws.
    package mutating func withWritten<R>(_ count: Int, _ fill: (UnsafeMutableRawBufferPointer) throws -> Void,
                                         _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        guard (0...storage.count).contains(count) else {
            throw CryptoError(.invalidParameter, "\(count) bytes for a scratch of \(storage.count)")
        }
        let region = UnsafeMutableRawBufferPointer(start: storage.pointer, count: count)
        defer { Sodium.wipe(region) }
        try fill(region)
        return try body(UnsafeRawBufferPointer(region))
    }
}

/// Fixed 64-byte slots carved from 64 KiB `sodium_malloc` slabs (guard pages around
/// each slab, locked memory). A released slot is wiped before it is reused. Slabs
/// are kept for the life of the process, so memory is bounded by peak use.
final class SecureArena: @unchecked Sendable {
    static let shared = SecureArena()
    static let slotSize = 64
    private static let slotsPerSlab = 1024

    private let lock = NSLock()  // guards `free`
    private var free: [UnsafeMutableRawPointer] = []

    func allocate() -> UnsafeMutableRawPointer? {
        lock.lock()
        defer { lock.unlock() }
        if free.isEmpty {
            guard let slab = Sodium.secureAllocate(Self.slotSize * Self.slotsPerSlab) else { return nil }
            free.reserveCapacity(free.count + Self.slotsPerSlab)
            for i in (0..<Self.slotsPerSlab).reversed() { free.append(slab + i * Self.slotSize) }
        }
        return free.removeLast()
    }

    func release(_ slot: UnsafeMutableRawPointer) {
        Sodium.wipe(UnsafeMutableRawBufferPointer(start: slot, count: Self.slotSize))
        lock.lock()
        free.append(slot)
        lock.unlock()
    }
}

/// Secret bytes in guarded memory, wiped when the last copy goes away.
///
/// `==` runs in constant time. Printing, dumping or reflecting a value shows
/// only its length. It is neither `Codable` nor `Hashable`, on purpose.
public struct SecureBytes: RawBytes, Sendable, Equatable, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    let storage: SecureStorage

    /// Allocates `count` bytes and lets `initialize` fill them.
    ///
    /// - Throws: `invalid_parameter` for a negative count; `backend_failure` when the
    ///   guarded memory cannot be had; whatever `initialize` throws.
    public init(count: Int, initialize: (UnsafeMutableRawBufferPointer) throws -> Void) throws {
        guard count >= 0 else { throw CryptoError(.invalidParameter, "a negative byte count (\(count))") }
        storage = try SecureStorage(count: count, initialize: initialize)
    }

    /// For the initialisers below, whose sizes the calling code chooses (a key, a
    /// passphrase typed here), never a server.
    private init(localCount count: Int, initialize: (UnsafeMutableRawBufferPointer) -> Void) {
        do {
            try self.init(count: count, initialize: initialize)
        } catch {
            // Not even a key's worth of guarded memory: nothing safe is left to do.
            fatalError("guarded memory allocation failed for \(count) bytes")
        }
    }

    /// `count` bytes from the system CSPRNG.
    ///
    /// - Important: for sizes the caller chooses (keys, seeds); it stops the process
    ///   when guarded memory cannot be had. Use ``init(count:initialize:)`` for sizes
    ///   that come from outside.
    public init(randomCount count: Int) {
        self.init(localCount: count) { Sodium.randomFill($0) }
    }

    /// Copies `source` into guarded memory and wipes `source`.
    ///
    /// - Important: for local data (a typed passphrase, a key read from this
    ///   device's file); it stops the process when guarded memory cannot be had.
    public init(wiping source: inout [UInt8]) {
        self.init(localCount: source.count) { destination in
            source.withUnsafeBytes { destination.copyMemory(from: $0) }
        }
        source.withUnsafeMutableBytes { Sodium.wipe($0) }
    }

    /// Copies bytes that are not themselves secret-bearing storage (for example a
    /// buffer the caller wipes afterwards).
    ///
    /// - Important: for local data, as ``init(wiping:)``.
    public init(copying source: some RawBytes) {
        let count = source.withUnsafeBytes { $0.count }
        self.init(localCount: count) { destination in
            source.withUnsafeBytes { destination.copyMemory(from: $0) }
        }
    }

    public var count: Int { storage.count }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(storage.buffer)
    }

    /// Constant-time comparison; values of different lengths are unequal.
    public static func == (lhs: SecureBytes, rhs: SecureBytes) -> Bool {
        Sodium.constantTimeEqual(lhs.storage.buffer, rhs.storage.buffer)
    }

    /// A copy of the bytes in ordinary memory.
    ///
    /// - Important: the copy is not wiped for you. Use it only to hand the bytes to
    ///   something that needs them outside guarded memory (output the user asked for).
    public func unprotectedCopy() -> [UInt8] { Array(storage.buffer) }

    public var description: String { "SecureBytes(\(count) bytes, redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["count": count], displayStyle: .struct) }
}

/// Constant-time comparison of two byte strings (for tags, MACs and addresses).
package func constantTimeEquals(_ lhs: some RawBytes, _ rhs: some RawBytes) -> Bool {
    lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in Sodium.constantTimeEqual(a, b) } }
}

/// Overwrites an array of plain values (bytes, word indices) with zeros in a way
/// the optimiser does not remove.
package func secureWipe<T: BitwiseCopyable>(_ values: inout [T]) {
    values.withUnsafeMutableBytes { Sodium.wipe($0) }
}

/// Overwrites a buffer with zeros in a way the optimiser does not remove.
package func secureWipe(_ buffer: UnsafeMutableRawBufferPointer) {
    Sodium.wipe(buffer)
}

extension SecureBytes {
    /// Overwrites `bytes` with zeros in a way the optimiser does not remove: for a
    /// secret an app had to hold in an ordinary array (a typed passphrase, say).
    public static func wipe(_ bytes: inout [UInt8]) { secureWipe(&bytes) }
}
