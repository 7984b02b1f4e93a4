import Foundation

/// Unix seconds of a date for JSON output, clamped: a time a server or another device
/// chose (2^63 seconds) must not trap the conversion.
func unixSeconds(_ date: Date) -> Int64 {
    let seconds = date.timeIntervalSince1970.rounded(.down)
    return Int64(exactly: seconds) ?? (seconds > 0 ? Int64.max : Int64.min)
}
