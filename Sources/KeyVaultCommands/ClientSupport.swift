import ArgumentParser
import Foundation
import KeyVault
import KeyVaultMnemonic

/// Options of every command that works on a device home.
struct HomeOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("This device's home directory (default: $KEYCTL_HOME, else ~/.keyctl).", valueName: "dir"))
    var home: String?

    @Flag(name: .long, help: "Print JSON objects, one per line; the last line is the result.")
    var json = false

    @Flag(name: .long, help: ArgumentHelp(
        "Allow plain http:// to a server that is not this machine.",
        discussion: "Without TLS, the server's host and anyone on the network path see every request's metadata and can rewrite answers, and a device-link exchange would cross the network in the clear. Without this flag, plain http:// reaches only loopback (127.0.0.0/8, ::1, localhost)."))
    var insecureHTTP = false

    @Option(name: .customLong("ca-cert"), help: ArgumentHelp(
        "Trust this certificate authority (a PEM file) for the https:// server, beside the system's (default: $KEYCTL_CA_CERT).",
        discussion: "For a server whose certificate a private CA issued: give that CA's certificate, not the server's key. It is read on every run, never saved in the device home.",
        valueName: "file"))
    var caCertificate: String?

    var directory: String { Self.defaultDirectory(home) }

    /// `--ca-cert`, else `KEYCTL_CA_CERT`, else none.
    var certificateAuthority: String? {
        if let caCertificate, !caCertificate.isEmpty { return caCertificate }
        if let env = ProcessInfo.processInfo.environment["KEYCTL_CA_CERT"], !env.isEmpty { return env }
        return nil
    }

    /// `--home`, else `KEYCTL_HOME`, else `~/.keyctl`.
    static func defaultDirectory(_ option: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let option, !option.isEmpty { return option }
        if let env = environment["KEYCTL_HOME"], !env.isEmpty { return env }
        return (environment["HOME"] ?? NSHomeDirectory()) + "/.keyctl"
    }

    /// How this command reaches `server` (given with --server, or saved in the device
    /// home): plain HTTP only to loopback, unless --insecure-http.
    ///
    /// - Throws: `insecure_http` (exit 64) before anything is read, asked or sent.
    func transport(for server: String) throws -> any HTTPTransport {
        if let url = URL(string: server) {
            do {
                try URLSessionTransport.checkCleartext(url, allowInsecureHTTP: insecureHTTP)
            } catch let error as KeyVaultError {
                throw KeyctlError(error.code, error.message, hint: Hints.hint(for: error), exitCode: .usage)
            }
        }
        return try KeyctlMain.$insecureHTTP.withValue(insecureHTTP) {
            try KeyctlMain.$certificateAuthority.withValue(certificateAuthority) { try KeyctlMain.transport(server) }
        }
    }

    /// Where this device is kept: the home directory.
    var storage: FileDeviceStorage { FileDeviceStorage(directory: directory) }

    /// Asked for the passphrase of a device whose keys are sealed under one: on a
    /// terminal, or from the file named by KEYCTL_PASSPHRASE_FILE.
    var passphrasePrompt: @Sendable () throws -> SecureBytes {
        let console = KeyctlMain.console
        let directory = directory
        return {
            if let path = ProcessInfo.processInfo.environment["KEYCTL_PASSPHRASE_FILE"] {
                return SecureBytes(copying: Array(try Recovery.readPassphrase(at: path).utf8))
            }
            guard console.inputIsTerminal else {
                throw KeyctlError(.invalidInput, "this device's keys are sealed under a passphrase",
                                  hint: "run on a terminal to be asked for it, or set KEYCTL_PASSPHRASE_FILE to a file holding it")
            }
            var line = try console.readSecretLine(prompt: "Passphrase for \(directory) (input hidden): ") ?? []
            defer { SecureBytes.wipe(&line) }
            return SecureBytes(copying: line)
        }
    }

    /// Progress lines on a terminal's standard error; nothing with --json or when piped.
    var progress: ProgressReporter {
        guard let lines = progressLines else { return { _ in } }
        return { lines.report($0) }
    }

    /// The same, for a command that ends a countdown it showed (``ProgressLines/end()``).
    var progressLines: ProgressLines? {
        let console = KeyctlMain.console
        guard !json, console.errorIsTerminal else { return nil }
        return ProgressLines(console: console)
    }

    /// Opens this device's vault and, unless `tellingChanges` is false, first tells what
    /// other devices changed since it last looked (``AccountLog/tell(_:options:)``), once.
    /// `offline`: from the chain this device kept, without its server (`server move`, when that server is gone).
    func openVault(tellingChanges: Bool = true, offline: Bool = false) async throws -> Vault {
        let vault = try await Vault.open(storage: storage, offline: offline, passphrase: passphrasePrompt, progress: progress,
                                         transportFor: { try transport(for: $0.absoluteString) })
        if tellingChanges {
            do {
                AccountLog.tell(try await vault.untoldEvents(), options: self)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                // Telling is a courtesy: a home that cannot be saved now fails the command's own step, with its error.
            }
        }
        return vault
    }

    /// Writes the result: JSON with --json, else the text.
    func result(_ object: [String: Any], _ text: @autoclosure () -> String) {
        let console = KeyctlMain.console
        // The text quotes names from other devices and the server: no terminal controls get through.
        if json { console.write(jsonLine(object)) } else { console.write(text().terminalSafe(keepingNewlines: true)) }
    }
}

