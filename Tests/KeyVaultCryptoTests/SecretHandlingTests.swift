import Foundation
import Testing
@testable import KeyVaultCrypto

/// A key whose bytes are easy to spot in any rendering (hex, decimal, raw).
func markerKey() throws -> SymmetricKey {
    var bytes = [UInt8](repeating: 0xAB, count: 32)
    return try SymmetricKey(SecureBytes(wiping: &bytes))
}

func renderings(of value: Any) -> [String] {
    var dumped = ""
    dump(value, to: &dumped)
    return [String(describing: value), String(reflecting: value), "\(value)", dumped,
            Mirror(reflecting: value).children.map { "\($0.label ?? ""): \($0.value)" }.joined()]
}

@Test func printingDumpingOrReflectingAKeyShowsNoKeyBytes() throws {
    let key = try markerKey()
    var seedBytes = [UInt8](repeating: 0xAB, count: 32)
    let signing = try Ed25519.PrivateKey(seed: SecureBytes(wiping: &seedBytes))
    var xBytes = [UInt8](repeating: 0xAB, count: 32)
    let agreement = try X25519.PrivateKey(rawRepresentation: SecureBytes(wiping: &xBytes))
    for value in [key, key.bytes, signing, agreement, signing.seed] as [Any] {
        for text in renderings(of: value) {
            #expect(!text.lowercased().contains("abab"), "\(text)")
            #expect(!text.contains("171, 171"), "\(text)")
        }
    }
}

@Test func wipingSourceZeroesIt() {
    var source: [UInt8] = [1, 2, 3, 4]
    let secure = SecureBytes(wiping: &source)
    #expect(source == [0, 0, 0, 0])
    #expect(secure.unprotectedCopy() == [1, 2, 3, 4])
}

@Test func secureBytesCompareByValue() {
    let a = SecureBytes(copying: [1, 2, 3] as [UInt8])
    #expect(a == SecureBytes(copying: [1, 2, 3] as [UInt8]))
    #expect(a != SecureBytes(copying: [1, 2, 4] as [UInt8]))
    #expect(a != SecureBytes(copying: [1, 2] as [UInt8]))
    #expect(SecureBytes(randomCount: 32) != SecureBytes(randomCount: 32))
}

@Test func keyIDIsStableAndDiffersPerKey() throws {
    let key = try markerKey()
    #expect(key.keyID == (try markerKey()).keyID)
    #expect(key.keyID != SymmetricKey().keyID)
    #expect(key.keyID.bytes.count == 16)
}

@Test func hexRoundTripsAndRefusesGarbage() throws {
    #expect(Hex.encode([0x00, 0xff, 0x10]) == "00ff10")
    #expect(try Hex.decode("00FF10") == [0x00, 0xff, 0x10])
    #expect(throws: CryptoError.self) { try Hex.decode("abc") }
    #expect(throws: CryptoError.self) { try Hex.decode("zz") }
}

@Test func aReleasedSecretIsWipedBeforeItsMemoryIsReused() throws {
    // Its own arena: the shared one is used by tests running in parallel, which
    // could take the released slot and write to it before this test looks.
    let arena = SecureArena()
    let slot = try #require(arena.allocate())
    slot.initializeMemory(as: UInt8.self, repeating: 0xAB, count: SecureArena.slotSize)
    arena.release(slot)
    // The slot stays mapped (slabs live as long as their arena), so it can be read.
    #expect(UnsafeRawBufferPointer(start: slot, count: SecureArena.slotSize).allSatisfy { $0 == 0 })
    #expect(arena.allocate() == slot)  // reused, wiped
    // And SecureBytes goes through the shared arena for small secrets.
    let small = SecureBytes(copying: [UInt8](repeating: 0xAB, count: 32))
    #expect(small.unprotectedCopy() == [UInt8](repeating: 0xAB, count: 32))
}

@Test func secretsCanBeMadeAndDroppedFromManyThreadsAtOnce() async {
    await withTaskGroup(of: Bool.self) { group in
        for task in 0..<8 {
            group.addTask {
                (0..<2000).allSatisfy { i in
                    let value = UInt8(truncatingIfNeeded: task &* 31 &+ i)
                    let secret = SecureBytes(copying: [UInt8](repeating: value, count: 1 + i % 64))
                    return secret.unprotectedCopy().allSatisfy { $0 == value }
                }
            }
        }
        for await ok in group { #expect(ok) }
    }
}

@Test func largeSecretsGetTheirOwnGuardedRegion() {
    let big = SecureBytes(randomCount: 4096)
    #expect(big.count == 4096)
    #expect(big == SecureBytes(copying: big.unprotectedCopy()))
}

/// Issue 8 item 7: sizes can come from a server (a sealed box, an envelope), so
/// guarded memory that cannot be had is an error the caller sees, not a crash.
@Test func guardedMemoryThatCannotBeHadThrowsInsteadOfCrashing() throws {
    #expect { try SecureBytes(count: 1 << 60) { _ in } } throws: { error in
        (error as? CryptoError)?.code == .backendFailure && (error as? CryptoError)?.message.contains("guarded memory") == true
    }
    // Ordinary sizes still work afterwards.
    #expect(try SecureBytes(count: 4096) { $0.initializeMemory(as: UInt8.self, repeating: 7) }.count == 4096)
}
