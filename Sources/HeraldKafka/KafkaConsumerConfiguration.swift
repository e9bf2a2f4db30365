/// Configuration of a ``KafkaConsumer``.
///
/// Defaults: auto offset reset `earliest`, session timeout 45 s, commit interval 1 s, batches of at
/// most 1,000 messages, at most 10,000 messages buffered in Herald, librdkafka's prefetch queue
/// limited to 64 MiB per consumer, fetch wait 500 ms, fetch backoff 50 ms, revoke and close waits of 15 s,
/// `cooperative-sticky` assignment.
public struct KafkaConsumerConfiguration: Sendable {
    /// Where to start when a partition has no committed offset.
    public enum OffsetReset: String, Sendable {
        /// Read from the oldest retained message.
        case earliest
        /// Read only messages produced after the consumer joined.
        case latest
    }

    /// How the group divides partitions among its members. Every member of a group must use the
    /// same strategy.
    public enum AssignmentStrategy: Sendable {
        /// `range,roundrobin`: on every rebalance all partitions are revoked, then reassigned. The
        /// revoke runs while the group is already rebalancing, when some brokers (and the embedded
        /// one) refuse offset commits, so finished work may be redelivered to the next owner.
        case eager
        /// `cooperative-sticky`: only partitions that move are revoked, in a stable generation, so
        /// their done offsets are committed before they move; the rest keep flowing.
        case cooperativeSticky
    }

    /// Cluster connection and passthrough properties.
    public var client = KafkaClientOptions()
    /// `group.id`: the consumer group. Required.
    public var groupID: String
    /// The topics to subscribe to. Required.
    public var topics: [String]
    /// `auto.offset.reset`. Default `.earliest`.
    public var autoOffsetReset: OffsetReset = .earliest
    /// `session.timeout.ms`: how long the group waits for a silent member before reassigning its
    /// partitions. Default 45 s.
    public var sessionTimeout: Duration = .seconds(45)
    /// `max.poll.interval.ms`. The poll thread keeps polling while the application is busy, so this
    /// only trips if the process is wedged. Default 300 s.
    public var maxPollInterval: Duration = .seconds(300)
    /// `auto.commit.interval.ms`: how often done offsets are committed. Default 1 s.
    public var commitInterval: Duration = .seconds(1)
    /// The largest batch handed to the application at once. Default 1,000.
    public var maxBatchSize: Int = 1000
    /// How many received messages Herald buffers before it pauses fetching. Default 10,000.
    public var maxBufferedMessages: Int = 10_000
    /// `queued.max.messages.kbytes`: librdkafka's prefetch limit, for all partitions of the consumer.
    ///
    /// In librdkafka 2.0 a consumer whose prefetch queue reached this limit stops fetching until one
    /// of its broker threads next wakes up, which can take up to a second after the application has
    /// drained the queue (librdkafka 2.1 added `fetch.queue.backoff.ms` for this). The limit should
    /// therefore hold more than a second of the application's consumption. Default 65,536 (64 MiB,
    /// librdkafka's own default: about 140,000 events of 460 bytes).
    public var fetchQueueMaxKilobytes: Int = 65_536
    /// `fetch.wait.max.ms`: how long a broker may hold a fetch that has no data yet. Real brokers
    /// answer as soon as data arrives; the embedded cluster waits the whole time, so development and
    /// tests lower it. Default 500 ms.
    public var fetchMaxWait: Duration = .milliseconds(500)
    /// `fetch.error.backoff.ms`: how long librdkafka waits before fetching a partition again after a
    /// fetch error or a fetch that came back empty. librdkafka's 500 ms default adds up to half a
    /// second of latency to the first event after a quiet spell. Default 50 ms.
    public var fetchBackoff: Duration = .milliseconds(50)
    /// How long a revoke waits for in-flight messages of the revoked partitions to be marked done
    /// before their done offsets are committed and the partitions released. Default 15 s.
    public var revokeTimeout: Duration = .seconds(15)
    /// How long graceful shutdown waits for in-flight messages before committing and leaving.
    /// Default 15 s.
    public var closeTimeout: Duration = .seconds(15)
    /// The partition assignment strategy. Default `.cooperativeSticky`.
    public var assignmentStrategy: AssignmentStrategy = .cooperativeSticky

    /// Creates a configuration for `groupID` reading `topics`, with every other option defaulted.
    public init(groupID: String, topics: [String]) {
        self.groupID = groupID
        self.topics = topics
    }

    func validate() throws(KafkaError) {
        if groupID.isEmpty { throw .configuration("kafka consumer: groupID must not be empty") }
        if topics.isEmpty { throw .configuration("kafka consumer: topics must name at least one topic") }
        if maxBatchSize < 1 { throw .configuration("kafka consumer: maxBatchSize must be at least 1") }
        if maxBufferedMessages < maxBatchSize {
            throw .configuration("kafka consumer: maxBufferedMessages must be at least maxBatchSize")
        }
        if fetchQueueMaxKilobytes < 1 {
            throw .configuration("kafka consumer: fetchQueueMaxKilobytes must be at least 1")
        }
    }

    func librdkafkaProperties() -> [(String, String)] {
        var result = client.librdkafkaProperties()
        result += [
            ("group.id", groupID),
            ("enable.auto.commit", "true"),
            // Herald stores offsets itself, only up to the highest contiguous done offset.
            ("enable.auto.offset.store", "false"),
            ("auto.commit.interval.ms", String(commitInterval.milliseconds)),
            ("auto.offset.reset", autoOffsetReset.rawValue),
            ("session.timeout.ms", String(sessionTimeout.milliseconds)),
            ("max.poll.interval.ms", String(maxPollInterval.milliseconds)),
            ("queued.max.messages.kbytes", String(fetchQueueMaxKilobytes)),
            ("fetch.wait.max.ms", String(fetchMaxWait.milliseconds)),
            ("fetch.error.backoff.ms", String(fetchBackoff.milliseconds)),
            ("enable.partition.eof", "false"),
        ]
        switch assignmentStrategy {
        case .cooperativeSticky: result.append(("partition.assignment.strategy", "cooperative-sticky"))
        case .eager: result.append(("partition.assignment.strategy", "range,roundrobin"))
        }
        return result
    }
}
