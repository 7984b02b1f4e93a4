import Foundation
import KeyVaultCommands
import KeyVaultServer

// `serve` runs its tasks on the server's event loops: set up before any Swift concurrency.
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "serve" { _ = prepareServerProcess() }
exit(await KeyctlMain.run(arguments, root: KeyctlWithServer.self))
