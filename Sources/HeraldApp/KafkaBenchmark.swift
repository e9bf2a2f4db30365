import HeraldKafka
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `herald bench kafka`: the physical-limit baseline later benchmarks are compared with.
///
/// In one process, against the embedded cluster, a consume→produce passthrough (consume, produce the
/// same bytes to another topic, mark done after the delivery report) of `messages` JSON events, fed by
/// a producer running at the same time, first through the `HeraldKafka` API and then written directly
/// against librdkafka's C API. Both use the same feeder, batch size and client settings.
public struct KafkaBenchmark: Sendable {
    /// How many messages pass through each variant. Default 1,000,000.
    public var messages = 1_000_000
    /// Partitions of each topic. Default 12.
    public var partitions = 12
    /// Size of each JSON event in bytes. Default 400.
    public var messageSize = 400
    /// How far the feeder may run ahead of the passthrough, in messages. Default 60,000: the embedded
    /// cluster keeps only about 5 MiB per partition and drops older data. Large messages get a
    /// smaller window (``feederWindow``).
    public var window = 60_000
    /// The consumer's batch size, for both variants. Default 1,000 (the consumer's default).
    public var batchSize = 1000

    /// ``window``, or fewer messages where that many would hold more than
    /// ``feederBytesPerPartition`` per partition. The cluster drops what the passthrough has not
    /// read yet past its 5 MiB, and the passthrough then waited for ever for messages that were gone
    /// (60,000 messages of 1,199 bytes are 6 MB per partition of 12).
    var feederWindow: Int {
        Self.feederWindow(window, partitions: partitions, messageBytes: messageSize)
    }

    /// How much the feeder may be ahead in one partition: well inside what the embedded cluster
    /// keeps, as the feeder spreads messages round robin and a partition may lag the others.
    static let feederBytesPerPartition = 2 * 1024 * 1024

    /// `window`, or the fewer messages of `messageBytes` that hold ``feederBytesPerPartition`` in
    /// each of `partitions` (at least one): the bound both benchmarks' feeders keep.
    static func feederWindow(_ window: Int, partitions: Int, messageBytes: Int) -> Int {
        min(window, max(partitions * feederBytesPerPartition / max(messageBytes, 1), 1))
    }

    public init() {}

    /// The two passthroughs compared.
    public enum Variant: String, Sendable, CaseIterable {
        case wrapper = "HeraldKafka passthrough"
        case raw = "librdkafka C passthrough"
    }

    /// One variant's measurement in one round.
    public struct Measurement: Sendable {
        public var variant: Variant
        public var messages: Int
        public var bytes: Int
        public var elapsed: Duration

        public init(variant: Variant, messages: Int, bytes: Int, elapsed: Duration) {
            self.variant = variant
            self.messages = messages
            self.bytes = bytes
            self.elapsed = elapsed
        }

        public var seconds: Double { elapsed.inSeconds }
        public var messagesPerSecond: Double { Double(messages) / seconds }
        public var megabytesPerSecond: Double { Double(bytes) / seconds / 1_000_000 }

        /// The median of `measurements` by message rate — the lower middle one of an even count, so
        /// that it is a round that ran — or `nil` for none.
        public static func median(of measurements: [Measurement]) -> Measurement? {
            let sorted = measurements.sorted { $0.messagesPerSecond < $1.messagesPerSecond }
            return sorted.isEmpty ? nil : sorted[(sorted.count - 1) / 2]
        }
    }

    /// One round: both variants, one after the other.
    public struct Round: Sendable {
        public var wrapper: Measurement
        public var raw: Measurement
        /// The wrapper's throughput as a fraction of the raw passthrough's in this round.
        public var ratio: Double { wrapper.messagesPerSecond / raw.messagesPerSecond }
    }

    /// The benchmark's result.
    public struct Report: Sendable {
        public var rounds: [Round]
        public var peakResidentMegabytes: Double

        /// The median of the rounds' ratios: on a small, busy machine one round can be disturbed,
        /// and the median is not moved by one outlier.
        public var ratio: Double {
            let sorted = rounds.map(\.ratio).sorted()
            return sorted.count % 2 == 1
                ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }

        /// All rounds of one variant taken together: total messages over total time.
        public func overall(_ variant: Variant) -> Measurement {
            let measurements = rounds.map { variant == .wrapper ? $0.wrapper : $0.raw }
            return Measurement(
                variant: variant,
                messages: measurements.reduce(0) { $0 + $1.messages },
                bytes: measurements.reduce(0) { $0 + $1.bytes },
                elapsed: measurements.reduce(.zero) { $0 + $1.elapsed }
            )
        }
    }

