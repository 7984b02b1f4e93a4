import ArgumentParser
import KeyVaultCommands

/// The `keyctl` executable's command tree: the client commands of
/// KeyVaultCommands, which link no server code, and `serve`, which is the server.
/// Client and server meet here only.
struct KeyctlWithServer: AsyncParsableCommand {
    static let configuration = KeyctlMain.configuration(adding: [Serve.self])
}
