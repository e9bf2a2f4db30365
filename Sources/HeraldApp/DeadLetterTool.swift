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

        /// `topic[partition]@offset  code  → original  attempts  last failure  message`.
        public var summary: String {
            "\(message.topic)[\(message.partition)]@\(message.offset)  \(code)  → \(originalTopic ?? "?")  "
                + "attempts \(header(HeraldHeader.attempts) ?? "?")  \(header(HeraldHeader.lastFailure) ?? "")  "
                + (header(HeraldHeader.errorMessage) ?? "")
        }
    }

    /// The dead letters matching the filters, in partition and offset order.
    public func read(logger: Logger, timeout: Duration = .seconds(30)) async throws -> [Letter] {
        var configuration = KafkaConsumerConfiguration(
            groupID: "herald-dlq-\(UInt64.random(in: 0...UInt64.max))",
            topics: [topic]
        )
        configuration.client.bootstrapServers = bootstrapServers
        configuration.client.clientID = "herald-dlq"
        configuration.autoOffsetReset = .earliest
        configuration.fetchMaxWait = .milliseconds(100)
        // A group of one that reads once: no reason to wait long for a member that went away.
        configuration.sessionTimeout = .seconds(6)
        configuration.closeTimeout = .seconds(2)
        let consumer = try KafkaConsumer(configuration: configuration, logger: logger)
        let running = Task { try await consumer.run() }
        defer {
            consumer.triggerShutdown()
            running.cancel()
        }
        var letters: [Letter] = []
        let deadline = ContinuousClock.now + timeout
        let reading = Task { () -> [KafkaMessage] in
            var messages: [KafkaMessage] = []
            for await batch in consumer.messages {
                messages += batch
                // Done only for the group's own position; the group is thrown away.
                consumer.markDone(batch)
            }
            return messages
        }
        // An empty topic hands out no batch: stop once assigned with nothing behind.
        var reachedEnd = false
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            // Every assigned partition either empty, or read up to its end.
            let assignment = consumer.assignment
            let lag = consumer.lag()
            let empty = consumer.emptyPartitions()
            let atEnd = assignment.allSatisfy { empty.contains($0) || lag[$0] == 0 }
            if !assignment.isEmpty && atEnd && consumer.bufferedMessageCount == 0 {
                reachedEnd = true
                break
            }
        }
        reading.cancel()
        consumer.triggerShutdown()
        let messages = await reading.value
        // Never "0 dead letters" for a topic that could not be read.
        guard reachedEnd else {
            throw DeadLetterToolError.incomplete(topic: topic, after: timeout, read: messages.count)
        }
        for message in messages {
            let letter = Letter(message: message)
            if let code, letter.code != code { continue }
            if let since, (letter.lastFailure ?? Timestamp(epochMilliseconds: 0)) < since { continue }
            letters.append(letter)
        }
        return letters.sorted { ($0.message.partition, $0.message.offset) < ($1.message.partition, $1.message.offset) }
    }

    /// Produces each letter's original key, value and headers (without Herald's reason headers) to
    /// its original topic. Returns how many went to each topic.
    public func redrive(_ letters: [Letter], logger: Logger) async throws -> [String: Int] {
        var configuration = KafkaProducerConfiguration()
        configuration.client.bootstrapServers = bootstrapServers
        configuration.client.clientID = "herald-dlq"
        let producer = try KafkaProducer(configuration: configuration, logger: logger)
        let running = Task { try await producer.run() }
        defer {
            producer.triggerShutdown()
            running.cancel()
        }
        var records: [KafkaProducerRecord] = []
        var counts: [String: Int] = [:]
        for letter in letters {
            guard let original = letter.originalTopic, !original.isEmpty else { continue }
            records.append(
                KafkaProducerRecord(
                    topic: original,
                    key: letter.message.key,
                    value: letter.message.value,
                    headers: letter.message.headers.filter { !$0.name.hasPrefix("herald.") }
                )
            )
            counts[original, default: 0] += 1
        }
        for result in try await producer.send(records) { _ = try result.get() }
        return counts
    }
}

public enum DeadLetterToolError: Error, CustomStringConvertible {
    case incomplete(topic: String, after: Duration, read: Int)

    public var description: String {
        switch self {
        case .incomplete(let topic, let after, let read):
            "could not read \(topic) to its end within \(after) (\(read) records read): "
                + "is the broker reachable, and does the topic exist?"
        }
    }
}
