import Foundation
import KeyVaultCommands
import KeyVaultServer

// `serve` runs its tasks on the server's event loops: set up before any Swift concurrency.
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "serve" { _ = prepareServerProcess() }
// Errors and hints name the binary as it was run (`kvctl` where Debian's keyutils owns `keyctl`).
let name = URL(fileURLWithPath: CommandLine.arguments.first ?? "keyctl").lastPathComponent
exit(await KeyctlMain.run(arguments, root: KeyctlWithServer.self, invokedAs: name))
