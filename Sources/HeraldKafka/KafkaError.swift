/// An error from Herald's Kafka layer.
///
/// `code` is stable and bounded, so it can label metrics and dead-letter headers; `message` is for
/// people. `isFatal` means the client instance cannot continue and must be recreated; `isRetriable`
/// means the same operation may succeed if tried again later (a broker is down, a queue is full).
public struct KafkaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, bounded error code.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The code's name, used as a metric label and a dead-letter header value.
        public let name: String

        public init(_ name: String) { self.name = name }

        public var description: String { name }

        /// An option or property was rejected by librdkafka or by Herald's validation.
        public static let configuration = Code("kafka.configuration")
        /// The client was closed, or is closing, and cannot serve the call.
        public static let closed = Code("kafka.closed")
        /// The producer's local queue is full (retriable: wait for deliveries).
        public static let queueFull = Code("kafka.queue_full")
        /// The message is larger than the producer's or the broker's limit.
        public static let messageTooLarge = Code("kafka.message_too_large")
        /// The topic or partition is unknown to the cluster.
        public static let unknownTopicOrPartition = Code("kafka.unknown_topic_or_partition")
        /// The message could not be delivered before `message.timeout.ms`.
        public static let deliveryTimedOut = Code("kafka.delivery_timed_out")
        /// The operation timed out.
        public static let timedOut = Code("kafka.timed_out")
        /// The message was purged from the queue at shutdown before it was delivered.
        public static let purged = Code("kafka.purged")
        /// A broker, the network, or the cluster reported a transient failure.
        public static let transport = Code("kafka.transport")
        /// Authentication or authorization failed (SASL, SSL, ACLs).
        public static let authorization = Code("kafka.authorization")
        /// Any other error reported by librdkafka; `librdkafkaCode` says which.
        public static let broker = Code("kafka.broker")
        /// The client hit a fatal error (for example an idempotent producer's sequence gap).
        public static let fatal = Code("kafka.fatal")
    }

    /// The stable error code.
    public var code: Code
    /// A human-readable explanation.
    public var message: String
    /// librdkafka's `rd_kafka_resp_err_t` value, when the error came from librdkafka.
    public var librdkafkaCode: Int32?
    /// The client instance cannot continue.
    public var isFatal: Bool
    /// The operation may succeed if retried.
    public var isRetriable: Bool

    public init(
        code: Code,
        message: String,
        librdkafkaCode: Int32? = nil,
        isFatal: Bool = false,
        isRetriable: Bool = false
    ) {
        self.code = code
        self.message = message
        self.librdkafkaCode = librdkafkaCode
        self.isFatal = isFatal
        self.isRetriable = isRetriable
    }

    public var description: String {
        var text = "\(code): \(message)"
        if let librdkafkaCode { text += " (librdkafka error \(librdkafkaCode))" }
        if isFatal { text += " [fatal]" }
        return text
    }

    static func closed(_ what: String) -> KafkaError {
        KafkaError(code: .closed, message: "the \(what) is closed")
    }

    static func configuration(_ message: String) -> KafkaError {
        KafkaError(code: .configuration, message: message)
    }
}
