import HeraldEvents
import HeraldKafka

/// Why an event could not be handled: a stable code (the `herald_dead_letters_total` label and the
/// `herald.error.code` header) and a message for a person.
public struct DeadLetterReason: Sendable, Hashable, CustomStringConvertible {
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public init(_ error: some CodedError) {
        self.init(code: error.code.name, message: error.message)
    }

    public var description: String { "\(code): \(message)" }

    /// No kind in the catalog handles the event's type.
    public static let unknownTypeCode = "event.unknown_type"
}

/// Builds dead-letter records: the original key, value and headers, plus reason headers.
public enum DeadLetter {
    /// Herald's version, in every dead letter's `herald.version` header.
    public static let heraldVersion = "0.1.0"

    public static func record(
        for message: KafkaMessage,
        reason: DeadLetterReason,
        topic: String,
        at now: Timestamp
    ) -> KafkaProducerRecord {
        let (key, value, originalHeaders, markers) = original(
            key: message.key,
            value: message.value,
            headers: message.headers
        )
        var headers = originalHeaders.filter { !$0.name.hasPrefix("herald.") }
        let failedAt = now.description
        headers += [
            KafkaHeader(HeraldHeader.errorCode, string: reason.code),
            KafkaHeader(HeraldHeader.errorMessage, string: reason.message),
            KafkaHeader(HeraldHeader.originalTopic, string: message.topic),
            KafkaHeader(HeraldHeader.originalPartition, string: String(message.partition)),
            KafkaHeader(HeraldHeader.originalOffset, string: String(message.offset)),
            KafkaHeader(HeraldHeader.attempts, string: "1"),
            KafkaHeader(HeraldHeader.firstFailure, string: failedAt),
            KafkaHeader(HeraldHeader.lastFailure, string: failedAt),
            KafkaHeader(HeraldHeader.version, string: heraldVersion),
        ]
        if let timestamp = message.timestampMilliseconds {
            headers.append(
                KafkaHeader(HeraldHeader.originalTimestamp, string: Timestamp(epochMilliseconds: timestamp).description)
            )
        }
        return KafkaProducerRecord(topic: topic, key: key, value: value, headers: headers + markers)
    }

    /// The most of an original value a dead letter carries, in bytes: the worker's limit on an
    /// event (a larger one is dead-lettered as `event.oversize`).
    public static let maximumValueBytes = 256 * 1024
    /// The most of the original headers (names and values) a dead letter carries, in bytes.
    public static let maximumHeaderBytes = 64 * 1024
    /// The most of an original key a dead letter carries, in bytes.
    public static let maximumKeyBytes = 16 * 1024

    /// The bytes `headers` take in a record, names and values.
    public static func size(of headers: [KafkaHeader]) -> Int {
        headers.reduce(0) { $0 + $1.name.utf8.count + ($1.value?.count ?? 0) }
    }

    /// The original value and headers as a dead letter carries them, and Herald's headers that say
    /// what was left out: whole, unless that could take the letter past the broker's limit on a
    /// record (1 MB by default). A topic may take records larger than its dead-letter topic does,
    /// and a letter that cannot be produced holds its partition for ever (the batch is never
    /// acknowledged, so it comes back to fail again). Such a value is cut to its first
    /// ``maximumValueBytes`` (``HeraldHeader/valueTruncated``) and such headers are left out
    /// (``HeraldHeader/headersDropped``), with the original size: the original stays at its topic,
    /// partition and offset for as long as the topic keeps it.
    /// A key over ``maximumKeyBytes`` is cut too (``HeraldHeader/keyTruncated``).
    public static func original(
        key: KafkaBytes?,
        value: KafkaBytes?,
        headers: [KafkaHeader]
    ) -> (key: KafkaBytes?, value: KafkaBytes?, headers: [KafkaHeader], markers: [KafkaHeader]) {
        let headerBytes = size(of: headers)
        let valueBytes = value?.count ?? 0
        var markers: [KafkaHeader] = []
        var carriedKey = key
        if let key, key.count > maximumKeyBytes {
            markers.append(KafkaHeader(HeraldHeader.keyTruncated, string: "true"))
            carriedKey = KafkaBytes(Array(key.prefix(maximumKeyBytes)))
        }
        guard valueBytes > maximumValueBytes || headerBytes > maximumHeaderBytes else {
            return (carriedKey, value, headers, markers)
        }
        var carried = value
        if let value, valueBytes > maximumValueBytes {
            markers.append(KafkaHeader(HeraldHeader.valueTruncated, string: "true"))
            carried = KafkaBytes(Array(value.prefix(maximumValueBytes)))
        }
        if headerBytes > maximumHeaderBytes {
            markers.append(KafkaHeader(HeraldHeader.headersDropped, string: String(headers.count)))
        }
        markers.append(KafkaHeader(HeraldHeader.originalSize, string: String(valueBytes)))
        return (carriedKey, carried, headerBytes > maximumHeaderBytes ? [] : headers, markers)
    }
}
