import HeraldKafka
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An embedded cluster and client configurations tuned for tests: short session timeouts (the mock
/// cluster makes a rejoining member wait about `session.timeout.ms`), quick commits and closes.
public struct KafkaTestEnvironment: Sendable {
    public let cluster: EmbeddedKafkaCluster
    public let logger: Logger

    /// Starts a cluster and creates `topics` (name → partition count).
    public init(brokers: Int = 1, topics: [String: Int]) throws {
        var logger = Logger(label: "herald.test")
        logger.logLevel = ProcessInfoLogLevel.value
        self.logger = logger
        cluster = try EmbeddedKafkaCluster(brokers: brokers, logger: logger)
        for (name, partitions) in topics.sorted(by: { $0.key < $1.key }) {
            try cluster.createTopic(name, partitions: partitions)
        }
    }

    public func consumerConfiguration(group: String, topics: [String]) -> KafkaConsumerConfiguration {
        var configuration = KafkaConsumerConfiguration(groupID: group, topics: topics)
        configuration.client.bootstrapServers = [cluster.bootstrapServers]
        configuration.client.clientID = "herald-test-consumer"
        configuration.sessionTimeout = .seconds(6)
        configuration.commitInterval = .milliseconds(200)
        configuration.revokeTimeout = .seconds(5)
        configuration.closeTimeout = .seconds(5)
        configuration.client.properties["heartbeat.interval.ms"] = "500"
        // No short `topic.metadata.refresh.interval.ms` (these tests had 1 s until 2026-12-01): with
        // librdkafka 2.0, a periodic refresh whose answer arrives while the group's leader waits for
        // the assignor's metadata makes it rejoin, and each rejoin waits out another round of the
        // embedded coordinator (session timeout less 1 s). Refreshed every second, a joiner could
        // go round for most of a minute (59 s once for a test that takes 14 s).
        return configuration
    }

    public func producerConfiguration() -> KafkaProducerConfiguration {
        var configuration = KafkaProducerConfiguration()
        configuration.client.bootstrapServers = [cluster.bootstrapServers]
        configuration.client.clientID = "herald-test-producer"
        configuration.linger = .milliseconds(1)
        configuration.flushTimeout = .seconds(5)
        return configuration
    }

    public func makeConsumer(
        group: String,
        topics: [String],
        configure: (inout KafkaConsumerConfiguration) -> Void = { _ in },
        logger: Logger? = nil,
        onAssign: KafkaConsumer.RebalanceHandler? = nil,
        onRevoke: KafkaConsumer.RebalanceHandler? = nil,
        onOffsetReset: KafkaConsumer.OffsetResetHandler? = nil
    ) throws -> KafkaConsumer {
        var configuration = consumerConfiguration(group: group, topics: topics)
        configure(&configuration)
        return try KafkaConsumer(
            configuration: configuration,
            logger: logger ?? self.logger,
            onAssign: onAssign,
            onRevoke: onRevoke,
            onOffsetReset: onOffsetReset
        )
    }

    public func makeProducer(configure: (inout KafkaProducerConfiguration) -> Void = { _ in }) throws -> KafkaProducer {
        var configuration = producerConfiguration()
        configure(&configuration)
        return try KafkaProducer(configuration: configuration, logger: logger)
    }
}

/// What a test consumer has seen, shared between the consuming task and the test's assertions.
public final class ReceivedMessages: Sendable {
    private let storage = Mutex<[KafkaMessage]>([])
    private let reader: KafkaConsumer?

    /// - Parameter reader: the consumer that appends what it reads, if any: ``readerPositions`` says
    ///   where it stands.
    public init(reader: KafkaConsumer? = nil) {
        self.reader = reader
    }

    /// Where the reading consumer stands in each partition, for the comment of a wait that failed:
    /// whether it was assigned anything, fetched, or read to the end and found too little.
    public var readerPositions: String {
        "\(count) received; " + (reader?.readingPositions ?? "no reader")
    }

    public func append(_ messages: [KafkaMessage]) {
        storage.withLock { $0.append(contentsOf: messages) }
    }

    public var all: [KafkaMessage] { storage.withLock { $0 } }
    public var count: Int { storage.withLock { $0.count } }

    /// (partition, offset) pairs of everything seen.
    public var positions: [PartitionOffset] {
        storage.withLock { $0.map { PartitionOffset(partition: $0.partition, offset: $0.offset) } }
    }
}

/// A message's position in its topic.
public struct PartitionOffset: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var partition: Int32
    public var offset: Int64

    public init(partition: Int32, offset: Int64) {
        self.partition = partition
        self.offset = offset
    }

    public static func < (lhs: PartitionOffset, rhs: PartitionOffset) -> Bool {
        (lhs.partition, lhs.offset) < (rhs.partition, rhs.offset)
    }

    public var description: String { "\(partition)@\(offset)" }
}

/// A value shared between a test and the callbacks or tasks it starts.
public final class SharedValue<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>

    public init(_ value: Value) { storage = Mutex(value) }

    public var value: Value { storage.withLock { $0 } }

    public func update<R>(_ body: (inout Value) -> R) -> R { storage.withLock { body(&$0) } }
}

/// The test log level: `HERALD_TEST_LOG_LEVEL` (trace, debug, info, ...), default info.
enum ProcessInfoLogLevel {
    static var value: Logger.Level {
        guard let raw = getenv("HERALD_TEST_LOG_LEVEL") else { return .info }
        return Logger.Level(rawValue: String(cString: raw)) ?? .info
    }
}

extension KafkaTestEnvironment {
    /// Produces `records` and returns where each landed.
    @discardableResult
    public func produce(_ records: [KafkaProducerRecord]) async throws -> [KafkaDeliveryReport] {
        let producer = try makeProducer()
        return try await withRunningServices([producer]) {
            try await producer.send(records).map { try $0.get() }
        }
    }

    /// Runs `body` while a consumer of a group of its own reads `topics` from the beginning.
    public func withCollector<R: Sendable>(
        _ topics: [String],
        _ body: (ReceivedMessages) async throws -> R
    ) async throws -> R {
        let consumer = try makeConsumer(group: "collector-\(UInt64.random(in: 0...UInt64.max))", topics: topics)
        let received = ReceivedMessages(reader: consumer)
        return try await withRunningServices([consumer]) {
            let reading = Task {
                for await batch in consumer.messages {
                    received.append(batch)
                    consumer.markDone(batch)
                }
            }
            defer { reading.cancel() }
            return try await body(received)
        }
    }
}