/// Options of the commands that reach a server before the device has a home.
struct ServerOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The KeyVault server, e.g. https://keys.example.org, or http://127.0.0.1:8080 on this machine (plain http:// elsewhere needs --insecure-http).", valueName: "url"))
    var server: String

    func validate() throws {
        guard let url = URL(string: server), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
            throw ValidationError("--server must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:8080")
        }
    }

    /// --server as the URL `validate()` checked.
    var url: URL {
        get throws {
            guard let url = URL(string: server) else { throw KeyctlError(.invalidInput, "\(server) is not a URL", exitCode: .usage) }
            return url
        }
    }
}

extension KeyctlMain {
    /// --insecure-http of the command building a transport (see `HomeOptions.transport(for:)`),
    /// so that the real transport checks it again itself.
    @TaskLocal static var insecureHTTP = false

    /// --ca-cert (or KEYCTL_CA_CERT) of the command building a transport.
    @TaskLocal static var certificateAuthority: String?

    /// How commands reach a server; tests may replace it for one run. Commands call
    /// it through `HomeOptions.transport(for:)`, which refuses plain HTTP first.
    /// ``KeyctlTransport`` (AsyncHTTPClient), trusting `certificateAuthority` too when one is given.
    @TaskLocal static var transport: @Sendable (String) throws -> any HTTPTransport = { server in
        guard let url = URL(string: server) else { throw KeyctlError(.invalidInput, "\(server) is not a URL") }
        return try KeyctlTransport(baseURL: url, certificateAuthority: certificateAuthority, allowInsecureHTTP: insecureHTTP)
    }
}

extension KeyctlError {
    /// The exit code and advice for a client failure of `command` (``Hints``), unless
    /// the command gives its own `hint`.
    init(_ error: KeyVaultError, in command: (any ParsableCommand.Type)? = nil, hint: String? = nil) {
        let exit: ExitCode = switch error.kind {
        case .rejected: .rejected
        case .network, .home, .input: .failure
        case .server: .serverRefused
        case .revoked: .revoked
        case .verification: .untrusted
        }
        self.init(error.code, error.message, hint: hint ?? Hints.hint(for: error, in: command), exitCode: exit)
    }
}

/// Asks a yes/no question on the terminal; `assumeYes` answers for scripts.
func confirm(_ question: String, assumeYes: Bool, what: String) throws {
    if assumeYes { return }
    let console = KeyctlMain.console
    guard console.inputIsTerminal else {
        throw KeyctlError(.invalidInput, "\(what) needs a confirmation", hint: "answer on a terminal, or add --yes", exitCode: .usage)
    }
    // Questions quote names from other devices and the server: no terminal controls get through.
    console.writeError(question.terminalSafe(keepingNewlines: true) + " [y/N] ")
    let answer = String(decoding: try console.readLine() ?? [], as: UTF8.self).lowercased()
    guard answer == "y" || answer == "yes" else {
        throw KeyctlError(.invalidInput, "not confirmed; nothing was changed", exitCode: .rejected)
    }
}

/// Reads a recovery code from standard input or a hidden prompt.
func readRecoveryCode(prompt: String = "Recovery code (input hidden; Enter alone to type it word by word): ") throws -> RecoveryCode {
    var phrase = try Recovery.readPhrase(from: KeyctlMain.console, prompt: prompt, words: RecoveryCode.wordCount)
    defer { SecureBytes.wipe(&phrase) }
    let code: Mnemonic
    do {
        code = try Mnemonic(utf8: phrase)
    } catch let error as MnemonicError {
        // Positions only: the candidate words `recovery verify` shows are likely words of
        // this code, which is being used here, not checked (SECURITY.md).
        throw KeyctlError(.invalidRecoveryCode, "that is not a valid recovery code: \(error.message)",
                          hint: Recovery.positionHint(for: error), exitCode: .rejected)
    }
    do {
        return try RecoveryCode(bip39: code)
    } catch {
        throw KeyctlError(.invalidRecoveryCode, "a recovery code has \(RecoveryCode.wordCount) words; this one has \(code.wordCount)",
                          hint: "type every word of the code, in order, separated by spaces", exitCode: .rejected)
    }
}

