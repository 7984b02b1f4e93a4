import ArgumentParser
import Foundation
import KeyVault

struct Device: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add, list and revoke the devices of the account; change this one's passphrase.",
        discussion: """
            A new device joins with the recovery code (`device enroll`) or with the
            approval of a device already in the account (`device link` on the new one,
            `device approve` on the old one, comparing a short code on both screens).
            """,
        subcommands: [Enroll.self, Link.self, Approve.self, List.self, Revoke.self, Prune.self, Passphrase.self])

    struct Passphrase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Seal this device's keys under a new passphrase, or remove it.",
            discussion: """
                Opens the keys with the passphrase they are sealed under now (asked on the
                terminal, or read from the file in KEYCTL_PASSPHRASE_FILE), then seals them
                under the new one: asked twice on the terminal, or read from
                --new-passphrase-file. The home is rewritten in one step; the old passphrase
                still opens a copy or backup of the old file, which holds the same keys: if
                both may have leaked, revoke this device and enroll it anew instead. It is
                this device's alone: nothing reaches the server, and other devices keep theirs.

                --remove stores the keys unsealed (anyone who can read the home can use
                them); it asks first unless --yes. --json prints {"sealed"}.
                """)

        @Option(name: .long, help: ArgumentHelp("Read the new passphrase from this file (one trailing newline is removed).", valueName: "file"))
        var newPassphraseFile: String?

        @Flag(name: .long, help: "Store the keys unsealed instead.")
        var remove = false

        @Flag(name: .long, help: "Do not ask before removing the passphrase.")
        var yes = false

        @OptionGroup var options: HomeOptions

        func validate() throws {
            if remove, newPassphraseFile != nil { throw ValidationError("--remove and --new-passphrase-file exclude each other") }
        }

        func run() async throws {
            let vault = try await options.openVault()
            if remove {
                try confirm("Store this device's keys unsealed, readable by anyone who can read \(options.directory)?",
                            assumeYes: yes, what: "removing the passphrase")
                try await vault.setPassphrase(nil)
                options.result(["sealed": false], "This device's keys are stored unsealed now.\n")
                return
            }
            let passphrase = try PassphraseOption.readNew(from: newPassphraseFile, asking: "New passphrase for this device's keys (input hidden): ")
            try await vault.setPassphrase(passphrase)
            options.result(["sealed": true], "This device's keys are sealed under the new passphrase (the old one still opens copies of the old file).\n")
        }
    }
}

/// `--name` of a new device (init, enroll, link).
struct DeviceNameOption: ParsableArguments {
    @Option(name: .long, help: "A name for this device, shown to your other devices (1-100 characters).")
    var name: String

    func validate() throws {
        guard (1...100).contains(name.count) else { throw ValidationError("--name has 1 to 100 characters") }
    }
}

/// `--account` and `--name` of a device joining an account.
struct AccountOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The account id (32 hex digits) that `keyctl init` printed.", valueName: "id"))
    var account: String

    @OptionGroup var device: DeviceNameOption
    var name: String { device.name }

    var accountID: AccountID { AccountID(rawValue: account)! }

    func validate() throws {
        guard AccountID(rawValue: account) != nil else { throw ValidationError("--account is 32 lowercase hex digits (see `keyctl status` on a device of the account)") }
    }
}

