/// One Kafka record header. A header value may be null, which Kafka distinguishes from empty.
public struct KafkaHeader: Sendable, Hashable {
    /// The header's name.
    public var name: String
    /// The header's value, or `nil` for a null value.
    public var value: KafkaBytes?

    public init(_ name: String, _ value: KafkaBytes?) {
        self.name = name
        self.value = value
    }

    /// A header whose value is the UTF-8 encoding of `value`.
    public init(_ name: String, string value: String) {
        self.name = name
        self.value = KafkaBytes(value)
    }
}

extension Array where Element == KafkaHeader {
    /// The value of the first header called `name`, or `nil` if there is none or it is null.
    public func first(named name: String) -> KafkaBytes? {
        first(where: { $0.name == name })?.value
    }
}
