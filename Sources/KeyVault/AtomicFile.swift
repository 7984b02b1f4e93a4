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
    /// write (``init(resumable:tag:)`` instead names it for the target and the content,
    /// to go on in it after a cut: see there); on ``commit()`` the data is fsynced,
    /// rename() then replaces `path` itself (a symlink at `path` included) without
    /// following it, and the directory is fsynced so that the rename survives a crash.
    /// ``abort()`` (or a failure) leaves nothing behind; ``leaveForResumption()`` leaves
    /// a resumable one for the next try.
    package final class Writer {
        private let path: String, temporary: String, directory: String
        private var fd: Int32

        package convenience init(_ path: String) throws(Failure) {
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
            self.init(path: path, temporary: temporary, directory: directory, fd: fd, existingLength: 0, resumable: false)
        }

        private init(path: String, temporary: String, directory: String, fd: Int32, existingLength: Int, resumable: Bool) {
            self.path = path
            self.temporary = temporary
            self.directory = directory
            self.fd = fd
            self.existingLength = existingLength
            isResumable = resumable
        }

        /// Whether the temporary file has the fixed name a later try finds.
        package let isResumable: Bool

        /// A writer whose temporary file has a fixed name for `path` and `tag` (the
        /// content's address), so that a download cut off goes on in it the next time:
        /// ``existingLength`` bytes are there already. The file is opened without
        /// following a symlink and used only if it is a regular file of this user with
        /// one link, and locked (flock) by no other writer (otherwise a fresh random
        /// name, as ``init(_:)``); what it holds is the caller's to check (a download
        /// checks it with the rest against the address).
        package convenience init(resumable path: String, tag: String) throws(Failure) {
            let target = URL(fileURLWithPath: path)
            let directory = target.deletingLastPathComponent().path
            let temporary = directory + "/." + target.lastPathComponent + "." + tag + ".partial"
            let fd = open(temporary, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            var info = stat()
            guard fd >= 0, fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(), info.st_nlink == 1,
                  flock(fd, LOCK_EX | LOCK_NB) == 0, fchmod(fd, 0o600) == 0, lseek(fd, 0, SEEK_END) == info.st_size else {
                if fd >= 0 { close(fd) }
                try self.init(path)
                return
            }
            self.init(path: path, temporary: temporary, directory: directory, fd: fd, existingLength: Int(info.st_size), resumable: true)
        }

        /// Bytes a cut-off download left in the temporary file (0 for a fresh one).
        package private(set) var existingLength = 0

        /// Keeps the first `length` bytes (at most ``existingLength``), hands them to
        /// `body` piece by piece, and goes on writing after them.
        package func keep(first length: Int, reading body: (UnsafeRawBufferPointer) throws -> Void) throws {
            let length = min(max(length, 0), existingLength)
            guard ftruncate(fd, off_t(length)) == 0 else { throw fail("truncate: \(String(cString: strerror(errno)))") }
            existingLength = length
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            defer { secureWipe(&buffer) }
            var offset = 0
            while offset < length {
                let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, min($0.count, length - offset), off_t(offset)) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { throw fail("read: \(String(cString: strerror(errno)))") }
                try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
                offset += n
            }
            guard lseek(fd, off_t(length), SEEK_SET) == off_t(length) else { throw fail("seek: \(String(cString: strerror(errno)))") }
        }

        /// Closes the temporary file and leaves it for the next try (a transfer cut off),
        /// when it is a resumable one that holds something; otherwise removes it.
        package func leaveForResumption(written: Int) {
            guard fd >= 0 else { return }
            guard isResumable, existingLength + written > 0 else { return abort() }
            close(fd)
            fd = -1
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
