import KeyVault
import KeyVaultMnemonic

/// The check that a new recovery code was written down (`init`, `recovery rotate`,
/// `device revoke`): a few of its words, at random positions, asked back.
///
/// On a terminal the words must leave the screen first, or the check proves only
/// that the person can read; and a typo should cost a retry, not the account being
/// made. Piped input keeps the plain contract scripts rely on: one line per asked
/// word, and the first wrong line fails.
enum WrittenCopyCheck {
    /// How many of the code's words are asked.
    static let questions = 3
    /// How many times, in all, each asked word may be typed on a terminal.
    static let attempts = 3
    /// Cursor home, clear the screen, clear the scrollback (ECMA-48 ED 2, xterm's ED 3).
    static let clearScreen = "\u{1B}[H\u{1B}[2J\u{1B}[3J"

    /// Asks for words of `code` back.
    ///
    /// - Parameters:
    ///   - wasShown: whether the words were just written to standard output (not to a file).
    /// - Throws: `invalid_recovery_code` (exit 1) when a word is still wrong after its
    ///   last attempt; the caller has changed nothing yet.
    static func ask(_ code: RecoveryCode, wasShown: Bool, console: any Console) throws {
        let interactive = console.inputIsTerminal
        if wasShown, interactive, console.outputIsTerminal {
            // Nothing typed here is kept or shown: a person may start typing words.
            var enter = try console.readSecretLine(prompt: "When the words are on paper, press Enter to clear them from the screen. ") ?? []
            SecureBytes.wipe(&enter)
            console.write(clearScreen)
        }
        var positions = Array(1...RecoveryCode.wordCount)
        var rng = SystemRandomNumberGenerator()
        positions.shuffle(using: &rng)
        for position in positions.prefix(questions).sorted() {
            let mismatch = KeyctlError(.invalidRecoveryCode, "word #\(position) does not match; nothing was changed",
                                       hint: "run the command again for a new code to write down (or add --yes to skip the check)", exitCode: .rejected)
            for attempt in 1...(interactive ? attempts : 1) {
                // End of input (Ctrl-D) ends the check: no further answer can come.
                guard var answer = try console.readSecretLine(prompt: "To check your copy, word #\(position): ") else { throw mismatch }
                defer { SecureBytes.wipe(&answer) }
                if code.isWord(String(decoding: answer, as: UTF8.self), at: position) { break }
                let left = (interactive ? attempts : 1) - attempt
                guard left > 0 else { throw mismatch }
                console.writeError("That is not word #\(position) of your copy: \(left) attempt\(left == 1 ? "" : "s") left.\n")
            }
        }
    }
}
