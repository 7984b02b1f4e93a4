import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The key that content addresses are computed under: HKDF-SHA256 of a member
/// key with its own label, so addresses reveal nothing about the member key and
/// the server cannot compute one for content it guesses. docs/formats/content-address.md.
package struct ContentAddressKey: Sendable {
    static let info = Array("keyvault/v1/content-address".utf8)

    let key: SymmetricKey
    /// The member key generation this key (and every address it makes) belongs to.
    package let generation: UInt32

    /// Derives the content-address key of one member key generation.
    package init(memberKey: SymmetricKey, generation: UInt32) throws {
        key = try HKDF.deriveKey(from: memberKey, info: Self.info)
        self.generation = generation
    }

    /// The address of bytes in memory.
    package func address(of content: some RawBytes) throws -> ContentAddress {
        var hasher = try ContentAddressHasher(key: self)
        try hasher.update(content)
        return try hasher.finalize()
    }

    /// The address of a file, read in 1 MiB chunks: memory stays flat for any size.
    ///
    /// - Parameter progress: called after each chunk with the bytes read so far.
    /// - Throws: `io` when the file cannot be opened or read.
    package func address(ofFileAt path: String, progress: ((UInt64) -> Void)? = nil) throws -> ContentAddress {
        var hasher = try ContentAddressHasher(key: self)
        try forEachChunk(ofFileAt: path) { chunk, total in
            try hasher.update(chunk)
            progress?(total)
        }
        return try hasher.finalize()
    }
}

/// Calls `body` with successive chunks of a file (at most `chunkSize` bytes each)
/// and the bytes read so far; memory stays flat for any file size.
///
/// Files over 4 MiB are read ahead by a second thread into three rotating
/// buffers, so that copying out of the page cache (about a tenth of
/// HMAC-SHA256's time) overlaps with `body` instead of adding to it.
///
/// - Throws: `io` with the path and the system's reason, or what `body` throws.
package func forEachChunk(ofFileAt path: String, chunkSize: Int = 1 << 20,
                         _ body: (UnsafeRawBufferPointer, UInt64) throws -> Void) throws {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw ioError("cannot open", path) }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw ioError("cannot stat", path) }
    if info.st_mode & S_IFMT == S_IFREG, info.st_size > 4 << 20 {
        try ReadAhead(fd: fd, path: path, chunkSize: chunkSize).run(body)
        return
    }
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 64)
    defer { buffer.deallocate() }
    var total: UInt64 = 0
    while true {
        let n = try readSome(fd, into: buffer, path: path)
        if n == 0 { return }
        total += UInt64(n)
        try body(UnsafeRawBufferPointer(rebasing: buffer[..<n]), total)
    }
}

private func readSome(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, path: String) throws -> Int {
    while true {
        let n = read(fd, buffer.baseAddress, buffer.count)
        if n >= 0 { return n }
        if errno != EINTR { throw ioError("cannot read", path) }
    }
}

/// A reader thread and the caller pass three buffers around a ring: `filled`
/// counts buffers ready to consume, `emptied` buffers ready to fill. The
/// semaphores order every access to a buffer and its slot in `results`.
private final class ReadAhead: @unchecked Sendable {
    private static let depth = 3
    private let fd: Int32
    private let path: String
    private let buffers: [UnsafeMutableRawBufferPointer]
    // Raw memory, not an Array: two threads touch different slots, and an Array's
    // copy-on-write check could copy its storage under the other thread.
    private let results: UnsafeMutablePointer<Result<Int, CryptoError>>
    // Set by the caller, read by the reader: the reader may be between a wait and
    // this check when the caller stops, so the flag has a lock of its own.
    private let stopLock = NSLock()
    private var stoppedFlag = false
    private var stopped: Bool {
        get { stopLock.withLock { stoppedFlag } }
        set { stopLock.withLock { stoppedFlag = newValue } }
    }
    private let filled = DispatchSemaphore(value: 0)
    // Starts at 0 and is signalled up to `depth` in init: libdispatch traps when a
    // semaphore is freed with a value below the one it was created with.
    private let emptied = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init(fd: Int32, path: String, chunkSize: Int) {
        self.fd = fd
        self.path = path
        buffers = (0..<Self.depth).map { _ in .allocate(byteCount: chunkSize, alignment: 64) }
        results = .allocate(capacity: Self.depth)
        results.initialize(repeating: .success(0), count: Self.depth)
        for _ in 0..<Self.depth { emptied.signal() }
    }

