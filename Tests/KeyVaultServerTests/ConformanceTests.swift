import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultPostgres
import Testing
@testable import KeyVaultServer

// What Scripts/conformance.sh (schemathesis against openapi.json) found, pinned in-process.

/// A method a known path does not have is 405 with the methods it has (RFC 9110,
/// 15.5.6), not 404: the path exists. Unknown paths stay 404.
@Test(arguments: StoreBackend.all) func aMethodAKnownPathDoesNotHaveIsRefusedWith405AndAllow(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let account = String(repeating: "ab", count: 16)
        let cases: [(HTTPRequest.Method, String, String)] = [
            (HTTPRequest.Method("TRACE")!, "/health", "GET"),
            (HTTPRequest.Method("TRACE")!, "/v1/accounts", "POST"),
            (.get, "/v1/accounts", "POST"),
            (.put, "/v1/accounts/\(account)", "DELETE"),
            (.patch, "/v1/accounts/\(account)/chain", "GET, POST"),
            (.options, "/v1/accounts/\(account)/recovery", "GET"),
            // A fixed segment is not the parameter beside it: `import` is no account.
            (.delete, "/v1/accounts/import", "POST"),
        ]
        for (method, uri, allow) in cases {
            let response = try await client.execute(uri: uri, method: method)
            #expect(response.status == .methodNotAllowed && errorCode(response) == "method_not_allowed", "\(method) \(uri)")
            #expect(response.headers[.allow] == allow, "\(method) \(uri)")
        }
        for uri in ["/nothing", "/v1/accounts/\(account)/nothing", "/v1"] {
            let response = try await client.execute(uri: uri, method: HTTPRequest.Method("TRACE")!)
            #expect(response.status == .notFound && errorCode(response) == "not_found", "\(uri)")
        }
    }
}