extension Device {
    struct Enroll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Join an account with its recovery code.",
            discussion: """
                Reads the 24-word code from standard input (a hidden prompt on a
                terminal), derives its keys (Argon2id, a second or so), proves it to the
                server, checks the account's history against what the code itself vouches for, and
                adds this device. Exit 1 when the code does not open the account, or
                is not a valid code: a mistyped word is named by its position only,
                never with candidate words (they would be likely words of your code;
                `keyctl recovery verify` shows them, on your own terminal).

                --json prints {"account", "device"}.
                """)

        @OptionGroup var server: ServerOptions
        @OptionGroup var target: AccountOption
        @OptionGroup var seal: PassphraseOption
        @OptionGroup var options: HomeOptions

        func run() async throws {
            let transport = try options.transport(for: server.server)  // before any prompt
            let passphrase = try seal.newPassphrase()
            let code = try readRecoveryCode()
            let vault = try await Vault.enroll(
                server: try server.url, account: target.accountID, deviceName: target.name, recoveryCode: code,
                storage: options.storage, transport: transport, passphrase: passphrase,
                askPassphrase: options.passphrasePrompt, progress: options.progress)
            options.result(["account": vault.account.rawValue, "device": vault.device.rawValue],
                           "This device (\(vault.device)) joined account \(vault.account).\n")
        }
    }

    struct Link: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Ask a device of the account to add this one.",
            discussion: """
                Prints a request code. On a device of the account, run
                `keyctl device approve CODE`; once it answers, this device shows a
                6-digit code to type there. Waits until the request is approved,
                refused, or expires (10 minutes). Once approved, the other device
                prints "Confirmation code for the new device" and 6 digits: type them
                here (a prompt on a terminal; otherwise one line on standard input, up
                to 3 tries). This device joins only when they match, so the device you
                approved on is the one that adds it.

                Each side commits to its keys and randomness before it sees the
                other's, so a server in the middle cannot choose keys that give the
                same digits (docs/formats/device-link.md). Once joined, it names the
                device that added this one. If this command is stopped before the
                answer, or before the second code was typed, run it again in the same
                --home: a request that was approved meanwhile is finished (the second
                code is asked again), otherwise a new one starts.

                --json prints {"code", "expires"} at once, {"sas"} when the code to
                type is known, {"confirm": ATTEMPT} each time it reads the second code
                from standard input, then {"account", "device", "status", "approvedBy":
                {"id", "name"}}.
                """)

        @OptionGroup var server: ServerOptions
        @OptionGroup var target: AccountOption
        @OptionGroup var options: HomeOptions

        @Option(name: .long, help: "Seconds between checks for an answer.")
        var poll: Double = 1

        @OptionGroup var seal: PassphraseOption

        func run() async throws {
            let console = KeyctlMain.console
            let json = options.json
            let transport = try options.transport(for: server.server)  // before any prompt
            let passphrase = try seal.newPassphrase()
            let lines = options.progressLines
            defer { lines?.end() }
            let vault = try await Vault.link(
                server: try server.url, account: target.accountID, deviceName: target.name, storage: options.storage,
                transport: transport, passphrase: passphrase, askPassphrase: options.passphrasePrompt, pollInterval: .milliseconds(Int(max(0.05, poll) * 1000)),
                events: { event in
                    switch (event, json) {
                    case (.requested(let code, let expires), true):
                        console.write(jsonLine(["code": code, "expires": expires]))
                    case (.requested(let code, _), false):
                        console.write("""
                            On a device of the account, run:

                              keyctl device approve \(code.printable)


                            """)
                    case (.sas(let sas), true):
                        console.write(jsonLine(["sas": sas]))
                    case (.sas(let sas), false):
                        lines?.end()
                        console.write("Type this code on the other device:  \(sas)\n\n")
                    case (.resumed(let code), true):
                        console.write(jsonLine(["code": code, "resumed": true]))
                    case (.resumed(let code), false):
                        console.write("The earlier request \(code.printable) was approved; finishing it.\n")
                    }
                }, askConfirmation: { attempt in
                    lines?.end()
                    return try await readConfirmation(attempt: attempt, json: json)
                }, progress: { lines?.report($0) })
            lines?.end()
            // The device that added this one on the chain it joined: the person can tell whether it is the one the code was typed on.
            let devices = try await vault.devices()
            let approver = devices.first { $0.id == vault.device }?.addedBy.flatMap { id in devices.first { $0.id == id } }
            var answer: [String: Any] = ["account": vault.account.rawValue, "device": vault.device.rawValue, "status": "approved"]
            answer["approvedBy"] = approver.map { ["id": $0.id.rawValue, "name": $0.name] }
            options.result(answer, "Approved: this device (\(vault.device)) joined account \(vault.account), added by "
                           + (approver.map { "\($0.name.printable.debugDescription) (\($0.id))" } ?? "another device")
                           + ". If that is not the device you approved on, do not use this device: delete its home and link it again.\n")
        }

        /// The approver's confirmation code, as the person types it (one line; a prompt on a terminal).
        private func readConfirmation(attempt: Int, json: Bool) async throws -> String? {
            let console = KeyctlMain.console
            if json {
                console.write(jsonLine(["confirm": attempt]))
            } else if console.inputIsTerminal {
                console.writeError(attempt == 1
                    ? "The server says the other device approved. Type the code on its line \"Confirmation code for the new device\" (never a code from an error message or a name; if it shows none, press Ctrl-D): "
                    : "That is not the code this device expects. Type the other device's confirmation code (try \(attempt) of \(Vault.confirmationAttempts)): ")
            }
            return try await console.readLineOffThePool().map { String(decoding: $0, as: UTF8.self) }
        }
    }

    struct Approve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Approve a new device's link request.",
            discussion: """
                Fetches the request the new device shows CODE for, sends this device's
                random value, and waits until the new device shows a 6-digit code. Type
                that code here (a prompt on a terminal; otherwise one line on standard
                input, for scripts). Only if it equals the code this device computed is
                the new device added; anything else refuses the request and adds nothing
                (exit 1). There is no yes/no: the digits must be typed, because a
                person glancing at two screens is what an attacker counts on. Once
                added, this device prints "Confirmation code for the new device" and 6
                digits to type there: the new device joins only then. Read it from
                that line only: keyctl shows a server's free words (a refusal, the
                new device's name, which the server relays) with their digits as #,
                but a server may still write letters shaped like digits.

                --json prints {"approved", "device", "name", "confirmation"}.
                """)

        @Argument(help: "The request code the new device shows (10 letters and digits).")
        var code: String

        @Option(name: .long, help: "Seconds between checks for the new device's answer.")
        var poll: Double = 1

        @OptionGroup var options: HomeOptions

        func run() async throws {
            let console = KeyctlMain.console
            let vault = try await options.openVault()
            let candidate = try await vault.linkCandidate(code: code)
            // The name comes with the request, which the server relays: no digits of its choosing on this screen.
            let name = candidate.deviceName.printableWithoutDigits
            if !options.json {
                // Not its id: the server may have made the request up, grinding keys for an id that shows digits.
                console.writeError("New device \(name.debugDescription) asks to join; waiting for it to show its code…\n")
            }
            let exchanged = try await vault.exchange(candidate, pollInterval: .milliseconds(Int(max(0.05, poll) * 1000)))
            let typed: String
            if console.inputIsTerminal {
                console.writeError("Type the 6-digit code the new device shows: ")
            }
            guard let line = try console.readLine() else {
                try? await vault.refuse(exchanged)
                throw KeyctlError(.invalidInput, "no code was typed: the request was refused and no device was added",
                                  hint: "type the digits the new device shows (on a terminal, or one line on standard input)",
                                  exitCode: .rejected)
            }
            typed = String(decoding: line, as: UTF8.self)
            let confirmation = try await vault.approve(exchanged, typedSAS: typed)
            options.result(["approved": true, "device": candidate.device.rawValue, "name": candidate.deviceName, "confirmation": confirmation],
                           "Approved \(name.debugDescription) (\(candidate.device)).\nConfirmation code for the new device:  \(confirmation)\n")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the devices of the account.",
            discussion: """
                Status and when each device was added come from the verified chain (the
                time is the clock of the device that added it); last seen from the server.
                --json prints {"devices": [{"id", "name", "status", "added", "addedAt",
                "revoked", "lastSeen", "current"}]}: added and revoked are chain link
                numbers, addedAt and lastSeen Unix seconds.
                """)

        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let seen = try await vault.lastSeen()
            let addedAt = try await vault.addedTimes()
            let devices = try await vault.devices().sorted { $0.added < $1.added }
            let objects: [[String: Any]] = devices.map { device in
                var object: [String: Any] = ["id": device.id.rawValue, "name": device.name, "status": device.isActive ? "active" : "revoked",
                                             "added": device.added, "current": device.id == vault.device]
                if let revoked = device.revoked { object["revoked"] = revoked }
                if let added = addedAt[device.id], let seconds = Int64(exactly: added.timeIntervalSince1970.rounded(.down)) { object["addedAt"] = seconds }
                // The server's number, whatever it is: a time past Int64 is left out, not a crash.
                if let last = seen[device.id], let seconds = Int64(exactly: last.timeIntervalSince1970.rounded(.down)) { object["lastSeen"] = seconds }
                return object
            }
            options.result(["devices": objects], devices.map { device in
                let dates = [addedAt[device.id].map { "added \(StaleDevices.day($0))" },
                             seen[device.id].map { "last seen \(StaleDevices.day($0))" } ?? "never seen"].compactMap { $0 }
                return "\(device.id)  \(device.isActive ? "active " : "revoked")  \(device.name.printable)  \(dates.joined(separator: ", "))"
                    + "\(device.id == vault.device ? "  (this device)" : "")\n"
            }.joined())
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a device from the account, with what it did, and rotate every key away from it.",
            discussion: """
                Signs a device.revoke link (the server refuses that device from its very
                next request), then makes a new master key sealed to the remaining devices
                and the recovery code, and a new generation of every member key. If it is
                interrupted, run it again (with the same --keep options): it finishes
                the revocations and the rotations.

                A revoked device may have been in a thief's hands, so what it did goes
                with it:
                - the devices it added (approved, or enrolled with a recovery code it
                  set) are listed and revoked too, and theirs in turn; keep one you trust
                  with --keep ID (repeatable);
                - the contacts it pinned and the members it shared (and any share
                  resting on a pin it made) end before any new key is made, so nothing
                  made from now on reaches them; keep a contact you verified yourself
                  with --keep ACCOUNT (its pin and shares are signed again by this device);
                - a recovery code it set, or a device it added set, stops working: a new
                  code is shown once (or written to --recovery-file, mode 0600) and, unless
                  --yes, three of its words are asked back, all before anything changes;
                  the new master key is then sealed to the new code. Revoking the device
                  that set the code (for one set by `keyctl init`, the first device)
                  therefore always gives a new code.

                Examples:
                  keyctl device revoke phone
                  keyctl device revoke 3f2a --keep 9c1e --recovery-file code.txt --yes

                --json prints {"revoked", "alsoRevoked", "kept", "ended": [{"kind": "pin" or
                "share", "account", "member"}], "keptContacts", "newRecoveryCode",
                "recoveryGeneration", "masterGeneration", "members": [{"id",
                "generation"}]}; when a new code is set it needs --recovery-file.
                """)

        @Argument(help: "The device: its id, a unique prefix of it, or its name (see `keyctl device list`).")
        var device: String

        @Option(name: .long, help: ArgumentHelp("A device the revoked one added, or a contact account it pinned or shared with, that stays (repeatable).", valueName: "id"))
        var keep: [String] = []

        @OptionGroup var recovery: NewCodeOptions
        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let target = try await vault.device(matching: device)
            var keeping = Set<DeviceID>(), keepingContacts = Set<AccountID>()
            let standing = try await vault.standing()
            for text in keep {
                if let account = AccountID(rawValue: text), standing.contains(where: { $0.account == account }) {
                    keepingContacts.insert(account)
                } else {
                    keeping.insert(try await vault.device(matching: text).id)
                }
            }
            let plan: Vault.RevocationPlan
            do {
                plan = try await vault.revocationPlan(for: target, keeping: keeping, keepingContacts: keepingContacts)
            } catch let error as KeyVaultError where error.code == .invalidInput {
                throw KeyctlError(.invalidInput, error.message, hint: Hints.hint(for: error), exitCode: .usage)
            }
            let listed = Array(plan.targets.dropFirst())
            // Member names for the pins and shares listed (ids where a key does not open).
            let names = Dictionary(((try? await vault.members()) ?? []).map { ($0.id, $0.name) }) { first, _ in first }
            func describe(_ device: Vault.Device) -> String { "\(device.name.printable) (\(device.id))" }
            if plan.targets.contains(where: \.isActive) {
                var question = "Revoke \(describe(target))? It loses access to everything from now on."
                if !listed.isEmpty {
                    question += "\nIt added these devices, which are revoked with it (keep one with --keep ID):\n"
                        + listed.map { "  \(describe($0))\n" }.joined()
                }
                if !plan.kept.isEmpty { question += "\nKept: " + plan.kept.map(describe).joined(separator: ", ") + "\n" }
                if !plan.ended.isEmpty {
                    question += "\nIt (or a device it added) pinned or shared with other accounts; these end with it (keep one with --keep ACCOUNT):\n"
                        + plan.ended.map { "  \(Self.describe($0, names))\n" }.joined()
                }
                if !plan.keptStanding.isEmpty {
                    question += "\nKept, signed again by this device: " + plan.keptStanding.map { Self.describe($0, names) }.joined(separator: ", ") + "\n"
                }
                if plan.compromisesRecovery {
                    question += "\nThe recovery code was set by it or by a device it added: that code stops working, and a new one is shown next."
                }
                try confirm(question, assumeYes: recovery.yes, what: "revoking a device")
            }
            let done = try await recovery.carryOut(plan, on: vault, json: options.json)
            let also = Array(done.targets.dropFirst())
            let after = try await vault.status()
            var text = "Revoked \(target.name.debugDescription)"
            if !also.isEmpty { text += " and the devices it added (\(also.map { $0.name.printable }.joined(separator: ", ")))" }
            text += "; master key is now generation \(after.masterKeyGeneration) and every member key was rotated.\n"
            if !done.ended.isEmpty {
                text += "Ended what it signed: " + done.ended.map { Self.describe($0, names) }.joined(separator: ", ") + ".\n"
            }
            if !done.keptStanding.isEmpty {
                text += "Kept, signed again by this device: " + done.keptStanding.map { Self.describe($0, names) }.joined(separator: ", ") + ".\n"
            }
            if done.replacedRecoveryCode {
                text += "The new recovery code is set (generation \(after.recoveryGeneration)); the old one no longer works.\n"
            }
            let ended: [[String: Any]] = done.ended.map { item in
                var object: [String: Any] = ["kind": "pin", "account": item.account.rawValue]
                if case .shareGrant(let member, _) = item.subject { object["kind"] = "share"; object["member"] = member.rawValue }
                return object
            }
            options.result(["revoked": target.id.rawValue, "alsoRevoked": also.map(\.id.rawValue), "kept": done.kept.map(\.id.rawValue),
                            "ended": ended, "keptContacts": Array(Set(done.keptStanding.map(\.account.rawValue))).sorted(),
                            "newRecoveryCode": done.replacedRecoveryCode, "recoveryGeneration": after.recoveryGeneration,
                            "masterGeneration": after.masterKeyGeneration,
                            "members": after.memberGenerations.map { ["id": $0.key.rawValue, "generation": $0.value] }], text)
        }

        /// A pin or a share in words: "the pin of contact ACCOUNT" or "the share of
        /// NAME with ACCOUNT" (the member's id where its name does not open).
        static func describe(_ item: Vault.Standing, _ names: [MemberID: String]) -> String {
            switch item.subject {
            case .contactPin(let account): "the pin of contact \(account)"
            case .shareGrant(let member, let grantee):
                "the share of \(names[member].map { $0.printable.debugDescription } ?? "member \(member.rawValue.prefix(8))…") with \(grantee)"
            }
        }
    }
}

extension NewCodeOptions {
    /// Carries out a revocation plan (`device revoke`, `device prune`). The new code is
    /// delivered (and checked) before anything changes, when the plan knows it is
    /// needed; the thief may also have set one meanwhile: then it is asked for then.
    func carryOut(_ plan: Vault.RevocationPlan, on vault: Vault, json: Bool) async throws -> Vault.RevocationPlan {
        var code = plan.compromisesRecovery ? try newCode(json: json) : nil
        return try await vault.revoke(plan, newRecoveryCode: {
            if code == nil { code = try newCode(json: json) }
            return code
        }, parameters: kdf)
    }
}