/// Shows a new recovery code once, or writes it to a file (0600); then, unless
/// `skipQuiz`, asks for a few of its words back.
func deliverRecoveryCode(_ code: RecoveryCode, file: String?, json: Bool, skipQuiz: Bool) throws {
    let console = KeyctlMain.console
    if let file {
        let fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw KeyctlError(.io, "cannot create \(file): \(String(cString: strerror(errno)))",
                              hint: "the file must not exist yet (a recovery code is never overwritten)")
        }
        var bytes = Array((code.phrase + "\n").utf8)
        defer { SecureBytes.wipe(&bytes) }
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == bytes.count, synced else { throw KeyctlError(.io, "cannot write the recovery code to \(file)") }
        if !json { console.writeError("The recovery code was written to \(file) (mode 0600). Print it, store it offline, then delete the file.\n") }
    } else if json {
        throw KeyctlError(.invalidInput, "with --json the recovery code goes to a file", hint: "add --recovery-file FILE", exitCode: .usage)
    } else {
        console.write("Your recovery code (24 words):\n\n" + Recovery.numberedGrid(code.words) + """

            Write these words on paper, in order, and keep them safe. They are shown only
            this once. Anyone who has them can open your vault; nobody can give them back.

            """)
    }
    guard !skipQuiz else { return }
    do {
        try WrittenCopyCheck.ask(code, wasShown: file == nil, console: console)
    } catch {
        if let file { unlink(file) }  // the code was not set: its file must not look like a working one
        throw error
    }
}

/// `--passphrase`: seal the new device's keys under a local passphrase.
struct PassphraseOption: ParsableArguments {
    @Flag(name: .long, help: "Seal this device's keys under a passphrase (asked on the terminal, or read from the file in KEYCTL_PASSPHRASE_FILE).")
    var passphrase = false

    /// Asks for the passphrase (twice on a terminal); nil without --passphrase.
    func newPassphrase() throws -> SecureBytes? {
        guard passphrase else { return nil }
        return try Self.readNew(from: ProcessInfo.processInfo.environment["KEYCTL_PASSPHRASE_FILE"],
                                asking: "New passphrase for this device's keys (input hidden): ")
    }

    /// A new passphrase: read from `file`, else asked twice on the terminal; at least
    /// ``Vault/minimumPassphraseBytes`` bytes.
    static func readNew(from file: String?, asking prompt: String) throws -> SecureBytes {
        if let path = file {
            let text = try Recovery.readPassphrase(at: path)
            guard text.utf8.count >= Vault.minimumPassphraseBytes else {
                throw KeyctlError(.invalidInput, "the passphrase in \(path) is shorter than \(Vault.minimumPassphraseBytes) bytes", exitCode: .rejected)
            }
            return SecureBytes(copying: Array(text.utf8))
        }
        let console = KeyctlMain.console
        guard console.inputIsTerminal else {
            throw KeyctlError(.invalidInput, "a new passphrase needs a terminal to ask on", hint: "or put it in a file and give the file (KEYCTL_PASSPHRASE_FILE for --passphrase, --new-passphrase-file for device passphrase)", exitCode: .usage)
        }
        var first = try console.readSecretLine(prompt: prompt) ?? []
        var second = try console.readSecretLine(prompt: "Once more: ") ?? []
        defer { SecureBytes.wipe(&first); SecureBytes.wipe(&second) }
        guard first.count >= Vault.minimumPassphraseBytes else {
            throw KeyctlError(.invalidInput, "a passphrase has at least \(Vault.minimumPassphraseBytes) bytes", exitCode: .rejected)
        }
        guard SecureBytes(copying: first) == SecureBytes(copying: second) else { throw KeyctlError(.invalidInput, "the two passphrases differ; nothing was changed", exitCode: .rejected) }
        return SecureBytes(copying: first)
    }
}

/// Where a new recovery code goes and how it is checked (init, recovery rotate, device revoke).
struct NewCodeOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Write the recovery code to this new file (mode 0600) instead of showing it.", valueName: "file"))
    var recoveryFile: String?

    @Flag(name: .long, help: "Do not ask for confirmation, nor for words of the new recovery code back.")
    var yes = false

    @Option(name: .long, help: "Argon2id cost of the recovery code: interactive, recovery, moderate or sensitive.")
    var kdf: RecoveryCost = .recovery

    /// Generates a code, then shows it or writes it, and quizzes unless --yes.
    func newCode(json: Bool) throws -> RecoveryCode {
        let code = try RecoveryCode.generate()
        try deliverRecoveryCode(code, file: recoveryFile, json: json, skipQuiz: yes)
        return code
    }
}

/// Progress on a terminal: a line per step, but a countdown (waiting for a device to
/// answer) rewritten in place, so that what is above it, the code to type on the
/// other device, stays on the screen instead of scrolling away a line a second.
final class ProgressLines: @unchecked Sendable {
    let console: any Console
    // Behind `lock`: reports may come from any task.
    private let lock = NSLock()
    private var inPlace = false

    init(console: any Console) { self.console = console }

    func report(_ progress: Vault.Progress) {
        guard let line = progress.line else { return }
        let text = "… \(line.terminalSafe())"
        if case .waitingForApproval = progress {
            // Back to the line's start, erase it, write: the countdown stays one line.
            console.writeError("\r\u{1B}[2K" + text)
            lock.withLock { inPlace = true }
        } else {
            console.writeError((endsCountdown() ? "\n" : "") + text + "\n")
        }
    }

    /// Ends a countdown line left open, before other output.
    func end() {
        if endsCountdown() { console.writeError("\n") }
    }

    private func endsCountdown() -> Bool {
        lock.withLock {
            defer { inPlace = false }
            return inPlace
        }
    }
}
