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



extension String {
    /// Text keyctl did not write (names from the account chain, the server's words)
    /// made safe for a terminal: control characters (an escape sequence could rewrite
    /// what the person sees) and bidirectional overrides (which make text read other
    /// than it is) become "?", and it is cut at 500 characters.
    var printable: String { String(prefix(500)).terminalSafe() }

    /// The whole text made safe for a terminal, as ``printable`` without the cut;
    /// with `keepingNewlines`, line feeds stay (for output keyctl laid out).
    func terminalSafe(keepingNewlines: Bool = false) -> String {
        String(String.UnicodeScalarView(unicodeScalars.map {
            ($0.properties.generalCategory == .control && !(keepingNewlines && $0 == "\n")) || $0.properties.isBidiControl ? "?" : $0
        }))
    }
}
