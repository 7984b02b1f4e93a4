import ArgumentParser
import Foundation
import KeyVault

// Moving an account to another server: `account export`, `account import`, `server move`.

extension Account {
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write everything the server holds for the account to one file.",
            discussion: """
                The chain, the key boxes, the member keys' wraps, the recovery slot and every
                attachment of every member with its sealed name: what the server holds, so
                ciphertext and public keys only. This device checks all of it as it reads it
                (every attachment is opened and matched to its address), so a file written is
                one `account import` takes. The file appears, mode 0600, only once complete.

                To move the account to another server:
                  keyctl account export --to account.kvx
                  keyctl account import account.kvx --server https://new.example.org
                  keyctl server move https://new.example.org      (on every other device)

                --json prints {"file", "links", "attachments", "namesLeftOut", "bytes"}.
                """)

        @Option(name: .long, help: ArgumentHelp("The file to write; it must not exist yet.", valueName: "file"))
        var to: String

        @OptionGroup var options: HomeOptions

        func run() async throws {
            guard !FileManager.default.fileExists(atPath: to) else {
                throw KeyctlError(.invalidInput, "\(to) exists already", hint: "give another name, or remove it first", exitCode: .usage)
            }
            let vault = try await options.openVault()
            let summary = try await vault.exportAccount(toFileAt: to)
            let unnamed = summary.namesLeftOut == 0 ? "" : "\n\(summary.namesLeftOut) attachment(s) went without their names: the names stored with them do not open on this device."
            options.result(["file": to, "links": summary.links, "attachments": summary.attachments, "namesLeftOut": summary.namesLeftOut,
                            "bytes": summary.bytes], """
                Wrote account \(vault.account) to \(to): \(summary.links) changes in its history, \(summary.attachments) attachment(s), \
                \(Vault.sizeText(summary.bytes)), all checked.\(unnamed)
                To move it: \(KeyctlMain.invokedName) account import \(to) --server NEW_URL

                """)
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put an account export on another server.",
            discussion: """
                Run on a device of the account. The file's chain must extend the one this
                device has seen (an older file is refused: export again); the new server
                checks it as it checks any change, and this device opens every attachment
                and matches it to its address before the new server keeps it. Run again
                after a cut, it goes on where it stopped.

                Then, once the old server is seen to hold nothing the new one lacks, this
                device moves to the new server and the old copy is deleted, so that no
                change (a revocation, say) can land there after the move. The other
                devices' next command there fails; `keyctl server move URL` takes each one
                over. --keep-old-copy leaves the old copy and this device where they are
                (then `server move` here too, and `account delete --old-server` at the end).

                Shares with other accounts do not move (those accounts stay on the old
                server): end them first.

                --json prints {"server", "links", "linksAppended", "attachments",
                "attachmentsAlreadyThere", "moved", "oldCopyProblem"}.
                """)

        @Argument(help: ArgumentHelp("The file `account export` wrote.", valueName: "file"))
        var file: String

        @OptionGroup var server: ServerOptions
        @Flag(name: .long, help: "Leave the old server's copy, and this device on the old server.")
        var keepOldCopy = false
        @OptionGroup var invitation: InviteOptions
        @OptionGroup var options: HomeOptions

        func run() async throws {
            let transport = try options.transport(for: server.server)
            guard FileManager.default.isReadableFile(atPath: file) else {
                throw KeyctlError(.io, "cannot read \(file)", hint: "give the file `\(KeyctlMain.invokedName) account export --to FILE` wrote", exitCode: .usage)
            }
            let vault = try await options.openVault()
            let summary = try await vault.importAccount(fromFileAt: file, to: try server.url, transport: transport,
                                                        invite: try invitation.token, keepingOldCopy: keepOldCopy)
            let kept = summary.attachmentsAlreadyThere == 0 ? "" : " (\(summary.attachmentsAlreadyThere) were there already)"
            let next = !summary.moved
                ? "Every device still uses \(vault.server). On each one, run:\n  \(KeyctlMain.invokedName) server move \(server.server)\nthen, once all moved:  \(KeyctlMain.invokedName) account delete --old-server \(vault.server)"
                : "This device now uses it. " + (summary.oldCopyProblem.map {
                    "The old copy on \(vault.server) could not be deleted (\($0)): run `\(KeyctlMain.invokedName) account delete --old-server \(vault.server)`."
                  } ?? "The old copy on \(vault.server) was deleted.")
                  + "\nOn every other device, run:\n  \(KeyctlMain.invokedName) server move \(server.server)"
            var object: [String: Any] = ["server": server.server, "links": summary.links, "linksAppended": summary.linksAppended,
                                         "attachments": summary.attachments, "attachmentsAlreadyThere": summary.attachmentsAlreadyThere,
                                         "moved": summary.moved]
            object["oldCopyProblem"] = summary.oldCopyProblem
            options.result(object, """
                Account \(vault.account) is on \(server.server) now: \(summary.links) changes in its history \
                (\(summary.linksAppended) new there), \(summary.attachments) attachment(s)\(kept), all checked.
                \(next)

                """)
        }
    }
}

struct Server: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Point this device at the server its account moved to.",
        subcommands: [Move.self])

    struct Move: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Use another server for this device's account, once the account is there.",
            discussion: """
                The new server's chain must verify, hold this device, and extend the newest
                one this device has seen (read from the old server first, or, when the
                account is gone from there, the one this device kept): a server holding an
                older copy of the account, another one, or none is refused and nothing
                changes. Put the account there first with `keyctl account import FILE
                --server URL` on one device.

                --json prints {"server", "previous", "chainLength"}.
                """)

        @Argument(help: ArgumentHelp("The new server, e.g. https://keys.example.org.", valueName: "url"))
        var url: String

        @OptionGroup var options: HomeOptions

        func validate() throws {
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else {
                throw ValidationError("the server must be an http:// or https:// URL with a host, e.g. https://keys.example.org")
            }
        }

        func run() async throws {
            let transport = try options.transport(for: url)
            // The old server first, for the newest head this device can see; when the account
            // is gone from there (moved, its copy deleted) or the server is, the chain it kept.
            let vault: Vault
            do {
                vault = try await options.openVault()
            } catch let error as KeyVaultError where [.unknownDevice, .notFound, .network].contains(error.code) {
                vault = try await options.openVault(offline: true)
            }
            guard let target = URL(string: url) else { throw KeyctlError(.invalidInput, "\(url) is not a URL", exitCode: .usage) }
            let sequence = try await vault.move(to: target, transport: transport)
            options.result(["server": target.absoluteString, "previous": vault.server, "chainLength": sequence + 1], """
                This device now uses \(target.absoluteString): its copy of the account (\(sequence + 1) changes) extends the one this device saw.
                If the old server still holds a copy (an import with --keep-old-copy), delete it once every device moved:
                  \(KeyctlMain.invokedName) account delete --old-server \(vault.server)

                """)
        }
    }
}
