import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultModel
import KeyVaultPostgres
import KeyVaultStore
import KeyVaultTestSupport
import Testing
@testable import KeyVaultServer

@Test(arguments: StoreBackend.all) func livenessAndReadinessAnswerWhileTheDatabaseDoes(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let live = try await client.execute(uri: "/health/live", method: .get)
        #expect(live.status == .ok && String(buffer: live.body) == #"{"status":"ok"}"#)
        let ready = try await client.execute(uri: "/health/ready", method: .get)
        #expect(ready.status == .ok && String(buffer: ready.body) == #"{"status":"ready"}"#)
    }
}

/// A database file that stops being a database under the running service: liveness
/// still answers (the process is fine), readiness says 503 without the reason.
@Test func readinessFailsWhenTheDatabaseIsUnusable() async throws {
    let directory = try TemporaryDirectory("kv-ready")
    let path = directory.url.appendingPathComponent("keyvault.sqlite").path
    try await testApplication(onFile: path).test(.router) { client in
        #expect(try await client.execute(uri: "/health/ready", method: .get).status == .ok)
        for suffix in ["", "-wal", "-shm"] {
            try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: path + suffix))
        }
        let ready = try await client.execute(uri: "/health/ready", method: .get)
        #expect(ready.status == .serviceUnavailable)
        #expect(String(buffer: ready.body) == #"{"database":"unreachable","status":"unavailable"}"#)
        #expect(try await client.execute(uri: "/health/live", method: .get).status == .ok)
        let metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
        #expect(metrics.contains("keyvault_database_ready 0.0"))
    }
}

/// What /metrics shows: requests by route template and status, their latency, refusals
/// by error code; never an account id, a device id or a raw path.
@Test(arguments: StoreBackend.all) func metricsCountRequestsByRouteTemplateAndRefusalsByCode(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let phone = TestDevice("phone")
        let state = try await client.createAccount(phone)
        #expect(try await client.signed(phone, .get, "/v1/accounts/\(state.account)/chain").status == .ok)
        let unsigned = try await client.execute(uri: "/v1/accounts/\(state.account)/chain", method: .get)
        #expect(errorCode(unsigned) == "unsigned_request")
        _ = try await client.execute(uri: "/no/such/\(state.account)", method: .get)

        let response = try await client.execute(uri: "/metrics", method: .get)
        #expect(response.status == .ok)
        #expect(response.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
        let text = String(buffer: response.body)
        #expect(text.contains(#"keyvault_http_requests_total{method="GET",route="/v1/accounts/{account}/chain",status="200"} 1"#))
        #expect(text.contains(#"keyvault_http_requests_total{method="GET",route="/v1/accounts/{account}/chain",status="401"} 1"#))
        #expect(text.contains(#"keyvault_http_requests_total{method="POST",route="/v1/accounts",status="201"} 1"#))
        #expect(text.contains(#"keyvault_refusals_total{code="unsigned_request"} 1"#))
        #expect(text.contains(#"keyvault_refusals_total{code="not_found"} 1"#))
        #expect(text.contains(#"route="NotFound""#))
        #expect(text.contains(#"keyvault_http_request_duration_seconds_bucket{method="GET",route="/v1/accounts/{account}/chain",le="#))
        #expect(!text.contains(state.account.rawValue))
        #expect(!text.contains(phone.id.rawValue))
        #expect(!text.contains("/no/such"))
    }
}

/// The same on PostgreSQL (when the run has one): a database that lost the service's
/// tables makes readiness 503 while liveness stays 200.
@Test func readinessFailsWhenPostgreSQLCannotAnswer() async throws {
    guard case .postgres(let url)? = StoreBackend.all.first(where: \.isShared) else { return }
    try await PostgresKeyVaultDatabase.withTemporarySchema(url) { store in
        try await testApplication(database: store).test(.router) { client in
            #expect(try await client.execute(uri: "/health/ready", method: .get).status == .ok)
            try await store.client.query("DROP TABLE devices CASCADE")
            #expect(try await client.execute(uri: "/health/ready", method: .get).status == .serviceUnavailable)
            #expect(try await client.execute(uri: "/health/live", method: .get).status == .ok)
        }
    }
}

/// The `Date` header's form (RFC 9110's own example), and the second it names.
@Test func theDateHeaderIsAnIMFFixdate() {
    #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
    #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
    #expect(HTTPDate.format(1_709_164_799) == "Wed, 28 Feb 2024 23:59:59 GMT")
}

/// Issue 21: a client asks the attachment limit before it seals anything.
@Test func theServiceSaysTheLargestAttachmentItTakes() async throws {
    try await testApplication(.sqlite) { $0.maxAttachmentBytes = 4096 }.test(.router) { client in
        let response = try await client.execute(uri: "/v1/limits", method: .get)
        #expect(response.status == .ok)
        let limits = try JSONDecoder().decode([String: Int].self, from: Data(buffer: response.body))
        #expect(limits == ["maxAttachmentBytes": 4096, "maxWholeAttachmentBytes": 4096, "maxSharedAttachmentBytes": 4096])
    }
}
