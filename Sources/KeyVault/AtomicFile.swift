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

    /// Writes `bytes` to `path` through a fresh temporary file beside it (mode 0600)
    /// (``Writer``).
    package static func write(_ bytes: UnsafeRawBufferPointer, to path: String) throws(Failure) {
        let writer = try Writer(path)
        do {
            try writer.append(bytes)
            try writer.commit()
        } catch {
            writer.abort()
            throw error
        }
    }

    /// A file written in pieces, then put in place whole.
    ///
    /// The temporary name is random and opened with O_CREAT|O_EXCL|O_NOFOLLOW, so a
    /// file or symlink planted there makes the open fail instead of redirecting the
    /// write; on ``commit()`` the data is fsynced, rename() then replaces `path` itself
    /// (a symlink at `path` included) without following it, and the directory is
    /// fsynced so that the rename survives a crash. ``abort()`` (or a failure) leaves
    /// nothing behind.
    package final class Writer {
        private let path: String, temporary: String, directory: String
        private var fd: Int32

        package init(_ path: String) throws(Failure) {
            let target = URL(fileURLWithPath: path)
            directory = target.deletingLastPathComponent().path
            var temporary = "", fd: Int32 = -1
            for _ in 0..<8 {
                temporary = directory + "/." + target.lastPathComponent + "." + Hex.encode(SystemRandom.bytes(count: 8)) + ".partial"
                fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
                if fd >= 0 || errno != EEXIST { break }
            }
            guard fd >= 0 else {
                throw Failure(created: false, message: "cannot create a temporary file in \(directory) for \(path): \(String(cString: strerror(errno)))")
            }
            self.path = path
            self.temporary = temporary
            self.fd = fd
        }

        deinit { abort() }

        package func append(_ bytes: UnsafeRawBufferPointer) throws(Failure) {
            var offset = 0
            while offset < bytes.count {
                let n = Foundation.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { throw fail("write: \(String(cString: strerror(errno)))") }
                offset += n
            }
        }

        package func commit() throws(Failure) {
            guard fsync(fd) == 0 else { throw fail("fsync: \(String(cString: strerror(errno)))") }
            close(fd)
            fd = -1
            guard rename(temporary, path) == 0 else {
                let reason = String(cString: strerror(errno))
                unlink(temporary)
                throw Failure(created: true, message: "cannot write \(path): \(reason)")
            }
            let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if directoryFD >= 0 { _ = fsync(directoryFD); close(directoryFD) }
        }

        /// Removes the temporary file (nothing when it was committed).
        package func abort() {
            guard fd >= 0 else { return }
            close(fd)
            fd = -1
            unlink(temporary)
        }

        private func fail(_ reason: String) -> Failure {
            abort()
            return Failure(created: true, message: "cannot write \(path): \(reason)")
        }
    }
}
