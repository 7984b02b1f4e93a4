import Foundation

/// Unix seconds of a date for JSON output, clamped: a time a server or another device
/// chose (2^63 seconds) must not trap the conversion.
func unixSeconds(_ date: Date) -> Int64 {
    let seconds = date.timeIntervalSince1970.rounded(.down)
    return Int64(exactly: seconds) ?? (seconds > 0 ? Int64.max : Int64.min)
}

/// Sizes as people read them: `3.0 kB`, `10 MB`, `1.2 GB` (powers of 1000, as file
/// managers show them), bytes below 1000.
enum ByteCount {
    static func text(_ bytes: Int) -> String {
        let units = ["kB", "MB", "GB", "TB"]
        guard bytes >= 1000 else { return "\(bytes) bytes" }
        var value = Double(bytes) / 1000, unit = 0
        while value >= 1000, unit < units.count - 1 { value /= 1000; unit += 1 }
        return value >= 100 || value == value.rounded() && value >= 10
            ? "\(Int(value.rounded())) \(units[unit])" : String(format: "%.1f", value) + " " + units[unit]
    }
}
