import ArgumentParser
import Foundation
import KeyVault

/// An account id argument (32 lowercase hex digits).
struct AccountArgument: ParsableArguments {
    @Argument(help: ArgumentHelp("The other account's id (32 hex digits: `keyctl status` shows it on a device of that account).",
                                 valueName: "account"))
    var account: String

    var id: AccountID { AccountID(rawValue: account)! }

    func validate() throws {
        guard AccountID(rawValue: account) != nil else {
            throw ValidationError("an account id is 32 lowercase hex digits (`keyctl status` on a device of that account shows it)")
        }
    }
}

/// `--with ACCOUNT`: the account a member is shared with.
struct WithAccount: ParsableArguments {
    @Option(name: .customLong("with"), help: ArgumentHelp("The other account's id (`keyctl contact list` shows your contacts).", valueName: "account"))
    var account: String

    var id: AccountID { AccountID(rawValue: account)! }

    func validate() throws {
        guard AccountID(rawValue: account) != nil else {
            throw ValidationError("--with is an account id: 32 lowercase hex digits (`keyctl contact list` shows your contacts)")
        }
    }
}

struct Contact: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Other accounts this one has verified, to share members with.",
        discussion: """
            A member is only ever shared with an account whose sharing identity the
            two people verified by comparing a safety code (`keyctl contact add`). The
            server relays the exchange but cannot choose the keys: a member key is never
            sealed to a key the server picked.
            """,
        subcommands: [Add.self, List.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify another account's sharing identity with its person, and pin it.",
            discussion: """
                Both people run this, each naming the other's account: one first, the
                other once the first shows it is waiting (within 10 minutes); the second
                answers the first's request.
                Each side then shows a 6-digit safety code computed from both accounts'
                identities and random values. Read them to each other on a call or in
                person. Type the code the other person reads out (a prompt on a
                terminal; otherwise one line on standard input). Only if it equals this
                side's code is the contact pinned on this account's chain; anything else
                pins nothing (exit 1). The side that asks first commits to its random
                value before it sees the other's, so a server in the middle cannot find
                keys that give both people the same digits.

                Once pinned, a change of that account's identity is refused until you
                verify it again with this command.

                --code C gives the other person's code instead of reading it from the
                terminal or standard input (for automation that learns it otherwise).
                --json prints {"request", "expires"} (this side asked) or
                {"answered"} (this side answered) at once, {"safetyCode"} when this
                side's code is known, then {"account", "identityGeneration", "pinned"}.
                """)

        @OptionGroup var other: AccountArgument

        @Option(name: .long, help: ArgumentHelp("The safety code the other person reads out (6 digits).", valueName: "code"))
        var code: String?

        @Option(name: .long, help: "Seconds between checks for the other side.")
        var poll: Double = 1

        @OptionGroup var options: HomeOptions

        func run() async throws {
            let console = KeyctlMain.console
            let json = options.json
            let given = code
            let vault = try await options.openVault()
            let contact = try await vault.addContact(
                other.id, pollInterval: .milliseconds(Int(max(0.05, poll) * 1000)),
                events: { event in
                    switch (event, json) {
                    case (.requested(let id, let expires), true): console.write(jsonLine(["request": id, "expires": expires]))
                    case (.requested, false):
                        console.writeError("Asked \(other.id) to verify; now run on a device of that account:\n\n  keyctl contact add \(vault.account)\n\nWaiting for it…\n")
                    case (.answered(let id), true): console.write(jsonLine(["answered": id]))
                    case (.answered, false): console.writeError("Answered the request of \(other.id); waiting for its last step…\n")
                    case (.safetyCode(let code), true): console.write(jsonLine(["safetyCode": code]))
                    case (.safetyCode(let code), false):
                        console.write("Safety code on this side:  \(code)\nRead it to the other person, and listen to theirs.\n")
                    }
                },
                otherCode: {
                    if let given { return given }
                    if console.inputIsTerminal { console.writeError("Type the code the other person reads out: ") }
                    return try console.readLine().map { String(decoding: $0, as: UTF8.self) }
                })
            options.result(["account": contact.account.rawValue, "identityGeneration": contact.identityGeneration, "pinned": contact.pinned],
                           "Verified: \(contact.account) is now a contact; members can be shared with it.\n")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the verified contacts.",
            discussion: #"--json prints {"contacts": [{"account", "identityGeneration", "pinned"}]}."#)

        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let contacts = try await vault.contacts()
            options.result(["contacts": contacts.map { ["account": $0.account.rawValue, "identityGeneration": $0.identityGeneration, "pinned": $0.pinned] }],
                           contacts.isEmpty ? "No contacts yet: verify one with `keyctl contact add ACCOUNT`.\n"
                               : contacts.map { "\($0.account)  identity generation \($0.identityGeneration)  (pinned at link \($0.pinned))\n" }.joined())
        }
    }
}

