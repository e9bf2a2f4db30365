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