    /// How many rounds to run; each runs both variants, alternating which goes first. Default 5:
    /// single rounds on this 2-core machine vary by ±15%, and the median of three was not stable.
    public var rounds = 5

    /// Runs the rounds and reports them.
    public func run(logger: Logger, progress: @Sendable (String) -> Void = { _ in }) async throws -> Report {
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: logger)
        let (payload, idOffset) = Self.samplePayload(size: messageSize)
        var results: [Round] = []
        for round in 1...max(rounds, 1) {
            // Alternate the order so that neither variant always runs on a fresher cluster.
            let order: [Variant] = round % 2 == 1 ? [.wrapper, .raw] : [.raw, .wrapper]
            var measured: [Variant: Measurement] = [:]
            for variant in order {
                progress("round \(round): \(variant.rawValue), \(messages) messages")
                measured[variant] = try await measure(
                    variant,
                    round: round,
                    cluster: cluster,
                    payload: payload,
                    idOffset: idOffset,
                    logger: logger
                )
            }
            results.append(Round(wrapper: measured[.wrapper]!, raw: measured[.raw]!))
        }
        return Report(rounds: results, peakResidentMegabytes: ProcessUsage.peakResidentMegabytes())
    }

    /// One variant's passthrough of `messages` on `cluster`, outside `run`'s rounds: the baseline
    /// another benchmark compares itself with in the same run. Each `round` uses topics of its own.
    /// With a `shape` (the raw variant only) it writes the shape's messages for each one it reads,
    /// on topics of their own.
    func measure(
        _ variant: Variant,
        round: Int,
        on cluster: any BenchmarkCluster,
        shape: RDKafkaBenchmarkBaseline.Shape? = nil,
        logger: Logger
    ) async throws -> Measurement {
        let (payload, idOffset) = Self.samplePayload(size: messageSize)
        return try await measure(
            variant,
            round: round,
            cluster: cluster,
            payload: payload,
            idOffset: idOffset,
            shape: shape,
            logger: logger
        )
    }

    private func measure(
        _ variant: Variant,
        round: Int,
        cluster: any BenchmarkCluster,
        payload: [UInt8],
        idOffset: Int,
        shape: RDKafkaBenchmarkBaseline.Shape? = nil,
        logger: Logger
    ) async throws -> Measurement {
        precondition(shape == nil || variant == .raw, "only the raw passthrough writes a shape")
        let (input, output) = Self.topics(variant, round: round, shaped: shape != nil)
        let group = "bench-\(round)-\(Self.topicName(variant, shaped: shape != nil))"
        try cluster.ensureTopic(input, partitions: partitions)
        try cluster.ensureTopic(output, partitions: partitions)
        return try await measure(variant: variant, cluster: cluster, input: input, payload: payload, idOffset: idOffset)
        { done in
            switch variant {
            case .wrapper:
                return try await wrapperPassthrough(
                    cluster: cluster,
                    group: group,
                    input: input,
                    output: output,
                    done: done,
                    logger: logger
                )
            case .raw:
                let (bootstrap, messages, partitions, batchSize) = (
                    cluster.bootstrapServers, messages, partitions, batchSize
                )
                let result = await DedicatedThread.run(name: "herald.bench.raw") {
                    Result { () throws(KafkaError) in
                        try RDKafkaBenchmarkBaseline.passthrough(
                            bootstrapServers: bootstrap,
                            group: group,
                            input: input,
                            output: output,
                            partitions: partitions,
                            count: messages,
                            batchSize: batchSize,
                            fetchMaxWait: Self.fetchMaxWait,
                            shape: shape,
                            done: done
                        )
                    }
                }
                return try result.get()
            }
        }
    }

    /// The topics a variant's passthrough reads and writes in a round.
    static func topics(_ variant: Variant, round: Int, shaped: Bool = false) -> (input: String, output: String) {
        let name = topicName(variant, shaped: shaped)
        return ("bench.\(round).\(name).in", "bench.\(round).\(name).out")
    }

    private static func topicName(_ variant: Variant, shaped: Bool) -> String {
        variant == .wrapper ? "wrapper" : shaped ? "shaped" : "raw"
    }

    private func measure(
        variant: Variant,
        cluster: any BenchmarkCluster,
        input: String,
        payload: [UInt8],
        idOffset: Int,
        passthrough: @Sendable (ProgressCounter) async throws -> Duration
    ) async throws -> Measurement {
        let done = ProgressCounter()
        let (bootstrap, messages, partitions, window) = (cluster.bootstrapServers, messages, partitions, feederWindow)
        let feeder = Task.detached {
            await DedicatedThread.run(name: "herald.feeder") {
                Result { () throws(KafkaError) in
                    try RDKafkaBenchmarkBaseline.feed(
                        bootstrapServers: bootstrap,
                        topic: input,
                        partitions: Int32(partitions),
                        count: messages,
                        payload: payload,
                        idOffset: idOffset,
                        window: window,
                        consumed: { done.value }
                    )
                }
            }
        }
        let elapsed = try await passthrough(done)
        try await feeder.value.get()
        return Measurement(variant: variant, messages: messages, bytes: messages * payload.count, elapsed: elapsed)
    }

    /// The passthrough through Herald's consumer and producer: enqueue each batch in order, await its
    /// deliveries concurrently, then mark the batch done. As in the raw variant, the producer's queue
    /// is what bounds the work in flight: `enqueue` waits while it is full.
    private func wrapperPassthrough(
        cluster: any BenchmarkCluster,
        group: String,
        input: String,
        output: String,
        done: ProgressCounter,
        logger: Logger
    ) async throws -> Duration {
        var consumerConfiguration = KafkaConsumerConfiguration(groupID: group, topics: [input])
        consumerConfiguration.client.bootstrapServers = [cluster.bootstrapServers]
        consumerConfiguration.maxBatchSize = batchSize
        consumerConfiguration.maxBufferedMessages = max(10 * batchSize, 10_000)
        consumerConfiguration.fetchMaxWait = Self.fetchMaxWait
        var producerConfiguration = KafkaProducerConfiguration()
        producerConfiguration.client.bootstrapServers = [cluster.bootstrapServers]
        let consumer = try KafkaConsumer(configuration: consumerConfiguration, logger: logger)
        let producer = try KafkaProducer(configuration: producerConfiguration, logger: logger)
        let messages = messages
        let started = SharedInstant()

        return try await withThrowingTaskGroup(of: Void.self) { services in
            services.addTask { try await consumer.run() }
            services.addTask { try await producer.run() }
            // Warm up: the idempotent producer's first delivery waits for its producer id, which is
            // start-up cost, not passthrough throughput (the raw variant warms up the same way).
            _ = try await producer.send(KafkaProducerRecord(topic: output, value: "warm-up"))
            // A discarding group keeps no results, so pending deliveries cost nothing once finished;
            // a failed delivery fails the run.
            try await withThrowingDiscardingTaskGroup { deliveries in
                for await batch in consumer.messages {
                    started.setIfUnset()
                    var records: [KafkaProducerRecord] = []
                    records.reserveCapacity(batch.count)
                    for message in batch {
                        records.append(
                            KafkaProducerRecord(
                                topic: output,
                                partition: message.partition,
                                key: message.key,
                                value: message.value,
                                headers: message.headers
                            )
                        )
                    }
                    let pending = try await producer.enqueue(records)
                    deliveries.addTask {
                        if let failure = await pending.failures().first { throw failure.error }
                        consumer.markDone(batch)
                        done.add(batch.count)
                        // The last delivery ends the run: the consumer's sequence finishes.
                        if done.value >= messages { consumer.triggerShutdown() }
                    }
                }
            }
            let elapsed = started.elapsed
            producer.triggerShutdown()
            return elapsed
        }
    }

    /// The embedded cluster holds an empty fetch for the whole `fetch.wait.max.ms` instead of answering
    /// when data arrives; both variants lower it alike so that catching up with the feeder does not
    /// measure the mock's timer.
    static let fetchMaxWait: Duration = .milliseconds(10)

    /// A CloudEvents-shaped JSON event of exactly `size` bytes, and where its 12-digit id sits.
    static func samplePayload(size: Int) -> ([UInt8], Int) {
        let head = #"{"specversion":"1.0","id":""#
        let tail =
            #"","source":"/orders","type":"order.confirmed","time":"2026-11-21T12:00:00Z","datacontenttype":"application/json","data":{"orderId":"ord-7f3a","userId":"u-1024","total":{"amount":"1234.50","currency":"NOK"},"items":3,"note":""#
        let end = #""}}"#
        var bytes = Array(head.utf8) + Array(repeating: UInt8(ascii: "0"), count: 12) + Array(tail.utf8)
        let fill = max(0, size - bytes.count - end.utf8.count)
        bytes += Array(repeating: UInt8(ascii: "x"), count: fill) + Array(end.utf8)
        return (bytes, head.utf8.count)
    }
}

/// The instant a run started, set once by whichever task sees the first message.
final class SharedInstant: Sendable {
    private let storage = Mutex<ContinuousClock.Instant?>(nil)

    func setIfUnset() {
        storage.withLock { if $0 == nil { $0 = .now } }
    }

    var elapsed: Duration { storage.withLock { ($0 ?? .now).duration(to: .now) } }
}
