import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultStore

/// Devices by id, in memory. This process is the only writer of the devices table,
/// and it updates the cache after every commit that adds, revokes or deletes a
/// device, so a revocation takes effect on the very next request.
///
/// Revocation is monotonic here: a request reads its copy of a device, then may
/// suspend (a database write) before it would write anything back, and a
/// revocation can commit meanwhile. So nothing writes a whole copy back over a
/// cached entry's revocation: `put` keeps any revocation already known (also one
/// of a device that was not cached when it was revoked), and last-seen is updated
/// in place by `touch`.
final class DeviceCache: Sendable {
    private struct Entries {
        var devices: [DeviceID: StoredDevice] = [:]
        /// Every revocation this process committed, cached device or not: a copy read
        /// from the database just before the commit may be put just after it.
        var revocations: [DeviceID: (account: AccountID, sequence: UInt64)] = [:]
    }
    private let entries = Locked(Entries())

    func get(_ id: DeviceID) -> StoredDevice? {
        entries.withLock { $0.devices[id] }
    }

    /// Caches `device`, never clearing a revocation already known.
    func put(_ device: StoredDevice) {
        var device = device
        entries.withLock { entries in
            let known = [entries.devices[device.id]?.revoked, entries.revocations[device.id]?.sequence, device.revoked].compactMap { $0 }
            device.revoked = known.min()
            if let cached = entries.devices[device.id]?.lastSeen { device.lastSeen = max(cached, device.lastSeen ?? cached) }
            entries.devices[device.id] = device
        }
    }

    /// Records that `id` was revoked by link `sequence` (the first revocation stands).
    func revoke(_ id: DeviceID, of account: AccountID, at sequence: UInt64) {
        entries.withLock { entries in
            if entries.revocations[id] == nil { entries.revocations[id] = (account, sequence) }
            if entries.devices[id] != nil, entries.devices[id]?.revoked == nil { entries.devices[id]?.revoked = sequence }
        }
    }

    /// Updates only the last-seen time of the cached entry.
    func touch(_ id: DeviceID, at time: Int64) {
        entries.withLock { entries in
            if let entry = entries.devices[id] { entries.devices[id]?.lastSeen = max(entry.lastSeen ?? time, time) }
        }
    }

    /// Forgets a deleted account's devices: the same genesis may found it again.
    func removeAccount(_ account: AccountID) {
        entries.withLock { entries in
            entries.devices = entries.devices.filter { $0.value.account != account }
            entries.revocations = entries.revocations.filter { $0.value.account != account }
        }
    }
}
