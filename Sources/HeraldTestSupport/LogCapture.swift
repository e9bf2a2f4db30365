import Logging
import Synchronization

/// Keeps the last log lines of the loggers made from it, at every level, so that a test that fails
/// on a timing it cannot see (a group's rebalance inside librdkafka) can say what the client did.
public final class LogCapture: Sendable {
    private let lines = Mutex<[String]>([])
    private let limit: Int

    public init(keeping limit: Int = 400) {
        self.limit = limit
    }

    /// A logger that records every line here; `trace` carries librdkafka's own debug lines.
    public func logger(label: String) -> Logger {
        var logger = Logger(label: label) { label in Handler(capture: self, label: label) }
        logger.logLevel = .trace
        return logger
    }

    /// The kept lines, oldest first.
    public var recent: [String] { lines.withLock { $0 } }

    fileprivate func append(_ line: String) {
        lines.withLock {
            $0.append(line)
            if $0.count > limit { $0.removeFirst($0.count - limit) }
        }
    }

    private struct Handler: LogHandler {
        let capture: LogCapture
        let label: String
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            let detail = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            capture.append("\(label) \(event.level) \(event.message) \(detail)")
        }
    }
}
