import HeraldKafka
import Logging
import ServiceLifecycle

/// Keeps an embedded Kafka cluster alive until graceful shutdown.
public struct EmbeddedBrokerService: Service {
    /// The cluster this service keeps running.
    public let cluster: EmbeddedKafkaCluster

    /// Starts a cluster of `brokers` brokers and creates `topics` with their partition counts.
    ///
    /// - Throws: ``KafkaError`` if the cluster cannot start or a topic cannot be created.
    public init(brokers: Int, topics: [TopicSpecification], logger: Logger) throws {
        cluster = try EmbeddedKafkaCluster(brokers: brokers, logger: logger)
        for topic in topics {
            try cluster.createTopic(topic.name, partitions: topic.partitions)
        }
    }

    public func run() async throws {
        // Serve until the service group shuts down; the cluster's own threads do the work.
        try? await gracefulShutdown()
    }
}

/// A topic name with a partition count, written `NAME:PARTITIONS` on the command line.
public struct TopicSpecification: Sendable, Hashable {
    public var name: String
    public var partitions: Int

    public init(name: String, partitions: Int) {
        self.name = name
        self.partitions = partitions
    }

    /// Parses `NAME:PARTITIONS`, or `NAME` for `defaultPartitions` partitions.
    public init?(parsing text: String, defaultPartitions: Int = 12) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard let name = parts.first, !name.isEmpty, parts.count <= 2 else { return nil }
        if parts.count == 2 {
            guard let partitions = Int(parts[1]), partitions >= 1 else { return nil }
            self.init(name: String(name), partitions: partitions)
        } else {
            self.init(name: String(name), partitions: defaultPartitions)
        }
    }

    /// The topics `herald broker` creates when none are named: Herald's own topics and the example
    /// domain topics.
    public static let heraldDefaults: [TopicSpecification] = [
        .init(name: "orders.events", partitions: 12),
        .init(name: "payments.events", partitions: 12),
        .init(name: "security.events", partitions: 12),
        .init(name: "messages.events", partitions: 12),
        .init(name: "marketing.events", partitions: 12),
        .init(name: "herald.directory", partitions: 12),
        .init(name: "herald.outbound", partitions: 12),
        .init(name: "herald.outbound.retry.1", partitions: 12),
        .init(name: "herald.outbound.retry.2", partitions: 12),
        .init(name: "herald.outbound.retry.3", partitions: 12),
        .init(name: "herald.outbound.retry.4", partitions: 12),
        .init(name: "herald.outbound.dlq", partitions: 12),
        .init(name: "herald.events.dlq", partitions: 12),
        .init(name: "herald.decisions", partitions: 12),
        .init(name: "herald.deliveries", partitions: 12),
    ]
}
