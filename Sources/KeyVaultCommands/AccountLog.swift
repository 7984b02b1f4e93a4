import ArgumentParser
import Foundation
import KeyVault

/// The account's key events as a person reads them (issue 22, item 5): told once on
/// the next command of each device (``HomeOptions/openVault(tellingChanges:)``), and
/// all of them in `keyctl audit log`.
enum AccountLog {
    /// `2026-11-25 14:02 UTC  member Alice was added by laptop`.
    static func line(_ event: Vault.AccountEvent) -> String {
        "\(StaleDevices.day(event.time, time: true))  \(event.text)"
    }

    /// What to run when the person did not expect `event`; nil when nothing is to be done.
    static func ifUnexpected(_ event: Vault.AccountEvent) -> String? {
        let keyctl = KeyctlMain.invokedName
        switch event.kind {
        case "device.added":
            return "not you? revoke it: `\(keyctl) device revoke \(event.subjectID?.prefix(8) ?? "ID")`"
        case "device.revoked":
            return "not you? a device of the account did it: see `\(keyctl) device list` and revoke any you do not know"
        case "recovery.replaced":
            return "not you? `\(keyctl) recovery rotate` makes a code only you have; then revoke the device that did it"
        case "member.removed", "account.reset":
            return "not you? a device of the account did it and it cannot be undone: revoke that device (`\(keyctl) device list`)"
        case "member.renamed":
            return "not you? a device of the account did it: rename it back, and revoke that device if you do not know it (`\(keyctl) device list`)"
        case "contact.verified", "share.started":
            return "not you? see `\(keyctl) contact list`, end a share with `\(keyctl) member unshare`, and revoke the device that did it"
        default:
            return nil
        }
    }

    static func json(_ event: Vault.AccountEvent) -> [String: Any] {
        var object: [String: Any] = ["kind": event.kind, "sequence": event.sequence, "time": unixSeconds(event.time),
                                     "by": event.by, "text": event.text]
        if let device = event.byDevice { object["byDevice"] = device.rawValue }
        if let subject = event.subject { object["subject"] = subject }
        if let id = event.subjectID { object["subjectID"] = id }
        if event.signedWithThisDevicesKey { object["signedWithThisDevicesKey"] = true }
        return object
    }

    /// Tells what other devices changed since this one last looked, once: on standard
    /// error as words, or with --json as one line `{"changes": […]}` before the result.
    static func tell(_ events: [Vault.AccountEvent], options: HomeOptions) {
        guard !events.isEmpty else { return }
        let console = KeyctlMain.console
        if options.json {
            console.write(jsonLine(["changes": events.map(json)]))
            return
        }
        var text = "Since this device last looked:\n"
        for event in events {
            text += "  " + line(event) + "\n"
            if event.signedWithThisDevicesKey {
                text += "      signed with THIS device's key, but not from this home: if nobody copied this home on purpose, its keys were taken; revoke this device from another one and enroll it anew\n"
            } else if let hint = ifUnexpected(event) {
                text += "      " + hint + "\n"
            }
        }
        console.writeError(text.terminalSafe(keepingNewlines: true) + "\n")
    }
}

extension Audit {
    struct Log: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the account's key events in plain words.",
            discussion: """
                Every device added or revoked, recovery code set, member added, key renewed
                and share started or ended, oldest first, with the device that did it and
                when (its clock). They come from the account's chain, which this device
                verifies: the server cannot add, hide or reorder one. Below them, the
                requests the server says it refused for this account: its own word,
                which nothing checks.

                --json prints {"events": [{"kind", "sequence", "time", "by", "byDevice",
                "subject", "subjectID", "text"}], "refusals": [{"time", "code", "device",
                "detail"}]}.
                """)

        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault(tellingChanges: false)
            var events = try await vault.events()
            let refusals = try await vault.refusals()
            // All of it is shown here, so it is told; a link a copy of this device's keys made keeps its flag.
            let flagged = Set(try await vault.untoldEvents().filter(\.signedWithThisDevicesKey).map(\.sequence))
            for index in events.indices where flagged.contains(events[index].sequence) { events[index].signedWithThisDevicesKey = true }
            var text = events.map {
                AccountLog.line($0) + ($0.signedWithThisDevicesKey ? "  (signed with THIS device's key, not from this home)" : "") + "\n"
            }.joined()
            if refusals.isEmpty {
                text += "\nThe server records no refused request for this account.\n"
            } else {
                text += "\nThe server says it refused \(refusals.count) request(s) for this account (its word, unchecked):\n"
                for refusal in refusals.suffix(20) {
                    // The server's words: one line each, no control characters (no fake event lines).
                    text += "  \(StaleDevices.day(refusal.time))  \(refusal.code.printableWithoutDigits)"
                        + (refusal.device.map { " from device \($0.prefix(8).description.printable)" } ?? "")
                        + (refusal.detail.map { ": \($0.printableWithoutDigits)" } ?? "") + "\n"
                }
                if refusals.count > 20 { text += "  (the newest 20 shown; --json has them all)\n" }
            }
            options.result([
                "events": events.map(AccountLog.json),
                "refusals": refusals.map { refusal -> [String: Any] in
                    var object: [String: Any] = ["time": unixSeconds(refusal.time), "code": refusal.code]
                    if let device = refusal.device { object["device"] = device }
                    if let detail = refusal.detail { object["detail"] = detail }
                    return object
                },
            ], text)
        }
    }
}
