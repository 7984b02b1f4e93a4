import ArgumentParser
import Foundation
import KeyVault
import KeyVaultMnemonic

extension RecoveryCost: ExpressibleByArgument {}

// MARK: init

struct Init: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create an account with this computer as its first device.",
        discussion: """
            Makes this device's keys and the account's first master key, shows a new
            24-word recovery code once (or writes it to --recovery-file with mode 0600),
            asks for three of its words back (unless --yes; on a terminal the code is
            cleared from the screen first, and each word may be typed 3 times), then
            creates the account on the server and sets the code. Prints the account
            id: other devices join with it (`keyctl device enroll` or `keyctl device link`).

            A server that takes new accounts by invitation needs its token: KEYCTL_INVITE
            or --invite-file FILE keep it out of the process list and the shell history;
            --invite TOKEN is there too. It is checked before the code is shown.

            --json prints {"account", "device", "server"}; it needs --recovery-file.
            """)

    @OptionGroup var server: ServerOptions

    @OptionGroup var invitation: InviteOptions

    @OptionGroup var device: DeviceNameOption
    var name: String { device.name }

    @OptionGroup var recovery: NewCodeOptions

    @OptionGroup var seal: PassphraseOption
    @OptionGroup var options: HomeOptions

    func run() async throws {
        let transport = try options.transport(for: server.server)  // before any prompt
        let storage = options.storage
        if try storage.holdsDevice {
            throw KeyctlError(.invalidInput, "\(storage.location) already holds a device", hint: "run `keyctl status`, or pick another directory with --home")
        }
        let passphrase = try seal.newPassphrase()
        let invite = try invitation.token
        try await Vault.checkServer(try server.url, invite: invite, transport: transport)
        let code = try recovery.newCode(json: options.json)
        let vault = try await Vault.create(server: try server.url, deviceName: name, recoveryCode: code, storage: storage,
                                           transport: transport, invite: invite, parameters: recovery.kdf, passphrase: passphrase,
                                           progress: options.progress)
        options.result(["account": vault.account.rawValue, "device": vault.device.rawValue, "server": server.server], """
            Account \(vault.account) created; this device is \(vault.device) (\(name)).
            Add another device with:  keyctl device link --server \(server.server)\(options.insecureHTTP ? " --insecure-http" : "") --account \(vault.account) --name NAME

            """)
    }
}

/// The invite token of a server that takes new accounts by invitation (`init`, `account import`).
struct InviteOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The server's invite token, if it takes new accounts by invitation (KEYCTL_INVITE or --invite-file keep it out of the process list).",
                               valueName: "token"))
    var invite: String?
    @Option(help: ArgumentHelp("A file holding the server's invite token (its first line).", valueName: "file"))
    var inviteFile: String?

    var token: String? {
        get throws {
            if let invite, !invite.isEmpty { return invite }
            if let inviteFile {
                guard let text = try? String(contentsOfFile: inviteFile, encoding: .utf8),
                      let line = text.split(whereSeparator: \.isNewline).first, !line.isEmpty else {
                    throw KeyctlError(.invalidInput, "--invite-file: \(inviteFile) holds no token", hint: "put the token the operator gave on its first line",
                                      exitCode: .usage)
                }
                return String(line)
            }
            return ProcessInfo.processInfo.environment["KEYCTL_INVITE"].flatMap { $0.isEmpty ? nil : $0 }
        }
    }
}

