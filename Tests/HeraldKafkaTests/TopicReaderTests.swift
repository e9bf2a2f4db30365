import HeraldTestSupport
import Testing

@testable import HeraldKafka

@Suite("Reading a topic to its end", .timeLimit(.minutes(2)))
struct TopicReaderTests {
    /// A cluster with `topic`: 3 partitions of 100 records each (`m-0` to `m-299`).
    private func environment(with topic: String) async throws -> KafkaTestEnvironment {
        let environment = try KafkaTestEnvironment(topics: [topic: 3])
        let producer = try environment.makeProducer()
        try await withRunningServices([producer]) {
            try await produce(producer, topic: topic, count: 300, partitions: 3)
        }
        return environment
    }

    @Test("a topic is read to its end, every record once, and the reader's consumer is destroyed")
    func readsToTheEnd() async throws {
        let environment = try await environment(with: "reader.in")
        let clientID = "reader-\(UInt64.random(in: 0...UInt64.max))"
        var values: [String] = []
        let read = try await TopicReader(
            bootstrapServers: [environment.cluster.bootstrapServers],
            topic: "reader.in",
            clientID: clientID
        ).read(logger: environment.logger) { batch in
            values += batch.map { $0.value?.string ?? "" }
        }
        #expect(read == 300)
        #expect(Set(values) == Set((0..<300).map { "m-\($0)" }) && values.count == 300)
        #expect(await eventually { RDKafkaConsumerClient.endedHandles(clientID: clientID).destroyed == 1 })
    }

    @Test("reading that makes no progress is an error that says where each partition stood")
    func stalledReading() async throws {
        let environment = try await environment(with: "reader.slow")
        let reader = TopicReader(
            bootstrapServers: [environment.cluster.bootstrapServers],
            topic: "reader.slow",
            clientID: "reader-\(UInt64.random(in: 0...UInt64.max))"
        )
        var batches = 0
        let error = await #expect(throws: TopicReaderError.self) {
            // The first batch, which comes once the partitions are assigned (joining the group takes
            // a few seconds), takes longer than reading may go without progress.
            try await reader.read(logger: environment.logger, idleTimeout: .seconds(10)) { _ in
                batches += 1
                if batches == 1 { try await Task.sleep(for: .seconds(15)) }
            }
        }
        let text = error.map { "\($0)" } ?? ""
        // Every partition named, with its offsets; the one whose records were handed out and not
        // done is behind (the others may be too, or fetched into the buffer).
        for partition in 0..<3 {
            #expect(text.contains("reader.slow[\(partition)] "), "\(text)")
        }
        #expect(text.components(separatedBy: "offsets 0..<100").count == 4, "\(text)")
        #expect(text.contains("100 behind its end"), "\(text)")
        // None had been done when it gave up; the batch it waited on, and what was buffered, were
        // handed out after.
        #expect(text.contains("when it gave up: 0 read, "), "\(text)")
        #expect(!text.contains("(0 records read in all"), "\(text)")
    }

    @Test(
        "a broker out of reach is an error, and the reader's consumer, which never had an assignment, is destroyed rather than left reconnecting"
    )
    func unreachableBroker() async throws {
        let environment = try KafkaTestEnvironment(topics: [:])
        let clientID = "reader-\(UInt64.random(in: 0...UInt64.max))"
        let reader = TopicReader(bootstrapServers: ["127.0.0.1:1"], topic: "reader.in", clientID: clientID)
        let error = await #expect(throws: TopicReaderError.self) {
            try await reader.read(logger: environment.logger, idleTimeout: .seconds(2)) { _ in }
        }
        // It says how far it got: here, not even an assignment.
        let text = error.map { "\($0)" } ?? ""
        #expect(text.contains("(0 records read in all; when it gave up: 0 read, no partition was assigned)"), "\(text)")
        // With librdkafka before 2.3, a cooperative-sticky consumer closed before its first
        // assignment cannot be destroyed (RDKafkaConsumerClient.mayDestroy): the reader's group of
        // one must not be one.
        #expect(await eventually { RDKafkaConsumerClient.endedHandles(clientID: clientID) != (0, 0) })
        let ended = RDKafkaConsumerClient.endedHandles(clientID: clientID)
        #expect(
            ended.destroyed == 1 && ended.leftAlone == 0,
            "destroyed \(ended.destroyed), left alone \(ended.leftAlone)"
        )
    }
}
