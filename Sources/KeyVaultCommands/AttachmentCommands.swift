import ArgumentParser
import Foundation
import KeyVault

struct Attachment: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Seal, upload, list, fetch, delete and re-wrap a member's attachments.",
        discussion: """
            An attachment is stored under its content address, a keyed hash of its
            content (ca1.<generation>.<64 hex>): the same file is stored once per
            member, and the server cannot tell what it is. Its file name, type, time
            and size are stored with it, sealed under the member key: `list` shows
            them, `rename` changes them, and `get` and `delete` take the name as
            well as the address.
            """,
        subcommands: [Address.self, Put.self, Get.self, List.self, Rename.self, Delete.self, Export.self, Rewrap.self])

    struct MemberOption: ParsableArguments {
        @Option(name: .long, help: "The member's name or id.")
        var member: String
    }

    /// An attachment named on the command line by its address, or by its name.
    struct Target: ParsableArguments {
        @Argument(help: ArgumentHelp("The attachment: its content address (ca1.…) or its file name as `list` shows it.", valueName: "address-or-name"))
        var attachment: String

        func validate() throws {
            // A mistyped address is not taken for a name (no file is called "ca1.…").
            if attachment.hasPrefix("ca1."), ContentAddress(attachment) == nil {
                throw ValidationError("\(attachment) is not a content address (ca1.<generation>.<64 hex digits>)")
            }
        }

        func address(in vault: Vault, member: Vault.Member) async throws -> ContentAddress {
            if let address = ContentAddress(attachment) { return address }
            return try await vault.attachment(named: attachment, member: member).address
        }
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
            discussion: #"""
                Asks the server the largest attachment it takes first: a file over it is
                refused before it is read. The file is read twice, to compute its address
                and then to seal it in 1 MiB chunks; a file that changes in between is
                refused, nothing sent. Prints its address, and says when the server already
                had it. An upload cut off (the network, Ctrl-C, a server restart) goes on
                where it stopped when the same command runs again: the chunks the server
                holds are checked against a journal in the device's home, not sent again.
                The file's name, media type, modification time and size are stored with
                it, sealed under the member key (the server sees none of them). For a
                member shared with this account, only where it has no name yet: the
                sharer's devices alone rename.
                --json prints {"address", "size", "existed", "resumedChunks"}, and
                "nameNotStored" (why) when its name was not stored.
                """#)
        @OptionGroup var member: MemberOption
        @Argument(help: "The file.") var file: String
        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let result = try await vault.put(fileAt: file, member: try await vault.member(named: member.member))
            var json: [String: any Sendable] = ["address": result.address.description, "size": result.size, "existed": result.existed,
                                                "resumedChunks": result.resumedChunks]
            json["nameNotStored"] = result.nameNotStored
            options.result(json, "\(result.address)\n" + (result.existed ? "(the server already had it; nothing new was stored)\n" : "")
                               + (result.nameNotStored.map { "(its name was not stored: \($0))\n" } ?? ""))
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Fetch an attachment, open it and check it against its address.",
            discussion: """
                Writes the content to -o FILE, or to standard output when that is not a
                terminal (a PDF or a photo is no text to show). FILE is written through
                a temporary file in the same directory (named for FILE and the address,
                never through a symlink, mode 0600), synced, then renamed over FILE: an
                existing FILE, or a symlink at FILE, is replaced, never written through.
                Content that does not match its address is refused (exit 5) and nothing
                is written; a failed write leaves no temporary file behind. A download
                cut off (the network, Ctrl-C, a server restart) leaves it, and the same
                command run again goes on after what arrived, checked with the rest.
                --json (needs -o) prints {"address", "size", "output"}.
                """)
        @OptionGroup var member: MemberOption
        @OptionGroup var target: Target
        @Option(name: .shortAndLong, help: ArgumentHelp("Write to this file instead of standard output.", valueName: "file"))
        var output: String?
        @OptionGroup var options: HomeOptions

        func validate() throws {
            if options.json, output == nil { throw ValidationError("--json needs -o FILE: the content cannot go to standard output with JSON") }
        }

        func run() async throws {
            if output == nil, KeyctlMain.console.outputIsTerminal {
                throw KeyctlError(.invalidInput, "an attachment's content (a PDF, a photo) is not written to a terminal",
                                  hint: "write it to a file with -o FILE, or send standard output to one (> FILE)", exitCode: .usage)
            }
            let vault = try await options.openVault()
            let owner = try await vault.member(named: member.member)
            let address = try await target.address(in: vault, member: owner)
            if let output {
                let size = try await vault.get(address, member: owner, toFileAt: output)
                options.result(["address": address.description, "size": size, "output": output],
                               "Wrote \(Vault.sizeText(size)) to \(output); the content matches its address.\n")
            } else {
                let content = try await vault.get(address, member: owner)
                content.withUnsafeBytes { KeyctlMain.console.writeBytes(Array($0)) }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a member's attachments.",
            discussion: #"""
                Each with its name, date and size as the device that named it sealed them
                (a device of the account, or of a grantee of a shared member); an
                attachment put without one (by an older version, or from memory without a
                name) shows its address alone. A name that does not open for its
                attachment (moved or altered, by the server or a grantee) is not shown,
                and is reported.
                --json prints {"attachments": [{"address", "size", "created", "name",
                "mediaType", "time", "plainSize", "nameProblem"}]} (size: of the sealed
                object; plainSize: of the file; the last five only when known).
                """#)
        @OptionGroup var member: MemberOption
        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let list = try await vault.attachments(member: try await vault.member(named: member.member))
            options.result(["attachments": list.map { item -> [String: Any] in
                var object: [String: Any] = ["address": item.address.description, "size": item.size,
                                             "created": unixSeconds(item.stored)]
                if let name = item.name { object["name"] = name }
                if let type = item.mediaType { object["mediaType"] = type }
                if let time = item.time { object["time"] = unixSeconds(time) }
                if let size = item.plainSize { object["plainSize"] = size }
                if let problem = item.nameProblem { object["nameProblem"] = problem }
                return object
            }], list.isEmpty ? "No attachments.\n" : list.map(Self.line).joined())
        }

        /// `Vaccination record.pdf  2026-11-20  3 KB  ca1.1.0a4f…`
        static func line(_ item: Vault.Attachment) -> String {
            let short = "\(item.address.description.prefix(14))…"
            guard let name = item.name else {
                return "\(item.address)  \(Vault.sizeText(item.size)) sealed"
                    + (item.nameProblem.map { "  (its stored name is not shown: \($0))" } ?? "") + "\n"
            }
            return "\(name)  \(StaleDevices.day(item.time ?? item.stored))  \(Vault.sizeText(item.plainSize ?? item.size))  \(short)\n"
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write every attachment of a member, opened, into a folder under its name.",
            discussion: #"""
                For a person taking their files along: each attachment is fetched, opened
                and checked against its address as `get` does, and written into DIR under
                the name it was put with (its address when it has none). A name already in
                DIR gets " (2)", " (3)"… before its extension: nothing is overwritten.
                Files are written mode 0600. --json prints {"exported": [{"address",
                "file", "size"}]}.
                """#)
        @OptionGroup var member: MemberOption
        @Option(name: .long, help: ArgumentHelp("The folder to write into (it must exist).", valueName: "dir"))
        var to: String
        @OptionGroup var options: HomeOptions

        func run() async throws {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: to, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw KeyctlError(.io, "\(to) is not a folder", hint: "create it first (mkdir), then run again", exitCode: .usage)
            }
            let vault = try await options.openVault()
            let owner = try await vault.member(named: member.member)
            let list = try await vault.attachments(member: owner)
            let progress = options.progressLines
            var exported = [[String: Any]]()
            for (index, item) in list.enumerated() {
                let wanted = item.name ?? item.address.description
                progress?.console.writeError("… \(index + 1) of \(list.count): \(wanted.printable)\n")
                // Written and checked under a name of its own, then linked to a name nothing has:
                // link(2) never replaces, so a file that appeared meanwhile is not overwritten.
                let staging = to + "/.keyvault-export-" + item.address.description.suffix(16)
                let size = try await vault.get(item.address, member: owner, toFileAt: staging)
                defer { unlink(staging) }
                var file: String?
                for _ in 0..<1000 where file == nil {
                    let candidate = Self.freeName(for: wanted, in: to)
                    if link(staging, to + "/" + candidate) == 0 { file = candidate; continue }
                    guard errno == EEXIST else {
                        throw KeyctlError(.io, "cannot write \(candidate.printable) in \(to.printable): \(String(cString: strerror(errno)))")
                    }
                }
                // Never reported as written when no free name took it.
                guard let file else { throw KeyctlError(.io, "no free name for \(wanted.printable) in \(to.printable)") }
                exported.append(["address": item.address.description, "file": file, "size": size])
            }
            options.result(["exported": exported],
                           "Exported \(exported.count) attachment(s) of \(owner.name.printable) to \(to.printable).\n")
        }

        /// `name`, or `name (2).ext`, `name (3).ext`… whichever is not in `directory` yet.
        static func freeName(for name: String, in directory: String) -> String {
            let url = URL(fileURLWithPath: name)
            let ext = url.pathExtension, stem = ext.isEmpty ? name : String(name.dropLast(ext.count + 1))
            var candidate = name
            var number = 2
            while FileManager.default.fileExists(atPath: directory + "/" + candidate) || (try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + candidate)) != nil {
                candidate = ext.isEmpty ? "\(stem) (\(number))" : "\(stem) (\(number)).\(ext)"
                number += 1
            }
            return candidate
        }
    }

    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give an attachment another name (its content stays as it is).",
            discussion: #"""
                Seals the new name under the member key, replacing the one it had: a name
                given by another device, or by an account the member is shared with, or
                one `list` says does not open (give the address then). Its time and size
                stay; where it had no name that opens, the content is fetched and checked
                to count its size, and its time is now. Only the member's own account
                renames.
                --json prints {"address", "name", "mediaType"}.

                  keyctl attachment rename --member Emma ca1.1.5e0c… "Vaccination record 2026.pdf"
                """#)
        @OptionGroup var member: MemberOption
        @OptionGroup var target: Target
        @Argument(help: ArgumentHelp("The new name: a file name, without '/'.", valueName: "new-name"))
        var name: String
        @Option(name: .long, help: "The media type (default: from the new name's extension).")
        var type: String?
        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let owner = try await vault.member(named: member.member)
            let address = try await target.address(in: vault, member: owner)
            let renamed = try await vault.renameAttachment(address, member: owner, to: name, mediaType: type)
            options.result(["address": address.description, "name": name, "mediaType": renamed.mediaType ?? ""],
                           "Renamed \(address) to \(name) (\(renamed.mediaType ?? "")).\n")
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete an attachment from the server.",
            discussion: #"""
                Deletes its content, its chunks and its name on the server, for every device
                (one of this account's members; asks first unless --yes). A copy a device
                wrote to a file stays. --json prints {"deleted"} (the address).
                """#)
        @OptionGroup var member: MemberOption
        @OptionGroup var target: Target
        @Flag(name: .long, help: "Do not ask for confirmation.")
        var yes = false
        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let owner = try await vault.member(named: member.member)
            let address = try await target.address(in: vault, member: owner)
            try confirm("Delete \(target.attachment == address.description ? "attachment \(address)" : "\(target.attachment) (\(address))") of \(owner.name) for every device?",
                        assumeYes: yes, what: "deleting an attachment")
            try await vault.deleteAttachment(address, member: owner)
            options.result(["deleted": address.description], "Deleted \(address).\n")
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
