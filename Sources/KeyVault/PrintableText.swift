extension String {
    /// Text from the server or from another device (a device or member name, a
    /// refusal's words) made safe to show on a terminal or in a log: control
    /// characters (an escape sequence could rewrite what the person sees) and
    /// bidirectional overrides (which make text read other than it is) become "?",
    /// and it is cut at 500 characters. KeyVault's own error messages quote such
    /// text only this way.
    public var printable: String {
        String(prefix(500)).terminalSafe()
    }

    /// The whole text made safe for a terminal, as ``printable`` without the cut;
    /// with `keepingNewlines`, line feeds stay (for output the app laid out itself).
    public func terminalSafe(keepingNewlines: Bool = false) -> String {
        String(String.UnicodeScalarView(unicodeScalars.map {
            ($0.properties.generalCategory == .control && !(keepingNewlines && $0 == "\n")) || $0.properties.isBidiControl ? "?" : $0
        }))
    }
}
