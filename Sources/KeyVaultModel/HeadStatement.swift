/// A device's signed word of the newest head of its account's chain it has seen, and
/// when (docs/formats/head-statement.md). Other accounts read a contact's statements
/// beside its chain: a server that freezes what one account sees of another is caught
/// once every statement it can show is older than the freshness window.
package struct HeadStatement: Sendable, Codable, Equatable {
    /// Format version: 1.
    package var version: Int
    package var account: AccountID
    /// The device that signed it.
    package var device: DeviceID
    /// The sequence number and hash (64 hex) of the chain's head as the device saw it.
    package var sequence: UInt64
    package var head: String
    /// Unix seconds, by the device's clock, when it signed.
    package var time: Int64
    /// Base64 Ed25519 signature by the device over the signed bytes.
    package var signature: String

    package init(version: Int = 1, account: AccountID, device: DeviceID, sequence: UInt64, head: String, time: Int64, signature: String = "") {
        self.version = version
        self.account = account
        self.device = device
        self.sequence = sequence
        self.head = head
        self.time = time
        self.signature = signature
    }
}
