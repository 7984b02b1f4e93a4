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

    /// ``printable`` with every number character (digits of any script, superscripts,
    /// numerals: Unicode's N categories) shown as "#", and runs of
    /// spaces as one: how a server's own words are shown (its refusals, a decoding
    /// error that quotes what it sent) and a name it relays before anything vouches for
    /// it. People type codes they read off a device's screen (a link's confirmation
    /// code, device link version 4), and a server can compute the one a new device
    /// expects: no words of its choosing may show one, nor pad a line so that the
    /// terminal starts a new one where it likes.
    public var printableWithoutDigits: String {
        var out = String.UnicodeScalarView(), spaced = false
        for scalar in printable.unicodeScalars {
            // Blank characters that are not whitespace (a Braille blank, Hangul fillers) pad a line as well.
            let space = scalar.properties.isWhitespace || ["\u{2800}", "\u{3164}", "\u{FFA0}", "\u{115F}", "\u{1160}"].contains(scalar)
            if space && spaced { continue }
            spaced = space
            out.append([.decimalNumber, .otherNumber, .letterNumber].contains(scalar.properties.generalCategory) ? "#" : space ? " " : scalar)
        }
        return String(out)
    }

    /// The whole text made safe for a terminal, as ``printable`` without the cut;
    /// with `keepingNewlines`, line feeds stay (for output the app laid out itself).
    public func terminalSafe(keepingNewlines: Bool = false) -> String {
        String(String.UnicodeScalarView(unicodeScalars.map {
            ($0.properties.generalCategory == .control && !(keepingNewlines && $0 == "\n")) || $0.properties.isBidiControl ? "?" : $0
        }))
    }
}
