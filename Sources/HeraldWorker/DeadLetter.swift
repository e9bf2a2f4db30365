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
        var headers = message.headers.filter { !$0.name.hasPrefix("herald.") }
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
        return KafkaProducerRecord(topic: topic, key: message.key, value: message.value, headers: headers)
    }
}
