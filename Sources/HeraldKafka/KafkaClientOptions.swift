import CRdKafka

/// Options every Kafka client shares: where the cluster is, who the client is, and raw librdkafka
/// properties for everything Herald does not model (`security.protocol`, `sasl.*`, `ssl.*`, ...).
///
/// Defaults: `bootstrapServers` `["localhost:9092"]`, `clientID` `"herald"`, statistics off, no
/// extra properties.
public struct KafkaClientOptions: Sendable {
    /// `bootstrap.servers`: host:port pairs of brokers to start from. Default `["localhost:9092"]`.
    public var bootstrapServers: [String] = ["localhost:9092"]
    /// `client.id`, shown in broker logs and quotas. Default `"herald"`.
    public var clientID: String = "herald"
    /// How often librdkafka emits its statistics JSON (`statistics.interval.ms`); `nil` turns them
    /// off. Default `nil`.
    public var statisticsInterval: Duration?
    /// Any librdkafka property, applied after the typed options so it can override them, for example
    /// `["security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN", "sasl.username": "...",
    /// "sasl.password": "..."]`. Values of secret-looking properties are never logged or echoed in
    /// errors. Default empty.
    public var properties: [String: String] = [:]

    public init() {}

    /// Whether a librdkafka property holds a secret whose value must never be printed.
    public static func isSecret(_ property: String) -> Bool {
        let lowered = property.lowercased()
        return lowered.contains("password") || lowered.contains("secret") || lowered.contains("ssl.key")
            || lowered.contains("sasl.oauthbearer.config") || lowered.contains("jaas")
            || lowered.hasSuffix(".pem") || lowered.contains("keystore")
    }

    /// What librdkafka finds wrong with setting `property` to `value` (an unknown property, a value
    /// of the wrong kind), or `nil` if it accepts it. Checked on a configuration object, without
    /// creating a client. A secret property's value is never part of the answer.
    public static func problem(setting property: String, to value: String) -> String? {
        let conf = rd_kafka_conf_new()!
        defer { rd_kafka_conf_destroy(conf) }
        return RDKafkaConfig.set(property, value, on: conf)
    }

    /// Whether librdkafka can set up TLS with `properties` (`security.protocol` ssl or sasl_ssl and
    /// the `ssl.*` files): it reads the certificate authorities, certificate and key when a client
    /// is created, so this creates a producer that is given no broker to connect to and destroys it.
    ///
    /// - Throws: ``KafkaError`` `.configuration` with librdkafka's reason (which names the `ssl.*`
    ///   property and file, never a password).
    public static func checkTLS(_ properties: [(String, String)]) throws(KafkaError) {
        // Quiet: without brokers librdkafka logs that it has none, which is the point here.
        let conf = try RDKafkaConfig.make(properties + [("log_level", "0")], role: "TLS check")
        let handle = try RDKafkaConfig.makeHandle(type: RD_KAFKA_PRODUCER, conf: conf, role: "TLS check")
        rd_kafka_destroy(handle)
    }

    func librdkafkaProperties() -> [(String, String)] {
        var result: [(String, String)] = [
            ("bootstrap.servers", bootstrapServers.joined(separator: ",")),
            ("client.id", clientID),
        ]
        if let statisticsInterval {
            result.append(("statistics.interval.ms", String(statisticsInterval.milliseconds)))
        }
        return result
    }
}

extension Duration {
    /// The duration in whole milliseconds, rounded down.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
