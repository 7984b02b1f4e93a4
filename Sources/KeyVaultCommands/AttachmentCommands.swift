import ArgumentParser
import Foundation
import KeyVault
import KeyVaultCrypto
import KeyVaultModel

struct Attachment: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Seal, upload, fetch and re-wrap a member's attachments.",
        discussion: """
            An attachment is stored under its content address, a keyed hash of its
            content (ca1.<generation>.<64 hex>): the same file is stored once per
            member, and the server cannot tell what it is.
            """,
        subcommands: [Address.self, Put.self, Get.self, List.self, Rewrap.self])

    struct MemberOption: ParsableArguments {
        @Option(name: .long, help: "The member's name or id.")
        var member: String
    }

    struct Address: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a file's content address for a member (nothing is uploaded).",
            discussion: #"--json prints {"address"}."#)
        @OptionGroup var member: MemberOption
        @Argument(help: "The file.") var file: String
        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let address = try await vault.address(ofFileAt: file, member: try await vault.member(named: member.member))
            options.result(["address": address.description], "\(address)\n")
        }
    }

    struct Put: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Seal a file for a member and upload it.",
            discussion: #"Prints its address, and says when the server already had it. --json prints {"address", "size", "existed"}."#)
        @OptionGroup var member: MemberOption
        @Argument(help: "The file.") var file: String
        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let result = try await vault.put(fileAt: file, member: try await vault.member(named: member.member))
            options.result(["address": result.address.description, "size": result.size, "existed": result.existed],
                           "\(result.address)\n" + (result.existed ? "(the server already had it; nothing new was stored)\n" : ""))
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Fetch an attachment, open it and check it against its address.",
            discussion: """
                Writes the content to -o FILE or standard output. FILE is written through
                a new temporary file in the same directory (created exclusively, never
                through a symlink, mode 0600), synced, then renamed over FILE: an
                existing FILE, or a symlink at FILE, is replaced, never written through.
                Content that does not match its address is refused (exit 5) and nothing
                is written; a failed write leaves no temporary file behind.
                --json (needs -o) prints {"address", "size", "output"}.
                """)
        @OptionGroup var member: MemberOption
        @Argument(help: "The content address (ca1.…).") var address: String
        @Option(name: .shortAndLong, help: ArgumentHelp("Write to this file instead of standard output.", valueName: "file"))
        var output: String?
        @OptionGroup var options: HomeOptions

        func validate() throws {
            guard ContentAddress(address) != nil else { throw ValidationError("\(address) is not a content address (ca1.<generation>.<64 hex digits>)") }
            if options.json, output == nil { throw ValidationError("--json needs -o FILE: the content cannot go to standard output with JSON") }
        }

        func run() async throws {
            let vault = try await options.openVault()
            let address = ContentAddress(address)!
            let content = try await vault.get(address, member: try await vault.member(named: member.member))
            if let output {
                try writeNewFile(output, content)
                options.result(["address": address.description, "size": content.count, "output": output],
                               "Wrote \(content.count) bytes to \(output); the content matches its address.\n")
            } else {
                content.withUnsafeBytes { KeyctlMain.console.writeBytes(Array($0)) }
            }
        }

        /// Writes `content` to `path` through a fresh temporary file beside it.
        ///
        /// The temporary name is random and opened with O_CREAT|O_EXCL|O_NOFOLLOW, so a
        /// file or symlink planted there makes the open fail instead of redirecting the
        /// write; rename() then replaces `path` itself (a symlink at `path` included)
        /// without following it.
        func writeNewFile(_ path: String, _ content: SecureBytes) throws {
            let target = URL(fileURLWithPath: path)
            let directory = target.deletingLastPathComponent().path
            var temporary = "", fd: Int32 = -1
            for _ in 0..<8 {
                temporary = directory + "/." + target.lastPathComponent + "." + Hex.encode(SystemRandom.bytes(count: 8)) + ".keyctl-partial"
                fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
                if fd >= 0 || errno != EEXIST { break }
            }
            guard fd >= 0 else {
                throw KeyctlError(.io, "cannot create a temporary file in \(directory) for \(path): \(String(cString: strerror(errno)))",
                                  hint: "check that the directory exists and that you may write there")
            }
            var failure: String?
            let written = content.withUnsafeBytes { bytes -> Int in
                var offset = 0
                while offset < bytes.count {
                    let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                    if n < 0, errno == EINTR { continue }
                    guard n > 0 else { break }
                    offset += n
                }
                return offset
            }
            if written != content.count { failure = "write: \(String(cString: strerror(errno)))" }
            else if fsync(fd) != 0 { failure = "fsync: \(String(cString: strerror(errno)))" }
            close(fd)
            if failure == nil, rename(temporary, path) != 0 { failure = String(cString: strerror(errno)) }
            if let failure {
                unlink(temporary)  // nothing is left behind
                throw KeyctlError(.io, "cannot write \(path): \(failure)", hint: "check the free space and that \(path) is not a directory")
            }
            // The rename itself survives a crash only once the directory is synced.
            let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if directoryFD >= 0 { _ = fsync(directoryFD); close(directoryFD) }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a member's attachments.",
            discussion: #"--json prints {"attachments": [{"address", "size", "created"}]}."#)
        @OptionGroup var member: MemberOption
        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let list = try await vault.attachments(member: try await vault.member(named: member.member))
            options.result(["attachments": list.map { ["address": $0.address, "size": $0.size, "created": $0.created] }],
                           list.isEmpty ? "No attachments.\n" : list.map { "\($0.address)  \($0.size) bytes\n" }.joined())
        }
    }

    struct Rewrap: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Re-wrap a member's attachment keys under its newest key generation.",
            discussion: """
                Only the small wrapped keys are rewritten, never the content. Resumable:
                run it again after an interruption. --json prints {"rewrapped", "current"}.
                """)
        @OptionGroup var member: MemberOption
        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let result = try await vault.rewrap(member: try await vault.member(named: member.member))
            options.result(["rewrapped": result.rewrapped, "current": result.current],
                           "Re-wrapped \(result.rewrapped) attachment key(s); \(result.current) already used the newest generation.\n")
        }
    }
}
