/// A message to produce.
public struct KafkaProducerRecord: Sendable {
    /// The topic to write to.
    public var topic: String
    /// The partition to write to, or `nil` to let the partitioner choose from the key.
    public var partition: Int32?
    /// The key, or `nil` for a null key.
    public var key: KafkaBytes?
    /// The value, or `nil` for a null value (a tombstone on a compacted topic).
    public var value: KafkaBytes?
    /// The headers, in order.
    public var headers: [KafkaHeader]
    /// The message's timestamp in milliseconds since the Unix epoch, or `nil` for the producer's
    /// clock. A topic with `LogAppendTime` takes the broker's whatever this says.
    public var timestampMilliseconds: Int64?

    public init(
        topic: String,
        partition: Int32? = nil,
        key: KafkaBytes? = nil,
        value: KafkaBytes?,
        headers: [KafkaHeader] = [],
        timestampMilliseconds: Int64? = nil
    ) {
        self.topic = topic
        self.partition = partition
        self.key = key
        self.value = value
        self.headers = headers
        self.timestampMilliseconds = timestampMilliseconds
    }
}

/// Where a produced message was written.
public struct KafkaDeliveryReport: Sendable, Hashable {
    /// The partition the message was written to.
    public var partition: Int32
    /// The message's offset, when the broker reported one (an idempotent retry may not).
    public var offset: Int64?

    public init(partition: Int32, offset: Int64?) {
        self.partition = partition
        self.offset = offset
    }
}
