import Foundation

/// How many of the brokers a client knows it holds a working connection to, as librdkafka's
/// statistics (`statistics.interval.ms`) last told.
///
/// librdkafka logs a failed connection and retries it on its own, and says nothing when a
/// connection comes back; its statistics list every broker with the state of its connection. A
/// consumer's connections are never idle (it fetches and heartbeats without pause), so a consumer
/// with none up cannot reach the cluster. A producer's may be: brokers close connections that
/// carried nothing for a while, so a producer's count says nothing of the cluster.
public struct KafkaBrokerConnections: Sendable, Equatable {
    /// Brokers whose connection is up (librdkafka's state `UP`).
    public var up: Int
    /// Brokers the client knows: the bootstrap servers and those learned from the cluster.
    public var known: Int

    public init(up: Int, known: Int) {
        self.up = up
        self.known = known
    }

    /// Reads librdkafka's statistics JSON; `nil` if it is not that. librdkafka's own `internal`
    /// broker and its `logical` ones (the group coordinator's alias, which shares a real broker's
    /// connection) are not counted.
    public init?(statistics json: String) {
        guard let root = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
            let brokers = root["brokers"] as? [String: Any]
        else { return nil }
        var up = 0
        var known = 0
        for case let broker as [String: Any] in brokers.values {
            let source = broker["source"] as? String
            guard source != "internal", source != "logical" else { continue }
            known += 1
            if broker["state"] as? String == "UP" { up += 1 }
        }
        self.init(up: up, known: known)
    }
}
