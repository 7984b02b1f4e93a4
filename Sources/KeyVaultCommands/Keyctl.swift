import ArgumentParser
import Foundation
import KeyVault

/// `keyctl`'s client commands, as the root of a command line. The `keyctl`
/// executable adds `serve` (Sources/keyctl): these commands link no server code.
public struct Keyctl: AsyncParsableCommand {
    public static let configuration = KeyctlMain.configuration(adding: [])

    public init() {}
}

extension KeyctlMain {
    /// Every client command, in the order `--help` lists them.
    static let clientCommands: [any ParsableCommand.Type] = [
        Init.self, Status.self, Device.self, Member.self, Contact.self, Shared.self, Master.self, Recovery.self, Attachment.self, Audit.self,
        Account.self, Server.self,
        Completion.self, Manual.self,
    ]

    /// The root command's configuration, with the client commands and `extra` (the
    /// executable's `serve`).
    public static func configuration(adding extra: [any ParsableCommand.Type]) -> CommandConfiguration {
        CommandConfiguration(
            commandName: "keyctl",
            abstract: "KeyVault: zero-knowledge keys for end-to-end encrypted apps.",
            discussion: """
                Recovery codes are 24 words (BIP39) that can rebuild your keys on a new
                device. Generate one, write it down, and check your copy:

                  keyctl recovery generate
                  keyctl recovery quiz

                Run the service (embedded SQLite in the current directory):

                  keyctl serve

                Start an account, then add devices and members:

                  keyctl init --server http://127.0.0.1:8080 --name laptop
                  keyctl member add Alice
                  keyctl attachment put --member Alice scan.pdf
                  keyctl device link --server URL --account ID --name phone

                (the last one on the new device; then `keyctl device approve CODE` on the first).

                Every command takes --home DIR (default $KEYCTL_HOME, else ~/.keyctl) and
                --json (one JSON object per line; the last line is the result).

                Exit codes: 0 success; 1 the answer is no (invalid code, failed quiz or
                audit, SAS mismatch, refused link); 2 the command could not do its work
                (network, files, device home); 3 the server refused the request; 4 this
                device was revoked; 5 the server's answer failed verification (do not trust
                it); 64 the command line is wrong (including plain http:// to a server
                that is not this machine without --insecure-http).

                This is KeyVault's keyctl, not the Linux keyutils tool of the same name:
                run it as ./keyctl or from .build/release/, or check with `keyctl --version`.
                """,
            version: "keyctl (KeyVault) 0.1.0",
            subcommands: clientCommands + extra)
    }
}

/// Runs `keyctl` with `arguments` against `console` and returns the exit code.
/// `main.swift` calls this with the real process; tests call it in-process.
public enum KeyctlMain {
    /// The console a running command uses; set for the duration of one run.
    @TaskLocal package static var console: any Console = StandardConsole()

    /// The command tree of the running command line (``Keyctl``, or the executable's
    /// with `serve`): what `completion` and `manual` describe.
    @TaskLocal static var root: any ParsableCommand.Type = Keyctl.self

    /// `root` is the command tree: the client commands (``Keyctl``), or the
    /// executable's, which adds `serve`.
    public static func run(_ arguments: [String], root: any ParsableCommand.Type = Keyctl.self,
                           console: any Console = StandardConsole(), invokedAs name: String = "keyctl") async -> Int32 {
        await $invokedName.withValue(name) { await run(arguments, root: root, console: console) }
    }

    /// The name keyctl was run as (`kvctl` for a copy installed so): errors and hints say it.
    @TaskLocal static var invokedName = "keyctl"

    private static func run(_ arguments: [String], root: any ParsableCommand.Type, console: any Console) async -> Int32 {
        await $console.withValue(console) {
            await $root.withValue(root) {
                var parsed: (any ParsableCommand.Type)?
                do {
                    var command = try root.parseAsRoot(arguments)
                    parsed = type(of: command)
                    if var asyncCommand = command as? AsyncParsableCommand {
                        try await asyncCommand.run()
                    } else {
                        try command.run()
                    }
                    return KeyctlError.ExitCode.success.rawValue
                } catch let error as KeyctlError {
                    report(error, to: console, json: arguments.contains("--json"))
                    return error.exitCode.rawValue
                } catch let error as KeyVaultError {
                    let error = KeyctlError(error, in: parsed)
                    report(error, to: console, json: arguments.contains("--json"))
                    return error.exitCode.rawValue
                } catch {
                    let code = root.exitCode(for: error).rawValue
                    let message = root.fullMessage(for: error)
                    if message.isEmpty {
                        // An ExitCode a command threw after reporting for itself.
                    } else if code == 0 {
                        console.write(message + "\n")  // --help, --version
                    } else {
                        console.writeError(message.hasSuffix("\n") ? message : message + "\n")
                    }
                    return code
                }
            }
        }
    }

    /// Prints an error. Messages can quote a server (its error text, a field that
    /// did not decode), so everything is made terminal-safe here.
    static func report(_ error: KeyctlError, to console: any Console, json: Bool) {
        // Commands to run are named as this binary was run (a hint says `keyctl status`; kvctl's says `kvctl status`).
        let name = invokedName
        func named(_ text: String) -> String { name == "keyctl" ? text : text.replacingOccurrences(of: "`keyctl ", with: "`\(name) ") }
        let code = error.code.rawValue.terminalSafe(), message = named(error.message.terminalSafe()), hint = error.hint.map { named($0.terminalSafe()) }
        if json {
            var body: [String: Any] = ["code": code, "message": message]
            if let hint { body["hint"] = hint }
            console.write(jsonLine(["error": body]))
        }
        console.writeError("\(name): error: \(message)\n")
        if let hint { console.writeError("\(name): hint: \(hint)\n") }
    }
}
