import Foundation
import KeyVaultCrypto

/// Content read in chunks of exactly `size` bytes but the last, which it says is the
/// last (it reads one chunk ahead): a file read as it goes, or bytes in memory.
/// Holds at most two chunks.
final class ChunkReader {
    private let size: Int
    private let fd: Int32
    private let path: String
    private let bytes: [UInt8]
    private var offset = 0
    private var ahead: [UInt8]?
    private var finished = false

    init(path: String, size: Int) throws {
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw KeyVaultError(.io, "cannot open \(path): \(String(cString: strerror(errno)))") }
        self.path = path
        self.size = size
        bytes = []
    }

    init(bytes: [UInt8], size: Int) {
        fd = -1
        path = "the content"
        self.bytes = bytes
        self.size = size
    }

    deinit {
        if fd >= 0 { close(fd) }
        if var ahead { secureWipe(&ahead) }
    }

    /// The next chunk and whether it is the last; nil after the last.
    func next() throws -> (chunk: [UInt8], last: Bool)? {
        guard !finished else { return nil }
        let current = try ahead ?? fill()
        ahead = nil
        let following = current.count == size ? try fill() : []
        guard !following.isEmpty else {
            finished = true
            return (current, true)
        }
        ahead = following
        return (current, false)
    }

    /// Up to `size` bytes: fewer only at the end.
    private func fill() throws -> [UInt8] {
        guard fd >= 0 else {
            let end = min(offset + size, bytes.count)
            defer { offset = end }
            return Array(bytes[offset..<end])
        }
        var chunk = [UInt8](repeating: 0, count: size)
        var filled = 0
        while filled < size {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, size - filled) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw KeyVaultError(.io, "cannot read \(path): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            filled += n
        }
        chunk.removeLast(size - filled)
        return chunk
    }
}
