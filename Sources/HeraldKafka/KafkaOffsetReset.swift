import Logging
import Synchronization

/// A partition whose reading position librdkafka moved by `auto.offset.reset` because the broker
/// refused the offset the consumer asked for: most often its committed offset had fallen out of
/// the topic's retention while the group was away, and the messages in between were deleted
/// unread. (A committed offset beyond the log's end, after a topic was recreated, is reset too,
/// and then messages are read again rather than lost.)
///
/// librdkafka reports such a reset only in a log line (facility `OFFSET`, syslog level warning),
/// which is where ``KafkaConsumer`` picks it up. A partition without a committed offset starts at
/// `auto.offset.reset` as well, but librdkafka logs that at debug level only, and it is not a reset.
public struct KafkaOffsetReset: Sendable, Equatable, CustomStringConvertible {
    /// The partition that was reset.
    public var partition: TopicPartition
    /// The offset the consumer asked for and the broker refused, if librdkafka printed one.
    public var refusedOffset: Int64?
    /// librdkafka's account of the reset, from the offset on: where to, and why.
    public var detail: String

    public var description: String { "\(partition): \(detail)" }

    /// Reads librdkafka's `OFFSET` warning, such as `[thrd:main]: events [3]: offset reset (at
    /// offset 10, broker 1) to BEGINNING: fetch failed due to requested offset not available on
    /// the broker: Broker: Offset out of range` (2.0; later versions add leader epochs after the
    /// offsets). Nil for any other line.
    package init?(logLine line: String) {
        guard let marker = line.firstRange(of: "]: offset reset (") else { return nil }
        let head = line[..<marker.lowerBound]
        // Topic names are ASCII letters, digits, '.', '_' and '-': no space, no bracket. What comes
        // before the name is librdkafka's thread tag ("[thrd:main]: ").
        guard let open = head.lastIndex(of: "["), let partition = Int32(head[head.index(after: open)...]),
            head[..<open].hasSuffix(" ")
        else { return nil }
        let topic = head[..<open].dropLast().split(separator: " ").last ?? ""
        guard !topic.isEmpty, topic.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) })
        else { return nil }
        self.partition = TopicPartition(String(topic), partition)
        detail = String(line[marker.upperBound...])
        let offsetPrefix = "at offset "
        if detail.hasPrefix(offsetPrefix) {
            let digits = detail.dropFirst(offsetPrefix.count).prefix { $0 == "-" || $0.isASCII && $0.isNumber }
            refusedOffset = Int64(digits)
        }
    }
}

extension KafkaConsumer {
    /// An ``OffsetResetHandler`` for an application: logs each reset at warning, for the
    /// library's own log forwards librdkafka's line at info only.
    public static func warnOfOffsetReset(to logger: Logger) -> OffsetResetHandler {
        { reset in
            logger.warning(
                """
                kafka partition's position reset: the broker no longer had the offset asked for; the messages \
                between it and where reading resumes were deleted unread, or are read again
                """,
                metadata: [
                    "kafka.topic": "\(reset.partition.topic)",
                    "kafka.partition": "\(reset.partition.partition)",
                    "kafka.refused_offset": "\(reset.refusedOffset.map(String.init) ?? "unknown")",
                    "kafka.reset": "\(reset.detail)",
                ]
            )
        }
    }
}

/// Counts a consumer's offset resets per partition and hands each to the application's handler.
/// Written from librdkafka's own threads (its log callback), read by `/metrics`.
final class OffsetResetRecorder: Sendable {
    private let counts = Mutex<[TopicPartition: Int]>([:])
    private let handler: KafkaConsumer.OffsetResetHandler?

    init(handler: KafkaConsumer.OffsetResetHandler?) {
        self.handler = handler
    }

    /// Records the reset `line` reports, if it reports one.
    func record(logLine line: String) {
        guard let reset = KafkaOffsetReset(logLine: line) else { return }
        counts.withLock { $0[reset.partition, default: 0] += 1 }
        handler?(reset)
    }

    var snapshot: [TopicPartition: Int] { counts.withLock { $0 } }
}
