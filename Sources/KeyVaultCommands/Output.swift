import ArgumentParser
import Foundation

/// Options every command shares.
public struct OutputOptions: ParsableArguments, Sendable {
    @Flag(name: .long, help: "Print JSON objects, one per line; the last line is the result.")
    public var json = false

    public init() {}
}

/// Writes one compact JSON object per line, keys sorted so output is stable.
func jsonLine(_ object: [String: Any]) -> String {
    let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    return String(decoding: data, as: UTF8.self) + "\n"
}
