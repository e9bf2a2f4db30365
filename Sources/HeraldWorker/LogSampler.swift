import Logging
import Synchronization

/// Lets through at most ``limit`` log lines of one kind (a dead letter's code, say) per
/// ``interval``; the others are counted, and the next line let through says how many were left
/// out. A flood of poison events is counted in full by the metrics; logged line by line it would
/// be as many writes to the log as events, each blocking the thread that writes it while a slow
/// collector reads.
public final class LogSampler: Sendable {
    public let limit: Int
    public let interval: Duration

    private struct Window {
        var start: ContinuousClock.Instant
        var logged = 0
        var suppressed = 0
    }

    private let windows = Mutex<[String: Window]>([:])

    /// The most kinds kept apart.
    public static let maximumKinds = 256

    public init(limit: Int = 20, interval: Duration = .seconds(10)) {
        self.limit = limit
        self.interval = interval
    }

    /// `metadata` with `suppressed`, how many lines like it were left out before it, if any.
    public static func metadata(_ suppressed: Int, _ metadata: Logger.Metadata) -> Logger.Metadata {
        guard suppressed > 0 else { return metadata }
        var metadata = metadata
        metadata["suppressed"] = "\(suppressed)"
        return metadata
    }

    /// Logs `message` with `metadata` at `level` if a line of `kind` is let through now (see
    /// ``admit(_:now:)``), with how many like it were left out before it.
    public func log(
        _ logger: Logger,
        _ level: Logger.Level,
        kind: String,
        _ message: @autoclosure () -> Logger.Message,
        metadata: @autoclosure () -> Logger.Metadata
    ) {
        guard let suppressed = admit(kind) else { return }
        logger.log(level: level, message(), metadata: Self.metadata(suppressed, metadata()))
    }

    /// Whether a line of `kind` is logged now: `nil` if not (it is counted), otherwise how many of
    /// its kind were left out since the last one logged. Kinds must be few (codes, not values).
    public func admit(_ kind: String, now: ContinuousClock.Instant = .now) -> Int? {
        windows.withLock { windows in
            // Past this many kinds (a provider answering something new each time) they share one.
            let kind = windows[kind] != nil || windows.count < Self.maximumKinds ? kind : MetricLabels.other
            var window = windows[kind] ?? Window(start: now)
            if now - window.start >= interval {
                window.start = now
                window.logged = 0
            }
            defer { windows[kind] = window }
            guard window.logged < limit else {
                window.suppressed += 1
                return nil
            }
            window.logged += 1
            defer { window.suppressed = 0 }
            return window.suppressed
        }
    }
}
