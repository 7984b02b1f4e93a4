import Foundation
import KeyVaultCommands

exit(await KeyctlMain.run(Array(CommandLine.arguments.dropFirst())))
