/// One partition of one topic.
public struct TopicPartition: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The topic's name.
    public var topic: String
    /// The partition's number.
    public var partition: Int32

    public init(_ topic: String, _ partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)[\(partition)]" }

    public static func < (lhs: TopicPartition, rhs: TopicPartition) -> Bool {
        (lhs.topic, lhs.partition) < (rhs.topic, rhs.partition)
    }
}
