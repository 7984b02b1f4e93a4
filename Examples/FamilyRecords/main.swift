// FamilyRecords: the family story of seed 002 told with KeyVault's public API only.
//
//   swift run FamilyRecords http://127.0.0.1:8080     (with `keyctl serve` running there)
//
// A parent's phone creates the family account and adds Emma; a scan of her vaccine
// card is sealed for her and uploaded. The phone is lost: the parent enrolls a
// laptop with the recovery code, opens the scan there, revokes the phone, and opens
// the scan again under the keys rotated away from the phone.
import Foundation
import KeyVault

@main
struct FamilyRecords {
    static func main() async {
        do {
            try await run()
        } catch let error as KeyVaultError {
            FileHandle.standardError.write(Data("FamilyRecords: \(error.code.rawValue): \(error.message)\n".utf8))
            exit(1)
        } catch {
            FileHandle.standardError.write(Data("FamilyRecords: \(error)\n".utf8))
            exit(1)
        }
    }

    static func step(_ line: String) { print(line) }

    static func run() async throws {
        guard CommandLine.arguments.count == 2, let server = URL(string: CommandLine.arguments[1]) else {
            FileHandle.standardError.write(Data("usage: FamilyRecords SERVER-URL (a running `keyctl serve`)\n".utf8))
            exit(64)
        }

        // The phone: a new account. The app shows the code once; the parent writes it down.
        let recoveryCode = try RecoveryCode.generate()
        let phone = try await Vault.create(server: server, deviceName: "phone", recoveryCode: recoveryCode,
                                           storage: MemoryDeviceStorage())
        step("created account \(phone.account) on the phone")

        let emma = try await phone.addMember(name: "Emma")
        let scan = Array("Vaccination card: Emma, MMR dose 2, 2026-03-14".utf8)
        let upload = try await phone.put(scan, member: emma)
        step("sealed Emma's vaccine card scan (\(upload.size) bytes) at \(upload.address)")

        // The laptop: enrolled with the recovery code the parent wrote down.
        let laptop = try await Vault.enroll(server: server, account: phone.account, deviceName: "laptop",
                                            recoveryCode: try RecoveryCode(phrase: recoveryCode.phrase),
                                            storage: MemoryDeviceStorage())
        let emmaOnLaptop = try await laptop.member(named: "Emma")
        let opened = try await laptop.get(upload.address, member: emmaOnLaptop)
        guard opened.withUnsafeBytes({ Array($0) }) == scan else { throw Failure("the laptop opened other bytes") }
        step("the laptop opened the scan")

        // The phone is lost: revoke it (and anything it added); the keys rotate away from it.
        let plan = try await laptop.revocationPlan(for: try await laptop.device(matching: "phone"))
        let done = try await laptop.revoke(plan, newRecoveryCode: { plan.compromisesRecovery ? try RecoveryCode.generate() : nil })
        step("revoked \(done.targets.map(\.name).joined(separator: ", ")); master key now generation \(try await laptop.status().masterKeyGeneration)")

        let emmaNow = try await laptop.member(named: "Emma")
        let again = try await laptop.get(upload.address, member: emmaNow)
        guard again.withUnsafeBytes({ Array($0) }) == scan else { throw Failure("the scan did not open after the revocation") }
        step("the laptop opened the scan again (Emma's key generation \(emmaNow.generation))")

        // The phone (found again, say) learns it was revoked the next time it fetches the chain.
        do {
            try await phone.sync()
            throw Failure("the revoked phone still reads the account")
        } catch let error as KeyVaultError where error.code == .deviceRevoked {
            step("the phone is refused: \(error.code.rawValue)")
        }
    }
}

struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