    deinit {
        buffers.forEach { $0.deallocate() }
        results.deinitialize(count: Self.depth)
        results.deallocate()
    }

    func run(_ body: (UnsafeRawBufferPointer, UInt64) throws -> Void) throws {
        let thread = Thread { [self] in produce() }
        thread.name = "keyvault-read-ahead"
        thread.start()
        defer {
            // Stop the reader and wait for it before the buffers can go away.
            stopped = true
            emptied.signal()
            finished.wait()
        }
        var total: UInt64 = 0
        var slot = 0
        while true {
            filled.wait()
            let n = try results[slot].get()
            if n == 0 { return }
            total += UInt64(n)
            try body(UnsafeRawBufferPointer(rebasing: buffers[slot][..<n]), total)
            emptied.signal()
            slot = (slot + 1) % Self.depth
        }
    }

    private func produce() {
        defer { finished.signal() }
        var slot = 0
        while true {
            emptied.wait()
            if stopped { return }
            do {
                let n = try readSome(fd, into: buffers[slot], path: path)
                results[slot] = .success(n)
                filled.signal()
                if n == 0 { return }
            } catch let error as CryptoError {
                results[slot] = .failure(error)
                filled.signal()
                return
            } catch {
                results[slot] = .failure(CryptoError(.io, "cannot read \(path): \(error)"))
                filled.signal()
                return
            }
            slot = (slot + 1) % Self.depth
        }
    }
}

private func ioError(_ what: String, _ path: String) -> CryptoError {
    CryptoError(.io, "\(what) \(path): \(String(cString: strerror(errno)))")
}

/// Streaming computation of one content address.
package struct ContentAddressHasher: ~Copyable {
    private var mac: HMACSHA256
    private let generation: UInt32

    package init(key: ContentAddressKey) throws {
        mac = try HMACSHA256(key: key.key)
        generation = key.generation
    }

    package mutating func update(_ data: some RawBytes) throws { try mac.update(data) }
    package mutating func update(_ data: UnsafeRawBufferPointer) throws { try mac.update(data) }

    package consuming func finalize() throws -> ContentAddress {
        ContentAddress(generation: generation, mac: try mac.finalize())
    }
}

/// A keyed content address: `ca1.<generation>.<64 lowercase hex digits>`.
///
/// The generation names the member key generation that made it, so lookups keep
/// working after rotation. It is safe to put in a URL path.
public struct ContentAddress: Sendable, Hashable, Codable, CustomStringConvertible, LosslessStringConvertible {
    public static let prefix = "ca1"
    public let generation: UInt32
    /// HMAC-SHA256(content-address key, content).
    public let mac: [UInt8]

    init(generation: UInt32, mac: [UInt8]) {
        self.generation = generation
        self.mac = mac
    }

    /// Parses `ca1.<generation>.<hex>`; `nil` for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == Self.prefix,
              !parts[1].isEmpty, parts[1].count <= 10, parts[1].allSatisfy({ $0.isASCII && $0.isNumber }),
              !(parts[1].count > 1 && parts[1].hasPrefix("0")),
              let generation = UInt32(parts[1]),
              parts[2].count == 64, parts[2].utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }),
              let mac = try? Hex.decode(parts[2])
        else { return nil }
        self.init(generation: generation, mac: mac)
    }

    /// Parses, throwing `malformed` with the expected shape.
    package init(parsing text: String) throws {
        guard let address = ContentAddress(text) else {
            throw CryptoError(.malformed, "not a content address: expected ca1.<generation>.<64 lowercase hex digits>")
        }
        self = address
    }

    public var description: String { "\(Self.prefix).\(generation).\(Hex.encode(mac))" }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        try self.init(parsing: text)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
