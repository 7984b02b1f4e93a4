import Foundation

/// Unicode's NFKD, as BIP39 specifies it for sentences and passphrases.
///
/// Foundation's `decomposedStringWithCompatibilityMapping` on Linux decomposes
/// correctly but does not always put combining marks in canonical order: a mark
/// that only appears through a compatibility mapping (halfwidth katakana's voiced
/// marks U+FF9E/U+FF9F become U+3099/U+309A, combining class 8) stays after marks
/// of a higher class. Unicode's Canonical Ordering Algorithm is applied here on top:
/// every run of non-starters is stably sorted by combining class (UAX #15, §3.11).
package enum NFKD {
    package static func normalize(_ text: String) -> String {
        var scalars = Array(text.decomposedStringWithCompatibilityMapping.unicodeScalars)
        var start = 0
        while start < scalars.count {
            guard scalars[start].properties.canonicalCombiningClass.rawValue != 0 else {
                start += 1
                continue
            }
            var end = start
            while end < scalars.count, scalars[end].properties.canonicalCombiningClass.rawValue != 0 { end += 1 }
            if end - start > 1 {
                // Stable: marks of equal class keep their order (enumerated offsets break ties).
                let run = scalars[start..<end].enumerated().sorted {
                    let a = $0.element.properties.canonicalCombiningClass.rawValue, b = $1.element.properties.canonicalCombiningClass.rawValue
                    return a != b ? a < b : $0.offset < $1.offset
                }
                scalars.replaceSubrange(start..<end, with: run.map(\.element))
            }
            start = end
        }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars)
        return String(view)
    }
}
