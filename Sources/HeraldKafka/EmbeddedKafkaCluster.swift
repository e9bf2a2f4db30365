import Logging

/// An in-memory Kafka cluster inside this process, for development and tests.
///
/// It is librdkafka's mock cluster: it speaks the Kafka protocol on loopback ports, so any Kafka client
/// (`kcat -L -b <bootstrap>`) can use it, but it keeps only about 5 MiB (or 100,000 batches) per
/// partition, has no Admin API, SSL or SASL, and loses everything when it stops.
///
/// - Important: Never use it in production; point Herald at a real cluster there.
public final class EmbeddedKafkaCluster: Sendable {
    private let mock: RDKafkaMockCluster

    /// The cluster's `bootstrap.servers` string, for example `127.0.0.1:39245`.
    public var bootstrapServers: String { mock.bootstrapServers }

    /// The brokers' ids: 1 through the number of brokers.
    public let brokerIDs: [Int32]

    /// Starts a cluster of `brokers` brokers listening on loopback.
    public init(brokers: Int = 1, logger: Logger = Logger(label: "herald.kafka.embedded")) throws(KafkaError) {
        guard brokers >= 1 else { throw KafkaError.configuration("embedded broker: brokers must be at least 1") }
        mock = try RDKafkaMockCluster(brokers: brokers, logger: logger)
        brokerIDs = (1...brokers).map { Int32($0) }
    }

    /// Creates a topic with an explicit partition count (topics created implicitly get 4).
    public func createTopic(_ name: String, partitions: Int, replicationFactor: Int = 1) throws(KafkaError) {
        guard partitions >= 1 else {
            throw KafkaError.configuration("embedded broker: topic \(name) needs at least 1 partition")
        }
        try mock.createTopic(name, partitions: partitions, replicationFactor: replicationFactor)
    }

    /// Takes a broker down: its connections close and new ones are refused until ``setBrokerUp(_:)``.
    ///
    /// - Important: librdkafka closes the broker's listening socket and binds a new one to the same
    ///   port at once, and aborts the process if that bind fails, which it can when another socket
    ///   takes the port in between. Herald's tests that call this are in suites named `BrokerOutage`,
    ///   which `make test` runs alone, one at a time.
    public func setBrokerDown(_ id: Int32) throws(KafkaError) {
        try mock.setBroker(id, up: false)
    }

    /// Brings a broker back up.
    public func setBrokerUp(_ id: Int32) throws(KafkaError) {
        try mock.setBroker(id, up: true)
    }

    /// Delays every answer of a broker by `delay`.
    public func setRoundTripTime(of id: Int32, to delay: Duration) throws(KafkaError) {
        try mock.setRoundTripTime(id, milliseconds: Int(delay.milliseconds))
    }

    /// Makes the next requests of one Kafka API (0 = Produce, 1 = Fetch, 8 = OffsetCommit, ...)
    /// fail with the given Kafka protocol error codes, one per request, in order.
    public func failNextRequests(apiKey: Int16, errorCodes: [Int32]) {
        mock.pushRequestErrors(apiKey: apiKey, errorCodes: errorCodes)
    }
}
