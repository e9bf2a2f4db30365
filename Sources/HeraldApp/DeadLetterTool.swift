import Foundation
import HeraldEvents
import HeraldKafka
import Logging

/// `herald dlq list|show|redrive`: reads a dead-letter topic from the beginning to its end (with a
/// throwaway consumer group of its own), filters by error code and time, and re-drives
/// what was chosen to the topic each record came from.
public struct DeadLetterTool: Sendable {
    public var bootstrapServers: [String]
    public var topic: String
    /// Only dead letters with this `herald.error.code`.
    public var code: String?
    /// Only dead letters whose last failure is at or after this time.
    public var since: Timestamp?

    public init(bootstrapServers: [String], topic: String, code: String? = nil, since: Timestamp? = nil) {
        self.bootstrapServers = bootstrapServers
        self.topic = topic
        self.code = code
        self.since = since
    }

    /// One dead letter as read.
    public struct Letter: Sendable {
        public var message: KafkaMessage
        public func header(_ name: String) -> String? { message.header(name)?.string }
        public var code: String { header(HeraldHeader.errorCode) ?? "?" }
        public var originalTopic: String? { header(HeraldHeader.originalTopic) }
        public var lastFailure: Timestamp? { header(HeraldHeader.lastFailure).flatMap { Timestamp(rfc3339: $0) } }
        /// The original record's timestamp, if the letter says (the worker's do).
        public var originalTimestamp: Timestamp? {
            header(HeraldHeader.originalTimestamp).flatMap { Timestamp(rfc3339: $0) }
        }

        /// `topic[partition]@offset  code  → original  attempts  last failure  message`.
        public var summary: String {
            "\(message.topic)[\(message.partition)]@\(message.offset)  \(code)  → \(originalTopic ?? "?")  "
                + "attempts \(header(HeraldHeader.attempts) ?? "?")  \(header(HeraldHeader.lastFailure) ?? "")  "
                + (header(HeraldHeader.errorMessage) ?? "")
        }
    }

    /// Calls `body` with the dead letters matching the filters as they are read, a chunk at a time
    /// (each partition in offset order): a dead-letter topic after an incident can hold millions,
    /// more than a process should keep.
    ///
    /// - Returns: how many records were read, matching or not.
    /// - Throws: ``TopicReaderError`` when the topic cannot be read to its end: never "0 dead
    ///   letters" for a topic that could not be read.
    @discardableResult
    public func forEach(
        logger: Logger,
        timeout: Duration = .seconds(30),
        _ body: ([Letter]) async throws -> Void
    ) async throws -> Int {
        let reader = TopicReader(bootstrapServers: bootstrapServers, topic: topic, clientID: "herald-dlq")
        return try await reader.read(logger: logger, idleTimeout: timeout) { messages in
            var chosen: [Letter] = []
            for message in messages {
                let letter = Letter(message: message)
                if let code, letter.code != code { continue }
                if let since, (letter.lastFailure ?? Timestamp(epochMilliseconds: 0)) < since { continue }
                chosen.append(letter)
            }
            if !chosen.isEmpty { try await body(chosen) }
        }
    }

    /// The dead letters matching the filters, all of them, in partition and offset order.
    public func read(logger: Logger, timeout: Duration = .seconds(30)) async throws -> [Letter] {
        var letters: [Letter] = []
        try await forEach(logger: logger, timeout: timeout) { letters += $0 }
        return letters.sorted { ($0.message.partition, $0.message.offset) < ($1.message.partition, $1.message.offset) }
    }

    /// Produces each dead letter matching the filters to its original topic: its original key, value
    /// and headers, without Herald's reason headers.
    ///
    /// Two passes, so that neither memory nor the re-drive runs away. The first reads the topic to
    /// its end and keeps only where each partition ends; the second reads it again and produces the
    /// matching letters up to those ends, a batch at a time as they are read. A letter produced
    /// during the re-drive can come back to the topic (an event still broken is dead-lettered
    /// again): it lands after the recorded end and is not re-driven a second time. The letters
    /// are never all held at once: a dead-letter topic after an incident can hold millions.
    ///
    /// A letter whose value was cut (``HeraldHeader/valueTruncated``) is not re-driven: the event it
    /// would produce is not the original. Its original is at its original topic and offset.
    ///
    /// - Returns: how many matched, how many went to each topic, and how many were left out as cut.
    public func redriveAll(
        logger: Logger,
        timeout: Duration = .seconds(30)
    ) async throws -> (
        matched: Int, byTopic: [String: Int], truncated: Int
    ) {
        var ends: [Int32: Int64] = [:]
        let reader = TopicReader(bootstrapServers: bootstrapServers, topic: topic, clientID: "herald-dlq")
        try await reader.read(logger: logger, idleTimeout: timeout) { messages in
            for message in messages { ends[message.partition] = max(ends[message.partition] ?? -1, message.offset) }
        }
        guard !ends.isEmpty else { return (0, [:], 0) }
        return try await withProducer(logger: logger) { producer in
            var matched = 0
            var truncated = 0
            var counts: [String: Int] = [:]
            // Each batch's records are acknowledged before the next batch is read.
            try await forEach(logger: logger, timeout: timeout) { letters in
                var chosen = letters.filter { $0.message.offset <= ends[$0.message.partition] ?? -1 }
                matched += chosen.count
                let whole = chosen.count
                chosen.removeAll {
                    $0.header(HeraldHeader.valueTruncated) == "true" || $0.header(HeraldHeader.keyTruncated) == "true"
                }
                truncated += whole - chosen.count
                counts.merge(try await Self.produce(chosen, with: producer), uniquingKeysWith: +)
            }
            return (matched, counts, truncated)
        }
    }

    private func withProducer<R>(logger: Logger, _ body: (KafkaProducer) async throws -> R) async throws -> R {
        var configuration = KafkaProducerConfiguration()
        configuration.client.bootstrapServers = bootstrapServers
        configuration.client.clientID = "herald-dlq"
        let producer = try KafkaProducer(configuration: configuration, logger: logger)
        let running = Task { try await producer.run() }
        defer {
            producer.triggerShutdown()
            running.cancel()
        }
        return try await body(producer)
    }

    /// Produces `letters` to their original topics and waits for every acknowledgement: how many
    /// went to each topic.
    private static func produce(_ letters: [Letter], with producer: KafkaProducer) async throws -> [String: Int] {
        guard !letters.isEmpty else { return [:] }
        var records: [KafkaProducerRecord] = []
        var counts: [String: Int] = [:]
        for letter in letters {
            guard let original = letter.originalTopic, !original.isEmpty else { continue }
            records.append(
                KafkaProducerRecord(
                    topic: original,
                    key: letter.message.key,
                    value: letter.message.value,
                    headers: letter.message.headers.filter { !$0.name.hasPrefix("herald.") },
                    // The original's timestamp: for an event without a `time` it is what the worker's
                    // ledger knows the event by, so a letter re-driven after part of its event went
                    // out (another recipient's notification) is not counted again.
                    timestampMilliseconds: letter.originalTimestamp?.epochMilliseconds
                )
            )
            counts[original, default: 0] += 1
        }
        for result in try await producer.send(records) { _ = try result.get() }
        return counts
    }
}
