import HeraldKafka
import Logging
import ServiceLifecycle
import Synchronization

/// Says so, at `warning`, while a consumer of the process holds no connection to any Kafka broker:
/// librdkafka retries a failed connection on its own and reports it only at `info` (a library's
/// level), so a worker started with a wrong `kafka.bootstrap_servers`, or cut off from its cluster,
/// was silent at `warning` while it consumed nothing. Once a consumer has been without a broker for
/// `threshold`, a warning names it, the bootstrap servers and how long; it is repeated every
/// `repeatEvery` while that lasts, and a notice says when a broker answers again.
///
/// Reads the consumers' statistics (``KafkaBrokerConnections``), which need
/// `statistics.interval.ms`; a consumer whose statistics have not arrived yet counts as without a
/// broker since the watch began. Producers are not watched: brokers close a producer's idle
/// connections, and a producer without traffic has none, which is no fault.
public final class KafkaReachability: Service, Sendable {
    /// A consumer to watch: its name in the log (`worker`, `sender`) and how to read its connections.
    public struct Consumer: Sendable {
        public var name: String
        public var connections: @Sendable () -> KafkaBrokerConnections?

        public init(name: String, connections: @escaping @Sendable () -> KafkaBrokerConnections?) {
            self.name = name
            self.connections = connections
        }
    }

    let consumers: [Consumer]
    let servers: [String]
    let interval: Duration
    let threshold: Duration
    let repeatEvery: Duration
    let logger: Logger

    private struct Watch {
        /// When a broker was last seen up, or the watch began.
        var lastUp: ContinuousClock.Instant
        /// When the last warning about it was logged; nil while it has brokers.
        var warnedAt: ContinuousClock.Instant?
    }

    private let watches: Mutex<[Watch]>

    /// - Parameters:
    ///   - servers: the bootstrap servers, named in the warnings.
    ///   - interval: how often the consumers' connections are read (their statistics come as often
    ///     as `statistics.interval.ms`).
    ///   - threshold: how long a consumer may be without a broker before the warning: longer than a
    ///     broker's restart or a leader's move, which librdkafka rides out by itself.
    public init(
        consumers: [Consumer],
        servers: [String],
        interval: Duration = .seconds(5),
        threshold: Duration = .seconds(30),
        repeatEvery: Duration = .seconds(60),
        logger: Logger,
        start: ContinuousClock.Instant = .now
    ) {
        self.consumers = consumers
        self.servers = servers
        self.interval = interval
        self.threshold = threshold
        self.repeatEvery = repeatEvery
        self.logger = logger
        watches = Mutex(consumers.map { _ in Watch(lastUp: start) })
    }

    public func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                self.check(now: .now)
                try await Task.sleep(for: self.interval)
            }
        }
    }

    /// Reads each consumer's connections once and logs what has changed.
    func check(now: ContinuousClock.Instant) {
        let readings = consumers.map { $0.connections() }
        var lines: [(Logger.Level, String, Logger.Metadata)] = []
        watches.withLock { watches in
            for (index, reading) in readings.enumerated() {
                let name = consumers[index].name
                if let reading, reading.up > 0 {
                    if watches[index].warnedAt != nil {
                        lines.append(
                            (
                                .notice, "Kafka reachable again",
                                [
                                    "consumer": "\(name)", "kafka.brokers_up": "\(reading.up)",
                                    "unreachable_s": "\(Int((now - watches[index].lastUp).inSeconds))",
                                ]
                            )
                        )
                    }
                    watches[index] = Watch(lastUp: now, warnedAt: nil)
                    continue
                }
                let without = now - watches[index].lastUp
                guard without >= threshold else { continue }
                if let warnedAt = watches[index].warnedAt, now - warnedAt < repeatEvery { continue }
                watches[index].warnedAt = now
                lines.append(
                    (
                        .warning,
                        "cannot reach Kafka: no connection to any broker (librdkafka keeps retrying; its own lines are at info)",
                        [
                            "consumer": "\(name)", "bootstrap": "\(servers.joined(separator: ","))",
                            "kafka.brokers_known": "\(reading?.known ?? 0)",
                            "unreachable_s": "\(Int(without.inSeconds))",
                        ]
                    )
                )
            }
        }
        for (level, message, metadata) in lines { logger.log(level: level, "\(message)", metadata: metadata) }
    }
}
