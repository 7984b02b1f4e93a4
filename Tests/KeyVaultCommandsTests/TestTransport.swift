import Foundation
import KeyVault
@testable import KeyVaultCommands

/// keyctl's own transport to `server` (AsyncHTTPClient), for the doubles that wrap the
/// real one: what keyctl sends through, and not libcurl's URLSession, which under
/// ThreadSanitizer and a loaded machine let one flooded answer starve the others.
func keyctlTransport(_ server: String) -> any HTTPTransport {
    // A loopback URL the tests made: nothing here can fail.
    try! KeyctlTransport(baseURL: URL(string: server)!, certificateAuthority: nil, allowInsecureHTTP: false)
}
