import Foundation
import Logging
import Synchronization

/// One JSON object per log line on standard error: `ts` (Unix seconds), `level`, `label`, `msg`, then every metadata key
/// (`request_id` on request logs), so a log pipeline can index them without a parser of its own.
///
/// Thread-safe: lines are written whole under one process-wide lock.
public struct JSONLogHandler: LogHandler {
    private static let output = Mutex(FileHandle.standardError)

    /// The logger's label.
    public let label: String
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level

    /// Creates a handler for `label` at `level`.
    public init(label: String, level: Logger.Level = .info) {
        self.label = label
        self.logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var object: [String: Any] = [
            "ts": (Date().timeIntervalSince1970 * 1000).rounded() / 1000, "level": event.level.rawValue, "label": label,
            "msg": event.message.description,
        ]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            object[key] = Self.json(value)
        }
        guard var line = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        line.append(0x0A)
        Self.output.withLock { $0.write(line) }
    }

    private static func json(_ value: Logger.MetadataValue) -> Any {
        switch value {
        case .string(let string): string
        case .stringConvertible(let convertible): convertible.description
        case .array(let values): values.map(json)
        case .dictionary(let dictionary): dictionary.mapValues(json)
        }
    }
}
