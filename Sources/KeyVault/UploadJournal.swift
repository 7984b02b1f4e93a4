import Foundation
import KeyVaultCrypto

/// What a device remembers of an upload in chunks, so that one cut off (the network,
/// a killed process, a server restart) resumes where the server's chunks end instead
/// of starting over, without ever sealing other content at an index sealed before:
/// the data key is the same on the retry, so the same index with other content would
/// repeat a nonce (docs/formats/attachment.md, "Resuming an upload").
///
/// One file per upload in the device's transfer directory, mode 0600:
///
///     {"version":2,"upload":"…","key":"<base64 key part>","chunkShift":20,"size":N}\n
///     record 0 ‖ record 1 ‖ …      (16 bytes each)
///
/// Record i is the tag of sealed chunk i (its last 16 bytes: Poly1305 under a one-time
/// key of the data key's, its index and its last flag), written once chunk i is sealed
/// and before it is sent. Sealing chunk i again gives the same tag only for the same
/// content, so a resumption seals each chunk and compares before anything leaves. The
/// key part is the server's ciphertext already (the data key wrapped for the member);
/// the records are tags (the server holds those of the chunks it was sent), and say
/// nothing about the file to anyone without the member's key. A journal of version 1
/// (HMAC records) is not resumed.
final class UploadJournal {
    struct Header: Codable, Equatable {
        var version = 2
        var upload: String
        /// The key part, base64: the wrapped data key, which opens only for this
        /// account, member and address.
        var key: String
        var chunkShift: Int
        var size: Int
    }

    static let recordBytes = StreamAEAD.tagByteCount
    /// Journals older than the server keeps unfinished uploads are of no use.
    static let maximumAge: TimeInterval = 24 * 3600

    let path: String
    let header: Header
    /// Records in the file: chunks 0 to count - 1 were sealed (and maybe sent).
    private(set) var count: Int
    /// Where record 0 begins.
    private let start: Int
    private let fd: Int32

    /// The journal's file for an upload of `address` by this account's `member`.
    static func path(in directory: String, account: AccountID, member: MemberID, address: ContentAddress) -> String {
        let name = Hex.encode(SHA256.hash(Array("\(account) \(member) \(address)".utf8)).prefix(16))
        return directory + "/" + name + ".upload"
    }

    /// Starts a journal (replacing any at `path`): the header is on disk when this returns.
    init(creating path: String, header: Header) throws {
        try Self.ensureDirectory(URL(fileURLWithPath: path).deletingLastPathComponent().path)
        unlink(path)
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.failure("cannot create the upload journal \(path)") }
        self.fd = fd
        self.path = path
        self.header = header
        count = 0
        var line = try JSONEncoder().encode(header)
        line.append(0x0A)
        start = line.count
        try line.withUnsafeBytes { try write($0) }
        try sync()
        let directory = open(URL(fileURLWithPath: path).deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 { _ = fsync(directory); close(directory) }
    }

    /// The journal at `path`, or nil when there is none or it is not one this device
    /// wrote whole (then it is removed: the upload starts afresh).
    init?(opening path: String) {
        let fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        // The header line only (a few hundred bytes); records are read one at a time.
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(),
              let head = Self.read(fd, at: 0, count: min(Int(info.st_size), Self.maximumHeaderBytes)),
              let newline = head.firstIndex(of: 0x0A),
              let header = try? JSONDecoder().decode(Header.self, from: Data(head[..<newline])), header.version == 2
        else {
            close(fd)
            unlink(path)
            return nil
        }
        start = newline + 1
        // A record cut short by a crash is not one.
        count = (Int(info.st_size) - start) / Self.recordBytes
        guard ftruncate(fd, off_t(start + count * Self.recordBytes)) == 0, lseek(fd, 0, SEEK_END) >= 0 else {
            close(fd)
            return nil
        }
        self.fd = fd
        self.path = path
        self.header = header
    }

    static let maximumHeaderBytes = 16 << 10

    /// Record `index` (below ``count``).
    func record(_ index: Int) throws -> [UInt8] {
        guard let bytes = Self.read(fd, at: start + index * Self.recordBytes, count: Self.recordBytes) else {
            throw Self.failure("cannot read the upload journal \(path)")
        }
        return bytes
    }

    deinit { close(fd) }

    /// Appends the next record and syncs it before its chunk leaves (one sync per chunk
    /// of 1 MiB): a record lost to a power cut would let a server that keeps quiet about
    /// that chunk have it sealed again from whatever the file holds then.
    func append(_ record: [UInt8]) throws {
        precondition(record.count == Self.recordBytes)
        try record.withUnsafeBytes { try write($0) }
        try sync()
        count += 1
    }

    private func sync() throws {
        guard fdatasync(fd) == 0 else { throw Self.failure("cannot sync the upload journal \(path)") }
    }

    /// `count` bytes at `position`, through the descriptor that was checked.
    private static func read(_ fd: Int32, at position: Int, count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + offset, count - offset, off_t(position + offset)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return nil }
            offset += n
        }
        return bytes
    }

    /// Removes the journal: the upload completed, or cannot be resumed.
    func remove() { unlink(path) }

    /// Removes journals older than the server keeps unfinished uploads.
    static func sweep(_ directory: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names where name.hasSuffix(".upload") {
            let path = directory + "/" + name
            if let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date,
               -modified.timeIntervalSinceNow > maximumAge {
                unlink(path)
            }
        }
    }

    private func write(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let n = Foundation.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw Self.failure("cannot write the upload journal \(path)") }
            offset += n
        }
    }

    private static func ensureDirectory(_ directory: String) throws {
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw failure("cannot create the transfer directory \(directory)")
        }
    }

    private static func failure(_ message: String) -> KeyVaultError {
        KeyVaultError(.io, message + ": " + String(cString: strerror(errno)))
    }
}
