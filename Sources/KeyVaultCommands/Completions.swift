import ArgumentParser
import Foundation

/// keyctl under the name it is installed as. Debian's keyutils owns `/usr/bin/keyctl`,
/// its completions and its man page, so ours are made for the name a person runs
/// (README, "Which `keyctl` is this?"): the same command tree, renamed.
struct InstalledKeyctl: ParsableCommand {
    @TaskLocal static var name = "keyctl"

    static var configuration: CommandConfiguration {
        var configuration = KeyctlMain.root.configuration
        configuration.commandName = name
        return configuration
    }

    /// The name this process was started as (`kvctl` for a copy installed as kvctl).
    static var invokedName: String {
        URL(fileURLWithPath: CommandLine.arguments.first ?? "keyctl").lastPathComponent
    }
}

/// `--name`: the command name the output is for.
struct InstalledNameOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The name keyctl is installed as (default: the name it was run as).", valueName: "name"))
    var name: String?

    var resolved: String { name ?? InstalledKeyctl.invokedName }

    func validate() throws {
        guard let name else { return }
        guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
            throw ValidationError("--name must be a command name: ASCII letters, digits, '-', '_' or '.'")
        }
    }
}

struct Completion: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a shell completion script for bash, zsh or fish.",
        discussion: """
            The script completes the name keyctl was run as, or --name: install the
            binary under a name that does not clash with keyutils' /usr/bin/keyctl,
            then, for example as kvctl:

              kvctl completion bash > ~/.local/share/bash-completion/completions/kvctl
              kvctl completion zsh  > ~/.local/share/zsh/site-functions/_kvctl   # in $fpath
              kvctl completion fish > ~/.config/fish/completions/kvctl.fish
            """)

    @Argument(help: ArgumentHelp("bash, zsh or fish.", valueName: "shell"), completion: .list(["bash", "zsh", "fish"]))
    var shell: String

    @OptionGroup var installed: InstalledNameOption

    func validate() throws {
        guard CompletionShell(rawValue: shell) != nil else { throw ValidationError("the shell must be bash, zsh or fish") }
    }

    func run() throws {
        KeyctlMain.console.write(Self.script(for: CompletionShell(rawValue: shell)!, name: installed.resolved))
    }

    /// argument-parser's script for `shell`, for keyctl installed as `name`, ending in a newline.
    static func script(for shell: CompletionShell, name: String) -> String {
        let script = InstalledKeyctl.$name.withValue(name) { InstalledKeyctl.completionScript(for: shell) }
        return script.hasSuffix("\n") ? script : script + "\n"
    }
}

struct Manual: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print keyctl's manual page (roff), made from its commands' help.",
        discussion: """
            For example, installed as kvctl:

              kvctl manual > ~/.local/share/man/man1/kvctl.1
            """)

    @OptionGroup var installed: InstalledNameOption

    func run() throws {
        KeyctlMain.console.write(try ManualPage.render(name: installed.resolved))
    }
}
