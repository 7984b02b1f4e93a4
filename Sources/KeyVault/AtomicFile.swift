import Foundation
import KeyVaultCrypto

/// Replaces a file so that a crash leaves the old content or the new, never a mix,
/// and no planted file or symlink can redirect the write.
package enum AtomicFile {
    package struct Failure: Error {
        /// False when not even the temporary file could be made (a missing or read-only directory).
        package let created: Bool
        package let message: String
    }

    /// Writes `bytes` to `path` through a fresh temporary file beside it (mode 0600).
    ///
    /// The temporary name is random and opened with O_CREAT|O_EXCL|O_NOFOLLOW, so a
    /// file or symlink planted there makes the open fail instead of redirecting the
    /// write; the data is fsynced, rename() then replaces `path` itself (a symlink at
    /// `path` included) without following it, and the directory is fsynced so that
    /// the rename survives a crash. On failure nothing is left behind.
    package static func write(_ bytes: UnsafeRawBufferPointer, to path: String) throws(Failure) {
        let target = URL(fileURLWithPath: path)
        let directory = target.deletingLastPathComponent().path
        var temporary = "", fd: Int32 = -1
        for _ in 0..<8 {
            temporary = directory + "/." + target.lastPathComponent + "." + Hex.encode(SystemRandom.bytes(count: 8)) + ".partial"
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd >= 0 || errno != EEXIST { break }
        }
        guard fd >= 0 else {
            throw Failure(created: false, message: "cannot create a temporary file in \(directory) for \(path): \(String(cString: strerror(errno)))")
        }
        var offset = 0
        while offset < bytes.count {
            let n = Foundation.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            offset += n
        }
        var failure: String?
        if offset != bytes.count { failure = "write: \(String(cString: strerror(errno)))" }
        else if fsync(fd) != 0 { failure = "fsync: \(String(cString: strerror(errno)))" }
        close(fd)
        if failure == nil, rename(temporary, path) != 0 { failure = String(cString: strerror(errno)) }
        if let failure {
            unlink(temporary)
            throw Failure(created: true, message: "cannot write \(path): \(failure)")
        }
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 { _ = fsync(directoryFD); close(directoryFD) }
    }
}