// MARK: status

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show this device's account, its history of changes and key generations.",
        discussion: """
            Fetches and verifies the account chain, then shows the account, this
            device, the server, how many changes its history holds, the master, recovery and member key
            generations, pending device-link requests and any unfinished rotation.
            Devices and members are named; past 10, the first 5 and how many more.
            Warns about devices the server has not seen for 90 days (KEYCTL_STALE_DAYS
            changes it), with the command that revokes them (`keyctl device prune`).
            --json lists them all, and the unseen devices in "staleDevices".
            """)

    @OptionGroup var options: HomeOptions

    func run() async throws {
        let vault = try await options.openVault()
        let state = try await vault.status()
        let pending = try await vault.pendingLinkRequests()
        let rotation = state.pendingRotation
        // Names need the member keys; where they do not open (an unfinished rotation) ids stand in, and `audit` says why.
        typealias Listed = (id: String, name: String?, generation: UInt32)
        let named: [Listed]? = (try? await vault.members())?.map { (id: $0.id.rawValue, name: $0.name, generation: $0.generation) }
        let members = (named ?? state.memberGenerations.map { (id: $0.key.rawValue, name: nil, generation: $0.value) })
            .sorted { ($0.name ?? "", $0.id) < ($1.name ?? "", $1.id) }
        let active = try await vault.devices().filter(\.isActive)
        let devices = active.filter { $0.id == state.device } + active.filter { $0.id != state.device }
        let sequence = state.chainLength - 1
        var object: [String: Any] = [
            "account": state.account.rawValue, "device": state.device.rawValue, "name": state.deviceName,
            "server": state.server, "head": state.head, "sequence": sequence,
            "masterGeneration": state.masterKeyGeneration, "recoveryGeneration": state.recoveryGeneration,
            "members": members.map { ["id": $0.id, "name": $0.name.map { $0 as Any } ?? NSNull(), "generation": $0.generation] },
            "devices": devices.count,
            "activeDevices": devices.map { ["id": $0.id.rawValue, "name": $0.name, "current": $0.id == vault.device] },
            "pendingLinkRequests": pending.map { ["code": $0.code, "name": $0.deviceName, "device": $0.device.rawValue] },
            "pendingRotation": ["master": rotation.master, "members": rotation.members.map(\.rawValue), "identity": rotation.identity,
                                "ends": rotation.ends.map(\.account.rawValue)],
        ]
        let recovery: String
        switch state.recovery {
        case .missing:
            object["warning"] = "no recovery code is set"
            recovery = "NOT SET: run `keyctl recovery rotate` to set a recovery code"
        case .compromised(let link):
            object["recoveryCompromised"] = link
            object["warning"] = "the recovery code was compromised at link \(link): set a new one with `keyctl recovery rotate`"
            recovery = "COMPROMISED at link \(link) (the device that set it was revoked): run `keyctl recovery rotate` to set a new code"
        case .set(let generation):
            recovery = "generation \(generation)"
        }
        var text = """
            account     \(state.account)
            device      \(state.device) (\(state.deviceName))
            server      \(state.server)
            history     \(sequence + 1) changes, the newest \(state.head.prefix(16))… (`\(KeyctlMain.invokedName) audit log`)
            master key  generation \(state.masterKeyGeneration)
            recovery    \(recovery)
            devices     \(devices.count) active: \(StatusSummary.list(devices.map { $0.name.printable + ($0.id == state.device ? " (this device)" : "") }, more: "`keyctl device list`"))
            members     \(members.isEmpty ? "none" : "\(members.count): " + StatusSummary.list(members.map { ($0.name?.printable ?? "\($0.id.prefix(8))…") + ($0.generation > 1 ? " (generation \($0.generation))" : "") }, more: "`keyctl member list`"))

            """
        let days = try StaleDevices.warningDays
        let stale = try await StaleDevices.find(in: vault, days: days)
        object["staleDevices"] = stale.map { ["id": $0.device.id.rawValue, "name": $0.device.name, "since": Int64(exactly: $0.since.timeIntervalSince1970.rounded(.down)) as Any] }
        if !stale.isEmpty {
            text += "unseen for \(days) days or more: " + stale.map(StaleDevices.describe).joined(separator: "; ")
                + ". If they are lost or no longer used, revoke them: `keyctl device prune --unseen-for \(days)d`\n"
        }
        for request in pending {
            // A pending request's name is the server's word until its SAS is typed: no digits of its choosing.
            text += "link request \(request.code) from \(request.deviceName.printableWithoutDigits.debugDescription): approve with `keyctl device approve \(request.code)`\n"
        }
        if !rotation.ends.isEmpty {
            text += "a revoked device pinned or shared with \(Set(rotation.ends.map(\.account.rawValue)).sorted().joined(separator: ", ")), still in force: run `keyctl master rotate` to end it\n"
        } else if !rotation.isEmpty {
            text += "unfinished rotation: run `keyctl master rotate` to finish it\n"
        }
        options.result(object, text)
    }
}

// MARK: audit

struct Audit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify everything the server holds for this account, or show its key events.",
        subcommands: [Check.self, Log.self],
        defaultSubcommand: Check.self)

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify everything the server holds for this account (what `keyctl audit` alone does).",
            discussion: """
                Replays the whole chain, checks every master key box (signature, recipient,
                one for each active device and the recovery code, none for a revoked
                device at the current generation), reports a recovery code compromised
                by a revocation, opens every member key wrap, and
                compares the server's device list and audit log with the chain.
                Exits 0 when all of it checks out and 1 with each finding otherwise.

                --json prints {"ok", "links", "boxes", "wraps", "auditEntries", "refusals",
                "findings": [{"area", "message"}]}.
                """)

        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let report = try await vault.audit()
            let ok = report.findings.isEmpty
            options.result([
                "ok": ok, "links": report.links, "boxes": report.boxes, "wraps": report.wraps, "auditEntries": report.auditEntries,
                "refusals": report.refusals, "findings": report.findings.map { ["area": $0.area, "message": $0.message] },
            ], ok ? """
                Checked \(report.links) links, \(report.boxes) key boxes, \(report.wraps) member key wraps and \(report.auditEntries) audit entries: all consistent.
                The server refused \(report.refusals) request(s) for this account (`\(KeyctlMain.invokedName) audit log` shows them).

                """ : report.findings.map { "finding (\($0.area.printable)): \($0.message.printable)\n" }.joined())
            guard ok else {
                if !options.json {
                    KeyctlMain.console.writeError("\(KeyctlMain.invokedName): error: the audit found \(report.findings.count) problem(s)\n")
                    if report.findings.contains(where: { $0.area == "recovery" }) {
                        KeyctlMain.console.writeError("\(KeyctlMain.invokedName): hint: set a new recovery code from a device you trust: `\(KeyctlMain.invokedName) recovery rotate`\n")
                    }
                    KeyctlMain.console.writeError("\(KeyctlMain.invokedName): hint: do not trust this server's data until they are explained\n")
                }
                throw ExitCode(KeyctlError.ExitCode.rejected.rawValue)
            }
        }
    }
}

