import Foundation
import KeyVault
import KeyVaultMnemonic
import KeyVaultModel
import KeyVaultTestSupport
import Testing
@testable import KeyVaultCommands

// Issue 8 item 6: plain http:// only to loopback unless --insecure-http.

/// A server that is never there: proves a command got past its checks to the network.
struct UnreachableStub: HTTPTransport {
    func send(_ request: HTTPExchange) async throws -> HTTPReply {
        throw KeyVaultError(.network, "the stub transport was reached with \(request.method) \(request.target)")
    }
}

@Test func plainHTTPToAnythingButLoopbackIsAUsageErrorThatSaysWhy() async throws {
    let account = String(repeating: "ab", count: 16)
    for server in ["http://example.org", "http://192.168.1.10:8080", "http://127.0.0.1.example.org", "http://[2001:db8::1]:8080"] {
        for command in [["init", "--server", server, "--name", "laptop", "--yes"],
                        ["device", "enroll", "--server", server, "--account", account, "--name", "phone"],
                        ["device", "link", "--server", server, "--account", account, "--name", "phone"]] {
            for json in [false, true] {
                let scratch = try TemporaryDirectory("kv-empty")
                let home = scratch.path("home")  // not made: no device lives there yet
                let (code, out, err) = await KeyctlMain.$transport.withValue({ _ in UnreachableStub() }) {
                    await runKeyctl(command + ["--home", home] + (json ? ["--json"] : []), input: "")
                }
                #expect(code == 64, "\(command) \(err)")
                #expect(err.contains("--insecure-http") && err.contains("metadata") && err.contains("loopback"), "\(err)")
                #expect(!err.contains("stub transport"), "\(err)")
                if json { #expect(out.contains(#"{"error":{"#) && out.contains(#""code":"insecure_http""#), "\(out)") }
                #expect(!FileManager.default.fileExists(atPath: home + "/device.json"))
            }
        }
    }
}

@Test func plainHTTPToLoopbackOrWithInsecureHTTPReachesTheServer() async throws {
    for (server, extra) in [("http://127.0.0.1:8080", [String]()), ("http://127.45.6.7:8080", []), ("http://localhost:8080", []),
                            ("http://[::1]:8080", []), ("https://example.org", []), ("http://example.org", ["--insecure-http"])] {
        let scratch = try TemporaryDirectory("kv-empty")
        let home = scratch.path("home")  // not made: no device lives there yet
        let (code, _, err) = await KeyctlMain.$transport.withValue({ _ in UnreachableStub() }) {
            await runKeyctl(["init", "--server", server, "--name", "laptop", "--yes", "--home", home] + extra)
        }
        #expect(code == 2 && err.contains("stub transport was reached"), "\(server): \(err)")
    }
}

@Test func aSavedPlainHTTPServerIsRefusedUnlessInsecureHTTPIsGiven() async throws {
    let scratch = try TemporaryDirectory("kv-empty")
    let home = scratch.path("home")  // not made: no device lives there yet
    try DeviceHome(directory: home).save(DeviceRecord(server: "http://example.org:8080", account: AccountID(rawValue: String(repeating: "ab", count: 16))!,
                                                      name: "laptop", head: "", sequence: 0, enrolled: true, keys: DeviceKeys()))
    let refused = await KeyctlMain.$transport.withValue({ _ in UnreachableStub() }) { await runKeyctl(["status", "--home", home]) }
    #expect(refused.0 == 64 && refused.2.contains("--insecure-http") && !refused.2.contains("stub transport"), "\(refused.2)")
    let allowed = await KeyctlMain.$transport.withValue({ _ in UnreachableStub() }) { await runKeyctl(["status", "--home", home, "--insecure-http"]) }
    #expect(allowed.0 == 2 && allowed.2.contains("stub transport was reached"), "\(allowed.2)")
}

@Test func theURLSessionTransportRefusesPlainHTTPToAnotherHostItself() async throws {
    do {
        _ = try await URLSessionTransport(baseURL: URL(string: "http://example.org")!).send(HTTPExchange(method: "GET", target: "/health"))
        Issue.record("plain HTTP to example.org was sent")
    } catch let error as KeyVaultError {
        #expect(error.code.rawValue == "insecure_http" && error.message.contains("loopback"), "\(error.message)")
    }
    do {  // loopback passes the check and fails only to connect
        _ = try await URLSessionTransport(baseURL: URL(string: "http://127.0.0.1:1")!).send(HTTPExchange(method: "GET", target: "/health"))
    } catch let error as KeyVaultError {
        #expect(error.code == .network, "\(error.message)")
    }
}