extension Member {
    struct Share: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Share a member with a verified contact.",
            discussion: """
                Records the grant on this account's chain and seals every generation of
                the member's key to the identity you pinned for that account (never to
                one the server names), signed by this account's identity. The other
                account then sees the member in `keyctl shared list` and uses
                `keyctl attachment … --member NAME` on it. With --read-only, the server
                refuses its puts. Later key rotations reach it too, until
                `keyctl member unshare`.
                --json prints {"member", "grantee", "readOnly", "grant"}.
                """)

        @Argument(help: "The member's name or id.")
        var name: String

        @OptionGroup var with: WithAccount

        @Flag(name: .long, help: "The other account may read attachments but not put any.")
        var readOnly = false

        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let member = try await vault.member(named: name)
            let grant = try await vault.share(member, with: with.id, readOnly: readOnly)
            options.result(["member": member.id.rawValue, "grantee": with.account, "readOnly": readOnly, "grant": grant.granted],
                           "Shared \(member.name.debugDescription) with \(with.account)\(readOnly ? " (read-only)" : "").\n")
        }
    }

    struct Unshare: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Take a shared member back.",
            discussion: """
                Records the end of the grant, then rotates the member's key: the other
                account never receives the new generation, and the server refuses its
                devices from then on. What it already read, it keeps.
                --json prints {"member", "grantee", "generation"}.
                """)

        @Argument(help: "The member's name or id.")
        var name: String

        @OptionGroup var with: WithAccount

        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let member = try await vault.member(named: name)
            let generation = try await vault.unshare(member, with: with.id)
            options.result(["member": member.id.rawValue, "grantee": with.account, "generation": generation],
                           "\(member.name.debugDescription) is no longer shared with \(with.account); its key is now generation \(generation).\n")
        }
    }
}

struct Shared: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Members other accounts share with this one.",
        subcommands: [List.self], defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the members other accounts share with this one.",
            discussion: """
                Each is checked against its account's chain and against your own pin of
                that account (`keyctl contact add`): a sharer you did not verify, or
                whose identity changed since, is listed as refused and nothing of it is
                opened. Use a listed member with `keyctl attachment … --member NAME`.
                --json prints {"shared": [{"id", "name", "generation", "sharer", "readOnly"}],
                "refused": [{"sharer", "reason"}]}.
                """)

        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let view = try await vault.sharedMembers()
            let console = KeyctlMain.console
            if !options.json {
                for refusal in view.refused {
                    console.writeError("warning: refused what \(refusal.sharer) shares: \(refusal.reason.printable)\n")
                }
            }
            options.result(["shared": view.members.map { ["id": $0.id.rawValue, "name": $0.name, "generation": $0.generation,
                                                          "sharer": $0.sharer?.rawValue ?? "", "readOnly": $0.readOnly] },
                            "refused": view.refused.map { ["sharer": $0.sharer.rawValue, "reason": $0.reason] }],
                           view.members.isEmpty ? "Nothing is shared with this account.\n"
                               : view.members.map { "\($0.id)  \($0.name.printable)  from \($0.sharer?.rawValue ?? "")\($0.readOnly ? "  read-only" : "")\n" }.joined())
        }
    }
}
