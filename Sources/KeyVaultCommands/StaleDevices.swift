import ArgumentParser
import Foundation
import KeyVault

/// Devices of the account not seen for a while: a lost or forgotten phone keeps its
/// keys until it is revoked (issue 22, item 4). "Seen" is the server's last-seen time
/// (its word only: enough to suggest, never to decide without the person), or, for a
/// device never seen, when it was added.
enum StaleDevices {
    /// Days after which `status` warns, unless KEYCTL_STALE_DAYS (`90d`, or `90`) says otherwise.
    static var warningDays: Int {
        get throws {
            guard let text = ProcessInfo.processInfo.environment["KEYCTL_STALE_DAYS"], !text.isEmpty else { return 90 }
            guard let days = Days(argument: text) else {
                throw KeyctlError(.invalidInput, "KEYCTL_STALE_DAYS is \(text.printable.debugDescription), not a number of days",
                                  hint: "set it to a number of days from 1, such as 90d, or unset it", exitCode: .usage)
            }
            return days.count
        }
    }

    struct Entry {
        let device: Vault.Device
        /// Last seen, or added when never seen.
        let since: Date
        let seen: Bool
    }

    /// The active devices other than this one unseen for `days` days or more, longest first.
    static func find(in vault: Vault, days: Int, now: Date = Date()) async throws -> [Entry] {
        let seen = try await vault.lastSeen()
        let added = try await vault.addedTimes()
        let cutoff = now.addingTimeInterval(-TimeInterval(days) * 86_400)
        return try await vault.devices().filter { $0.isActive && $0.id != vault.device }.compactMap { device in
            let since = seen[device.id] ?? added[device.id] ?? now
            return since <= cutoff ? Entry(device: device, since: since, seen: seen[device.id] != nil) : nil
        }.sorted { $0.since < $1.since }
    }

    /// `2026-08-27`, in UTC.
    /// With `time`, `2026-08-27 14:02 UTC`.
    static func day(_ date: Date, time: Bool = false) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: date)
        let day = String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
        return time ? day + String(format: " %02d:%02d UTC", parts.hour ?? 0, parts.minute ?? 0) : day
    }

    static func describe(_ entry: Entry) -> String {
        "\(entry.device.name.printable) (\(entry.device.id.rawValue.prefix(8))…), \(entry.seen ? "last seen" : "never seen; added") \(day(entry.since))"
    }
}

/// `90d`: a number of days (a bare number counts as days too).
struct Days: ExpressibleByArgument {
    let count: Int
    init?(argument: String) {
        let digits = argument.hasSuffix("d") ? String(argument.dropLast()) : argument
        guard let count = Int(digits), (1...36_500).contains(count) else { return nil }
        self.count = count
    }
    static var defaultCompletionKind: CompletionKind { .default }
}

extension Device {
    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke every device not seen for a while, in one rotation.",
            discussion: """
                Lists the active devices (other than this one) that the server has not
                seen make a request for --unseen-for days (one never seen: since it was
                added), asks for confirmation unless --yes, then revokes them all and
                rotates every key once, as `keyctl device revoke` does for one device:
                devices they added that were seen since are kept, and what the pruned
                devices pinned or shared ends. Last seen is the server's word: look at
                the list before you confirm. A recovery code one of them set is replaced
                (shown once, or written to --recovery-file).

                Example:
                  keyctl device prune --unseen-for 90d

                --json prints {"revoked": [ids], "kept": [ids], "masterGeneration"}.
                """)

        @Option(help: ArgumentHelp("How long unseen: days, such as 90d.", valueName: "days"))
        var unseenFor: Days

        @OptionGroup var recovery: NewCodeOptions
        @OptionGroup var options: HomeOptions

        func run() async throws {
            let vault = try await options.openVault()
            let stale = try await StaleDevices.find(in: vault, days: unseenFor.count)
            guard !stale.isEmpty else {
                options.result(["revoked": [String](), "kept": [String]()],
                               "No device other than this one is unseen for \(unseenFor.count) days or more.\n")
                return
            }
            // Devices the pruned ones added that are not stale themselves stay.
            let staleIDs = Set(stale.map(\.device.id))
            let all = try await vault.revocationPlan(for: stale.map(\.device))
            let keep = Set(all.targets.map(\.id)).subtracting(staleIDs)
            let plan = try await vault.revocationPlan(for: stale.map(\.device), keeping: keep)
            var listing = "Unseen for \(unseenFor.count) days or more (last seen is the server's word):\n"
                + stale.map { "  \(StaleDevices.describe($0))\n" }.joined()
            if !plan.kept.isEmpty { listing += "Kept (added by them, seen since): " + plan.kept.map { $0.name.printable }.joined(separator: ", ") + "\n" }
            if !plan.ended.isEmpty {
                let names = Dictionary(((try? await vault.members()) ?? []).map { ($0.id, $0.name) }) { first, _ in first }
                listing += "What they pinned or shared ends with them:\n" + plan.ended.map { "  \(Device.Revoke.describe($0, names))\n" }.joined()
            }
            if plan.compromisesRecovery { listing += "One of them set the recovery code: that code stops working, and a new one is shown next.\n" }
            // Listed even with --yes: what is revoked on the server's word is on record.
            if recovery.yes, !options.json { KeyctlMain.console.writeError(listing) }
            try confirm(listing + "Revoke them? They lose access to everything from now on.", assumeYes: recovery.yes, what: "revoking devices")
            let done = try await recovery.carryOut(plan, on: vault, json: options.json)
            let after = try await vault.status()
            options.result(["revoked": done.targets.map(\.id.rawValue), "kept": done.kept.map(\.id.rawValue),
                            "masterGeneration": after.masterKeyGeneration],
                           "Revoked \(done.targets.map { $0.name.printable }.joined(separator: ", ")); master key is now generation \(after.masterKeyGeneration) and every member key was rotated.\n")
        }
    }
}
