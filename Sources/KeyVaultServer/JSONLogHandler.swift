import Foundation
import Logging

/// Structured logs: one JSON object per line on standard error, with the time,
/// level, message, source and metadata (the request id among them).
///
/// Setting metadata only stores it (swift-log's stream handler re-renders all of
/// it on every change, which cost several percent of a request); rendering happens
/// when a line is actually written. The service never puts keys, boxes,
/// signatures, bodies or header values into metadata.
package struct JSONLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level = .info
    private let label: String
    private static let lock = NSLock()

    package init(label: String) { self.label = label }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var fields: [String: String] = ["time": Self.timestamp(), "level": event.level.rawValue, "message": event.message.description,
                                        "source": event.source, "logger": label]
        // An attached error is reported by type only: its description could carry request data.
        if let error = event.error { fields["error"] = String(describing: type(of: error)) }
        for (key, value) in self.metadata.merging(event.metadata ?? [:], uniquingKeysWith: { _, new in new }) {
            fields[key] = value.description
        }
        guard var data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        data.append(10)
        Self.lock.lock()
        FileHandle.standardError.write(data)
        Self.lock.unlock()
    }

    private static func timestamp() -> String {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        var tm = tm()
        gmtime_r(&time.tv_sec, &tm)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                      tm.tm_hour, tm.tm_min, tm.tm_sec, time.tv_nsec / 1_000_000)
    }
}
