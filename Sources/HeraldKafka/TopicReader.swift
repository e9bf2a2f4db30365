import Logging

/// Reads a topic from its start to its end, with a throwaway consumer group of its own: what the
/// dead-letter tools and replay from a topic need. Batches are handed out in consumption order
/// (in order within each partition) and the next is fetched while one is handled, up to the
/// consumer's buffer.
public struct TopicReader: Sendable {
    public var bootstrapServers: [String]
    public var topic: String
    public var clientID: String

    public init(bootstrapServers: [String], topic: String, clientID: String) {
        self.bootstrapServers = bootstrapServers
        self.topic = topic
        self.clientID = clientID
    }

    /// Calls `body` with each batch until every partition is read to its end.
    ///
    /// - Parameter idleTimeout: how long reading may make no progress (no partitions assigned, no
    ///   batch) before it gives up: a topic that cannot be read is an error, never an empty read.
    /// - Returns: how many records were read.
    /// - Throws: ``TopicReaderError`` `.incomplete`, or what `body` throws.
    @discardableResult
    public func read(
        logger: Logger,
        idleTimeout: Duration = .seconds(30),
        _ body: ([KafkaMessage]) async throws -> Void
    ) async throws -> Int {
        var configuration = KafkaConsumerConfiguration(
            groupID: "\(clientID)-\(UInt64.random(in: 0...UInt64.max))",
            topics: [topic]
        )
        configuration.client.bootstrapServers = bootstrapServers
        configuration.client.clientID = clientID
        configuration.autoOffsetReset = .earliest
        configuration.fetchMaxWait = .milliseconds(100)
        // A group of one that reads once: no reason to wait long for a member that went away.
        configuration.sessionTimeout = .seconds(6)
        configuration.closeTimeout = .seconds(2)
        // A group of one has no partitions to keep flowing while others move, and with librdkafka
        // before 2.3 a cooperative-sticky consumer that never got an assignment (the broker out of
        // reach) cannot be destroyed: it would keep its threads and reconnect for the life of the
        // process (see RDKafkaConsumerClient.mayDestroy).
        configuration.assignmentStrategy = .eager
        let consumer = try KafkaConsumer(configuration: configuration, logger: logger)
        let running = Task { try await consumer.run() }
        let progress = ProgressCounter()
        // Ends the message sequence once every assigned partition is empty or read to its end and
        // nothing waits in the buffer (nil); gives up after `idleTimeout` without progress, saying
        // where each partition stood.
        let watching = Task { () -> String? in
            var lastCount = -1
            var idleSince = ContinuousClock.now
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(100))
                let assignment = consumer.assignment
                let lag = consumer.lag()
                let empty = consumer.emptyPartitions()
                if !assignment.isEmpty && consumer.bufferedMessageCount == 0
                    && assignment.allSatisfy({ empty.contains($0) || lag[$0] == 0 })
                {
                    consumer.triggerShutdown()
                    return nil
                }
                let count = progress.value
                if count != lastCount {
                    lastCount = count
                    idleSince = .now
                } else if ContinuousClock.now - idleSince > idleTimeout {
                    // The count then, beside the positions: records the body finishes afterwards
                    // are counted in the total too.
                    let stoppedAt = "\(count) read, " + consumer.readingPositions
                    consumer.triggerShutdown()
                    return stoppedAt
                }
            }
            return "cancelled"
        }
        var read = 0
        do {
            for await batch in consumer.messages {
                try await body(batch)
                read += batch.count
                progress.add(batch.count)
                // Done only for the group's own position: it is what says "read to the end".
                consumer.markDone(batch)
            }
        } catch {
            watching.cancel()
            consumer.triggerShutdown()
            _ = try? await running.value
            throw error
        }
        let stopped = await watching.value
        consumer.triggerShutdown()
        _ = try? await running.value
        if let stopped {
            throw TopicReaderError.incomplete(topic: topic, idle: idleTimeout, read: read, partitions: stopped)
        }
        return read
    }
}

public enum TopicReaderError: Error, Sendable, CustomStringConvertible {
    /// `partitions`: where each assigned partition stood when reading gave up.
    case incomplete(topic: String, idle: Duration, read: Int, partitions: String)

    public var description: String {
        switch self {
        case .incomplete(let topic, let idle, let read, let partitions):
            "could not read \(topic) to its end: no progress for \(idle) (\(read) records read in all; when it gave up: \(partitions)); "
                + "is the broker reachable, and does the topic exist?"
        }
    }
}
