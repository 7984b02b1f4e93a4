import Foundation
import KeyVault
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultTestSupport
import Testing

// Issue 8 item 7: a dishonest server cannot make the client burn unbounded time and
// memory on Argon2id. Each test checks the honest path too.

@Test func aRecoverySlotAskingForMoreThanTheArgon2idCeilingIsRefusedBeforeAnyWork() async throws {
    try await Fixture.run { fixture, laptop in
        let ceiling = Argon2id.Parameters.ceiling
        fixture.transport.tamper(rewriting("/recovery", as: RecoverySlot.self) { slot in
            slot.iterations = ceiling.iterations + 1
        })
        await expectRefusal("kdf_above_ceiling") {
            _ = try await Vault.enrollWithRecoveryCode(home: fixture.home("phone"), server: "test", transport: fixture.transport,
                                                       account: laptop.account, name: "phone", code: fixture.code)
        }
        fixture.transport.tamper(rewriting("/recovery", as: RecoverySlot.self) { slot in
            slot.memoryKiB = ceiling.memoryKiB + 1024
        })
        do {
            _ = try await Vault.enrollWithRecoveryCode(home: fixture.home("phone"), server: "test", transport: fixture.transport,
                                                       account: laptop.account, name: "phone", code: fixture.code)
            Issue.record("a slot above the memory ceiling was used")
        } catch let error as KeyVaultError {
            #expect(error.code == .kdfAboveCeiling && error.kind == .verification, "\(error)")
            #expect(error.message.contains("t=\(ceiling.iterations)") && error.message.contains("m=\(ceiling.memoryKiB) KiB"), "\(error.message)")
        }
        fixture.transport.tamper(nil)
        _ = try await Vault.enrollWithRecoveryCode(home: fixture.home("phone"), server: "test", transport: fixture.transport,
                                                   account: laptop.account, name: "phone", code: fixture.code)
    }
}

@Test func aSealedHomeAskingForMoreThanTheArgon2idCeilingIsRefused() async throws {
    let scratch = try TemporaryDirectory("kv-home")
    let directory = scratch.url("home")  // made by the first save
    let home = DeviceHome(directory: directory.path)
    home.passphrase = SecureBytes(copying: Array("correct horse".utf8))
    try home.save(DeviceRecord(server: "http://127.0.0.1:1", account: AccountID(unchecked: String(repeating: "a", count: 32)), name: "laptop",
                               head: "", sequence: 0, enrolled: true, keys: DeviceKeys()))
    let file = directory.path + "/device.json"
    let honest = try String(contentsOfFile: file, encoding: .utf8)
    let ceiling = Argon2id.Parameters.ceiling
    let greedy = try NSRegularExpression(pattern: #""iterations"\s*:\s*\d+"#).stringByReplacingMatches(
        in: honest, range: NSRange(honest.startIndex..., in: honest), withTemplate: "\"iterations\":\(ceiling.iterations + 1)")
    #expect(greedy != honest)
    try greedy.write(toFile: file, atomically: true, encoding: .utf8)
    let reader = DeviceHome(directory: directory.path)
    reader.passphrase = SecureBytes(copying: Array("correct horse".utf8))
    #expect { try reader.load() } throws: { error in
        guard let error = error as? KeyVaultError else { return false }
        return error.code == .kdfAboveCeiling && error.kind == .verification && error.message.contains("t=\(ceiling.iterations)")
    }
    try honest.write(toFile: file, atomically: true, encoding: .utf8)
    _ = try reader.load()
}
