import HeraldEvents
import HeraldPolicy
import Logging

/// How long the ledgers remember, and how often what is older is deleted.
///
/// The decision ledger is what makes a redelivered event count once; the delivery ledger what keeps
/// a redelivered outbound message from being sent twice. Both only need to remember as far back as
/// a message can come again, and both grow with every notification until purged. The default keeps
/// a week, Kafka's default retention: anything the brokers can still redeliver is still known.
public struct PurgeSchedule: Sendable, Equatable {
    /// Entries older than this are deleted.
    public var retention: Duration
    /// How often a purge runs; zero: never (when an operator purges by other means).
    public var interval: Duration

    public init(retention: Duration = .seconds(7 * 86_400), interval: Duration = .seconds(600)) {
        self.retention = retention
        self.interval = interval
    }

    /// Purges at once, then every ``interval``, until the task is cancelled. A purge that fails is
    /// logged and tried again at the next interval: it must never stop the role it runs beside.
    ///
    /// - Parameters:
    ///   - what: the ledger's name in logs.
    ///   - purge: deletes what is older than its argument and returns how many entries it deleted.
    ///   - purged: told how many, for the metrics.
    public func run(
        what: String,
        clock: any HeraldClock,
        logger: Logger,
        purge: @Sendable (Timestamp) async throws -> Int,
        purged: @Sendable (Int) -> Void
    ) async {
        guard interval > .zero else { return }
        while !Task.isCancelled {
            let before = Timestamp(epochMilliseconds: clock.now().epochMilliseconds - retention.milliseconds)
            do {
                let count = try await purge(before)
                purged(count)
                if count > 0 {
                    logger.info("purged \(what)", metadata: ["entries": "\(count)", "before": "\(before)"])
                }
            } catch {
                // Stopping: the store call was interrupted, not failed.
                if Task.isCancelled { return }
                logger.error("purging \(what) failed; trying again later", metadata: ["error": "\(error)"])
            }
            do {
                try await Task.sleep(for: interval)
            } catch {
                return
            }
        }
    }
}
