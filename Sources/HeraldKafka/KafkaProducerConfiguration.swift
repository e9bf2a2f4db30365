/// Configuration of a ``KafkaProducer``.
///
/// Defaults: idempotence on (`acks=all`, no duplicates or reordering on retry), `linger.ms` 5, at most
/// 100,000 messages or 64 MiB queued before ``KafkaProducer/enqueue(_:)`` waits, delivery timeout
/// 300 s, no compression, flush at shutdown for up to 30 s.
public struct KafkaProducerConfiguration: Sendable {
    /// Cluster connection and passthrough properties.
    public var client = KafkaClientOptions()
    /// `enable.idempotence`. Default `true`.
    public var idempotent: Bool = true
    /// `linger.ms`: how long to wait to fill a batch. Default 5 ms.
    public var linger: Duration = .milliseconds(5)
    /// `queue.buffering.max.messages`: the local queue's capacity in messages. Default 100,000.
    public var maxQueuedMessages: Int = 100_000
    /// `queue.buffering.max.kbytes`: the local queue's capacity in KiB. Default 65,536 (64 MiB).
    public var maxQueuedKilobytes: Int = 65_536
    /// `message.timeout.ms`: how long librdkafka retries one message before failing it. Default 300 s.
    public var deliveryTimeout: Duration = .seconds(300)
    /// `compression.type`: `none`, `gzip`, `snappy`, `lz4` or `zstd`. Default `none`.
    public var compression: String = "none"
    /// How long graceful shutdown waits for queued messages to be delivered before purging them
    /// (each purged message completes with ``KafkaError/Code-swift.struct/purged``). Default 30 s.
    public var flushTimeout: Duration = .seconds(30)

    public init() {}

    func validate() throws(KafkaError) {
        if maxQueuedMessages < 1 { throw .configuration("kafka producer: maxQueuedMessages must be at least 1") }
        if maxQueuedKilobytes < 1 { throw .configuration("kafka producer: maxQueuedKilobytes must be at least 1") }
    }

    func librdkafkaProperties() -> [(String, String)] {
        var result = client.librdkafkaProperties()
        result += [
            ("enable.idempotence", idempotent ? "true" : "false"),
            ("linger.ms", String(linger.milliseconds)),
            ("queue.buffering.max.messages", String(maxQueuedMessages)),
            ("queue.buffering.max.kbytes", String(maxQueuedKilobytes)),
            ("message.timeout.ms", String(deliveryTimeout.milliseconds)),
            ("compression.type", compression),
        ]
        return result
    }
}
