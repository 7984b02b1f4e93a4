import Foundation
import KeyVaultCommands

KeyctlMain.prepare(Array(CommandLine.arguments.dropFirst()))
exit(await KeyctlMain.run(Array(CommandLine.arguments.dropFirst())))
