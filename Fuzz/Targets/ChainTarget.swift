import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol

/// Chain links as JSON, replayed one by one. The first byte says whether to repair
/// each link before applying it (bit 1: sign it again with the fixed key of its
/// signer, when there is one; bit 0: also set `previous` and `sequence` to follow the
/// head), so that mutations reach the rules behind the hash chain and the signatures.
enum ChainTarget {
    static let devices = (1...4).map { FixedKeys.signing(UInt8($0)) }
    static let recovery = FixedKeys.signing(0x52)

    /// The number of links accepted.
    static func run(_ data: [UInt8]) throws(FuzzFinding) -> Int {
        guard let flags = data.first,
              let links = try? JSONDecoder().decode([ChainLink].self, from: Data(data.dropFirst())),
              var genesis = links.first
        else { return 0 }
        let (rechain, resign) = (flags & 1 != 0, flags & 3 != 0)
        if resign { sign(&genesis) }
        guard var state = try? ChainState(genesis: genesis) else { return 0 }
        try expect(state.sequence == 0 && state.head == genesis.hash && state.account == genesis.accountID,
                   "a genesis link was accepted into a state that does not start at it")
        var accepted = [genesis]
        for var link in links.dropFirst() {
            if rechain {
                link.previous = state.head
                link.sequence = state.sequence &+ 1
            }
            if resign { sign(&link) }
            let before = state
            do {
                try state.apply(link)
            } catch {
                try expect(state == before, "a refused \(link.type.rawValue) link changed the chain state")
                continue
            }
            try expect(state.sequence == link.sequence && state.head == link.hash,
                       "an accepted link is not the head after it")
            try expect(!state.activeDevices.isEmpty, "a chain was left with no active device")
            accepted.append(link)
        }
        // Replaying what was accepted gives the same state.
        let replayed = try? ChainState(links: accepted)
        try expect(replayed == state, "replaying the accepted links gives another state")
        return accepted.count
    }

    /// Signs with the fixed key whose device (or the recovery key) is the signer.
    static func sign(_ link: inout ChainLink) {
        if link.signer == ChainLink.recoverySigner {
            link.sign(with: recovery)
        } else if let key = devices.first(where: { deviceID(for: $0.publicKey).rawValue == link.signer }) {
            link.sign(with: key)
        }
    }
}
