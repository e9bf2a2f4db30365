/// A message received by a ``KafkaConsumer``.
///
/// Key, value and headers are views into one buffer shared by the batch the message arrived in;
/// headers are decoded only when ``headers`` is read.
public struct KafkaMessage: Sendable {
    /// The topic the message was read from.
    public let topic: String
    /// The partition the message was read from.
    public let partition: Int32
    /// The message's offset in its partition.
    public let offset: Int64
    /// The message's timestamp in milliseconds since the Unix epoch, if the broker supplied one.
    public let timestampMilliseconds: Int64?
    /// The message key, or `nil` for a null key.
    public let key: KafkaBytes?
    /// The message value, or `nil` for a null value (a tombstone).
    public let value: KafkaBytes?

    /// The encoded headers (see `HeaderEncoding`), `nil` when there are none, so that a message
    /// without headers holds no extra reference to its batch's buffer.
    let encodedHeaders: KafkaBytes?
    let headersCount: Int32

    init(
        topic: String,
        partition: Int32,
        offset: Int64,
        timestampMilliseconds: Int64?,
        key: KafkaBytes?,
        value: KafkaBytes?,
        headers encodedHeaders: KafkaBytes?,
        headersCount: Int32
    ) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestampMilliseconds = timestampMilliseconds
        self.key = key
        self.value = value
        self.encodedHeaders = encodedHeaders
        self.headersCount = headersCount
    }

    /// Creates a message from plain values, for tests and for replaying recorded logs.
    public init(
        topic: String,
        partition: Int32,
        offset: Int64,
        timestampMilliseconds: Int64? = nil,
        key: KafkaBytes?,
        value: KafkaBytes?,
        headers: [KafkaHeader] = []
    ) {
        var encoded: [UInt8] = []
        HeaderEncoding.append(headers, to: &encoded)
        self.init(
            topic: topic,
            partition: partition,
            offset: offset,
            timestampMilliseconds: timestampMilliseconds,
            key: key,
            value: value,
            headers: headers.isEmpty ? nil : KafkaBytes(encoded),
            headersCount: Int32(headers.count)
        )
    }

    /// The message's topic and partition.
    public var topicPartition: TopicPartition { TopicPartition(topic, partition) }

    /// The message's headers, in the order the producer wrote them.
    public var headers: [KafkaHeader] {
        guard let encodedHeaders else { return [] }
        let (arena, start) = encodedHeaders.arrayAndStart
        return HeaderEncoding.decode(from: arena, start: start, count: Int(headersCount))
    }

    /// The value of the first header called `name`, without decoding the others.
    public func header(_ name: String) -> KafkaBytes? {
        guard let encodedHeaders else { return nil }
        let (arena, start) = encodedHeaders.arrayAndStart
        return HeaderEncoding.first(
            named: name,
            in: arena,
            start: start,
            count: Int(headersCount)
        )
    }
}

/// How a batch's buffer stores headers: for each header, the name's length (UInt32, little endian),
/// the value's length (Int32, -1 for null), the name's bytes and the value's bytes.
enum HeaderEncoding {
    static func encodedSize(nameLength: Int, valueLength: Int) -> Int { 8 + nameLength + max(valueLength, 0) }

    static func append(_ headers: [KafkaHeader], to arena: inout [UInt8]) {
        for header in headers {
            let name = Array(header.name.utf8)
            appendLength(UInt32(name.count), to: &arena)
            if let value = header.value {
                appendLength(UInt32(value.count), to: &arena)
                arena.append(contentsOf: name)
                arena.append(contentsOf: value)
            } else {
                appendLength(UInt32(bitPattern: -1), to: &arena)
                arena.append(contentsOf: name)
            }
        }
    }

    private static func appendLength(_ value: UInt32, to arena: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { arena.append(contentsOf: $0) }
    }

    private static func readLength(_ arena: [UInt8], at index: Int) -> UInt32 {
        UInt32(arena[index]) | UInt32(arena[index + 1]) << 8 | UInt32(arena[index + 2]) << 16
            | UInt32(arena[index + 3]) << 24
    }

    static func decode(from arena: [UInt8], start: Int, count: Int) -> [KafkaHeader] {
        var headers: [KafkaHeader] = []
        headers.reserveCapacity(count)
        forEach(in: arena, start: start, count: count) { name, value in
            headers.append(KafkaHeader(String(decoding: name, as: UTF8.self), value))
            return true
        }
        return headers
    }

    static func first(named wanted: String, in arena: [UInt8], start: Int, count: Int) -> KafkaBytes? {
        var found: KafkaBytes?
        let wantedUTF8 = Array(wanted.utf8)
        forEach(in: arena, start: start, count: count) { name, value in
            if name.elementsEqual(wantedUTF8) {
                found = value
                return false
            }
            return true
        }
        return found
    }

    /// Visits headers in order until `body` returns false.
    private static func forEach(
        in arena: [UInt8],
        start: Int,
        count: Int,
        _ body: (ArraySlice<UInt8>, KafkaBytes?) -> Bool
    ) {
        var index = start
        for _ in 0..<count {
            let nameLength = Int(readLength(arena, at: index))
            let rawValueLength = Int32(bitPattern: readLength(arena, at: index + 4))
            index += 8
            let name = arena[index..<(index + nameLength)]
            index += nameLength
            var value: KafkaBytes?
            if rawValueLength >= 0 {
                value = KafkaBytes(base: arena, start: index, count: Int(rawValueLength))
                index += Int(rawValueLength)
            }
            if !body(name, value) { return }
        }
    }
}