// MARK: account delete

struct Account: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete, reset, export or import the whole account.",
        subcommands: [Delete.self, Reset.self, Export.self, Import.self])

    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Wipe every member, key and attachment, and go on with this device and a new recovery code.",
            discussion: """
                In one step on the server: every other device is revoked, every member is
                removed with its attachments, every share and contact ends, and a new master
                key is sealed to this device and to a new recovery code, shown once (or
                written to --recovery-file) and checked. The old code enrolls nothing any
                more; other devices are refused from their next command and told why. The
                account id stays. Cannot be undone. Asks for confirmation unless --yes.

                --json (with --recovery-file) prints {"account", "revokedDevices",
                "removedMembers", "endedShares", "masterGeneration", "recoveryGeneration"}.
                """)

        @OptionGroup var newCode: NewCodeOptions
        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let status = try await vault.status()
            let others = try await vault.devices().filter { $0.isActive && $0.id != vault.device }.map(\.name.printable)
            try confirm("""
                Reset account \(vault.account)? Revoked: \(others.isEmpty ? "no other device" : others.joined(separator: ", ")). \
                Removed with their attachments: \(status.members) member(s). Every share and verified contact ends (contacts verify \
                again to share). The recovery code is replaced. This cannot be undone.
                """, assumeYes: newCode.yes, what: "resetting the account")
            let code = try newCode.newCode(json: options.json)
            let result: Vault.ResetResult
            do {
                result = try await vault.resetAccount(recoveryCode: code, parameters: newCode.kdf)
            } catch let error where !(error is CancellationError) {
                // An answer lost after the server took the reset: it happened, and this code is the account's now.
                if (try? await vault.sync()) != nil, let done = try? await vault.events().last(where: { $0.kind == "account.reset" }),
                   done.byDevice == vault.device, done.sequence > status.chainLength - 1 {
                    options.result(["account": vault.account.rawValue, "reset": true],
                                   "Account \(vault.account) was reset (its answer was lost on the way). This device and the new recovery code are all it has now.\n")
                    return
                }
                // Not reset: the code shown was never set; a file of it must not look like a working one.
                if let file = newCode.recoveryFile { unlink(file) }
                let reason = (error as? KeyVaultError).map { KeyctlError($0) }
                throw KeyctlError(reason?.code ?? .network, "the account was not reset (\((error as? KeyVaultError)?.message ?? "\(error)")): the recovery code just shown was never set",
                                  hint: "destroy what you wrote of the new code; the old recovery code and every device still work; run `\(KeyctlMain.invokedName) account reset` again",
                                  exitCode: reason?.exitCode ?? .failure)
            }
            options.result([
                "account": vault.account.rawValue, "revokedDevices": result.revokedDevices, "removedMembers": result.removedMembers,
                "endedShares": result.endedShares, "masterGeneration": result.masterGeneration, "recoveryGeneration": result.recoveryGeneration,
            ], """
                Account \(vault.account) was reset: \(result.revokedDevices) other device(s) revoked, \(result.removedMembers) member(s) removed \
                with their attachments, \(result.endedShares) share(s) ended. This device and the new recovery code are all it has now.

                """)
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete everything of the account on the server, then this device's keys.",
            discussion: """
                Deletes the chain, devices, key boxes, wraps, recovery slot, attachments
                and audit log in one transaction; other devices are refused from then on.
                Cannot be undone. Asks for confirmation unless --yes.

                With --old-server URL: deletes only the copy a server the account moved
                away from still holds (`keyctl server move`); the account, its devices and
                this device's keys stay as they are.
                """)

        @Flag(name: .long, help: "Do not ask for confirmation.")
        var yes = false

        @Option(name: .long, help: ArgumentHelp("A server this device moved away from: delete the account's copy there alone.", valueName: "url"))
        var oldServer: String?

        @OptionGroup var options: HomeOptions

        func run() async throws {
            let old = try oldServer.map { try options.transport(for: $0) }
            let vault = try await options.openVault()
            if let oldServer, let old {
                guard let url = URL(string: oldServer) else { throw KeyctlError(.invalidInput, "\(oldServer) is not a URL", exitCode: .usage) }
                try confirm("Delete the copy of account \(vault.account) that \(oldServer) holds? Devices that did not move yet lose their server.",
                            assumeYes: yes, what: "deleting the old copy")
                try await vault.deleteAccount(on: old, server: url)
                options.result(["deleted": vault.account.rawValue, "server": oldServer], "The copy of account \(vault.account) on \(oldServer) was deleted.\n")
                return
            }
            try confirm("Delete account \(vault.account) and everything in it, for every device? This cannot be undone.",
                        assumeYes: yes, what: "deleting the account")
            try await vault.deleteAccount()
            options.result(["deleted": vault.account.rawValue], "Account \(vault.account) was deleted.\n")
        }
    }
}
