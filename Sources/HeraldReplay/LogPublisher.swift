import HeraldEvents
import HeraldKafka
import Logging

/// `herald replay LOG... --publish TOPIC`: re-injects a recorded log into Kafka, for backfills and
/// load tests. Domain events go to `topic`, directory events to the directory topic; each record
/// keeps its key (a CloudEvent line is keyed by the user it is about) and headers.
public struct LogPublisher: Sendable {
    public enum Pacing: Sendable, Equatable {
        /// Keeps the recorded relative timing, `speed` times faster (1: as recorded).
        case recorded(speed: Double)
        /// A fixed number of records per second.
        case rate(Double)

        /// When the record numbered `index` (from 0), recorded at `time`, is due, from the start
        /// of publishing; `firstTime` is the first record time seen. A record without a time goes
        /// out as soon as it is reached.
        public func offset(index: Int, time: Timestamp?, firstTime: Timestamp?) -> Duration {
            switch self {
            case .rate(let rate):
                return .seconds(Double(index) / rate)
            case .recorded(let speed):
                guard let time, let firstTime else { return .zero }
                return .milliseconds(Double(max(time.epochMilliseconds - firstTime.epochMilliseconds, 0)) / speed)
            }
        }
    }

    public var bootstrapServers: [String]
    public var topic: String
    public var directoryTopic = "herald.directory"
    public var pacing: Pacing

    public init(bootstrapServers: [String], topic: String, pacing: Pacing) {
        self.bootstrapServers = bootstrapServers
        self.topic = topic
        self.pacing = pacing
    }

    /// Publishes every record of `sources` and waits for the broker's acknowledgements.
    ///
    /// - Returns: how many records went to each topic.
    /// - Throws: ``KafkaError`` for the first record the broker did not take.
    public func run(
        _ sources: [any RecordSource],
        logger: Logger,
        progress: @Sendable (Int) -> Void = { _ in }
    ) async throws -> [String: Int] {
        var configuration = KafkaProducerConfiguration()
        configuration.client.bootstrapServers = bootstrapServers
        configuration.client.clientID = "herald-replay-publish"
        let producer = try KafkaProducer(configuration: configuration, logger: logger)
        let running = Task { try await producer.run() }
        defer {
            producer.triggerShutdown()
            running.cancel()
        }
        let started = ContinuousClock.now
        var firstTime: Timestamp?
        var published = 0
        var counts: [String: Int] = [:]
        var pending: [KafkaDeliveries] = []
        for source in sources {
            try await source.read { chunk in
                var records: [KafkaProducerRecord] = []
                for record in chunk {
                    firstTime = firstTime ?? record.time
                    let due = pacing.offset(index: published, time: record.time, firstTime: firstTime)
                    // Records are handed over in groups: whatever is due within the next 10 ms.
                    if started + due > ContinuousClock.now + .milliseconds(10) {
                        if !records.isEmpty { pending.append(try await producer.enqueue(records)) }
                        records.removeAll()
                        try await Task.sleep(until: started + due, clock: .continuous)
                    }
                    let destination = record.message.topic == directoryTopic ? directoryTopic : topic
                    records.append(
                        KafkaProducerRecord(
                            topic: destination,
                            key: record.message.key,
                            value: record.message.value,
                            headers: record.message.headers
                        )
                    )
                    counts[destination, default: 0] += 1
                    published += 1
                }
                if !records.isEmpty { pending.append(try await producer.enqueue(records)) }
                progress(published)
                // Acknowledgements are checked as publishing goes, so a broker that fails stops it early.
                while pending.count > 64 {
                    if let failure = await pending.removeFirst().failures().first { throw failure.error }
                }
            }
        }
        for deliveries in pending {
            if let failure = await deliveries.failures().first { throw failure.error }
        }
        return counts
    }
}
