import ArgumentParser
import Foundation
import KeyVault
import KeyVaultMnemonic

struct Member: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Family members: each has its own key for its attachments.",
        discussion: "Member names are sealed: the server sees only random ids.",
        subcommands: [Add.self, List.self, Rename.self, Remove.self, Rotate.self, Share.self, Unshare.self])

    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give a member another name, for every device.",
            discussion: """
                The new name is sealed under the member's newest key generation and written
                to the account's chain; the member's key and attachments do not change.
                --json prints {"member", "name"}.
                """)

        @Argument(help: "The member's name now (or its id).")
        var old: String

        @Argument(help: "The new name (1-100 characters).")
        var new: String

        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let before = try await vault.member(named: old)
            let member = try await vault.renameMember(before, to: new)
            options.result(["member": member.id.rawValue, "name": member.name],
                           "Member \(before.name.printable.debugDescription) is called \(new.printable.debugDescription) now, on every device.\n")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Take a member out of the account, with its attachments.",
            discussion: """
                Ends the member's shares, then writes its removal to the account's chain;
                with it the server deletes the member's keys and every attachment of it, for
                every device. Files written out of it stay where they are. Asks first
                unless --yes. --json prints {"removed"} (the member's id).
                """)

        @Argument(help: "The member's name or id.")
        var name: String

        @Flag(name: .long, help: "Do not ask for confirmation.")
        var yes = false

        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let member = try await vault.member(named: name)
            let count = (try? await vault.attachments(member: member).count).map { "its \($0)" } ?? "all its"
            try confirm("Remove member \(member.name.printable.debugDescription) and delete \(count) attachment(s) for every device? This cannot be undone.",
                        assumeYes: yes, what: "removing a member")
            try await vault.removeMember(member)
            options.result(["removed": member.id.rawValue],
                           "Removed member \(member.name.printable.debugDescription) and \(count) attachment(s).\n")
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a member with a new member key.", discussion: #"--json prints {"member", "name", "generation"}."#)

        @Argument(help: "The member's name (1-100 characters).")
        var name: String

        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let member = try await vault.addMember(name: name)
            options.result(["member": member.id.rawValue, "name": member.name, "generation": member.generation],
                           "Added member \(name.debugDescription) (\(member.id)).\n")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the members, and the accounts each is shared with.",
            discussion: #"--json prints {"members": [{"id", "name", "generation", "sharedWith": [{"account", "readOnly"}]}]}."#)

        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let members = try await vault.members()
            let grants = try await vault.grants()
            func shared(_ member: Vault.Member) -> [Vault.Grant] { grants.filter { $0.member == member.id } }
            options.result(["members": members.map { member in
                               ["id": member.id.rawValue, "name": member.name, "generation": member.generation,
                                "sharedWith": shared(member).map { ["account": $0.grantee.rawValue, "readOnly": $0.readOnly] }] as [String: Any] }],
                           members.isEmpty ? "No members yet: add one with `keyctl member add NAME`.\n"
                               : members.map { member in
                                   "\(member.id)  generation \(member.generation)  \(member.name.printable)"
                                       + shared(member).map { "\n    shared with \($0.grantee)\($0.readOnly ? " (read-only)" : "")" }.joined() + "\n"
                               }.joined())
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a new generation of a member's key.",
            discussion: """
                New attachments use the new generation; older ones stay readable, and
                `keyctl attachment rewrap` moves their keys to it.
                --json prints {"member", "generation"}.
                """)

        @Argument(help: "The member's name or id.")
        var name: String

        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let member = try await vault.member(named: name)
            let generation = try await vault.rotateMember(member.id)
            options.result(["member": member.id.rawValue, "generation": generation],
                           "Member \(member.name.debugDescription) now has key generation \(generation).\n")
        }
    }
}

struct Master: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The account's master key.",
        subcommands: [Rotate.self])

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a new master key generation for the active devices and the recovery code.",
            discussion: """
                Every member key is re-wrapped under it. Also finishes a rotation that a
                revocation or recovery rotation left unfinished.
                --json prints {"masterGeneration"}.
                """)

        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            if try await vault.pendingRotation().isEmpty {
                try await vault.rotateMaster()
            } else {
                try await vault.finishPendingRotations()
            }
            let generation = try await vault.status().masterKeyGeneration
            options.result(["masterGeneration": generation], "The master key is now generation \(generation).\n")
        }
    }
}

extension Recovery {
    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Replace the account's recovery code with a new one.",
            discussion: """
                Asks first when a code is set (--yes: do not ask). Shows a new 24-word
                code once (or writes it to --recovery-file, mode 0600), asks for three of
                its words back unless --yes, then sets it: from
                then on the old code enrolls nothing. The master key, the sharing
                identity and every member key are renewed too, so that the old code
                (with anything the server ever stored) opens nothing made from now on;
                contacts you share with verify this account again (`keyctl contact add`).
                Also sets a first code on an account that has none.
                --json prints {"recoveryGeneration", "masterGeneration"}; it needs --recovery-file.
                """)

        @OptionGroup var recovery: NewCodeOptions
        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let before = try await vault.status().recoveryGeneration
            if before > 0 {
                try confirm("Replace the recovery code? Once the new one is set, the written copy of the old one opens nothing.",
                            assumeYes: recovery.yes, what: "replacing the recovery code")
            }
            let code = try recovery.newCode(json: options.json)
            do {
                try await vault.setRecoveryCode(code, parameters: recovery.kdf)
            } catch let error as KeyVaultError {
                let set = (try? await vault.status().recoveryGeneration) ?? 0 > before
                throw KeyctlError(KeyVaultError(error.code, set ? "the new recovery code is set, but rotating the master key after it failed: \(error.message)"
                                                                : "the new recovery code was not set (the old one still works): \(error.message)",
                                                kind: error.kind, status: error.status),
                                  hint: set ? "run `keyctl master rotate` to finish" : "run `keyctl recovery rotate` again\(recovery.recoveryFile.map { " after deleting \($0)" } ?? "")")
            }
            let state = try await vault.status()
            options.result(["recoveryGeneration": state.recoveryGeneration, "masterGeneration": state.masterKeyGeneration],
                           "The new recovery code is set (generation \(state.recoveryGeneration)); the old one no longer works.\n")
        }
    }
}
