import HeraldKafka
import HeraldTestSupport
import Testing

@Suite("Kafka offset resets", .serialized, .timeLimit(.minutes(3)))
struct OffsetResetTests {
    @Test("librdkafka's reset warnings are read, from 2.0's wording and from later versions' with leader epochs")
    func parsesResetLines() {
        let old = KafkaOffsetReset(
            logLine:
                "[thrd:main]: events.v1 [3]: offset reset (at offset 10, broker 1) to BEGINNING: fetch failed due to "
                + "requested offset not available on the broker: Broker: Offset out of range"
        )
        #expect(old?.partition == TopicPartition("events.v1", 3))
        #expect(old?.refusedOffset == 10)
        #expect(old?.detail.hasPrefix("at offset 10, broker 1) to BEGINNING") == true)
        let epochs = KafkaOffsetReset(
            logLine: "output-sharing [1]: offset reset (at offset 10436673 (leader epoch 122), broker 70) to "
                + "offset BEGINNING (leader epoch -1): fetch failed due to requested offset not available on the "
                + "broker: Broker: Offset out of range"
        )
        #expect(epochs?.partition == TopicPartition("output-sharing", 1))
        #expect(epochs?.refusedOffset == 10_436_673)
        // Other OFFSET warnings are not resets.
        #expect(KafkaOffsetReset(logLine: "events [0]: offset commit failed: Broker: Not coordinator") == nil)
        #expect(KafkaOffsetReset(logLine: "offset reset without a partition") == nil)
        #expect(KafkaOffsetReset(logLine: "[thrd:main]: [2]: offset reset (at offset 1, broker 1)") == nil)
    }

    @Test("the applications' handler logs a reset at warning, naming the partition and the refused offset")
    func warningNamesThePartition() throws {
        let logs = LogCapture()
        let reset = try #require(
            KafkaOffsetReset(
                logLine: "[thrd:main]: orders.events [7]: offset reset (at offset 4711, broker 1) to BEGINNING: "
                    + "fetch failed due to requested offset not available on the broker: Broker: Offset out of range"
            )
        )
        KafkaConsumer.warnOfOffsetReset(to: logs.logger(label: "herald.worker"))(reset)
        let line = try #require(logs.recent.first)
        #expect(line.hasPrefix("herald.worker warning kafka partition's position reset"))
        for field in ["kafka.topic=orders.events", "kafka.partition=7", "kafka.refused_offset=4711"] {
            #expect(line.contains(field), "\(field) in \(line)")
        }
        #expect(line.contains("kafka.reset=at offset 4711, broker 1) to BEGINNING"))
    }

    /// The embedded cluster keeps about 5 MiB a partition and deletes the oldest messages beyond
    /// that, as a real broker's retention does: a group that commits, goes away while 7 MB more
    /// arrive, and comes back finds its committed offset gone.
    @Test("a committed offset that fell out of retention is counted, handed to the handler and logged")
    func committedOffsetOutOfRetention() async throws {
        let topic = "retained"
        let env = try KafkaTestEnvironment(topics: [topic: 1])
        let partition = TopicPartition(topic, 0)
        func records(_ count: Int, bytes: Int, from first: Int) -> [KafkaProducerRecord] {
            (first..<first + count).map { index in
                KafkaProducerRecord(
                    topic: topic,
                    key: KafkaBytes("k\(index)"),
                    value: KafkaBytes([UInt8](repeating: UInt8(ascii: "x"), count: bytes))
                )
            }
        }
        try await env.produce(records(10, bytes: 100, from: 0))

        // The group reads the first ten messages and commits on the way out.
        let first = try env.makeConsumer(group: "away", topics: [topic])
        let committed = try await withRunningServices([first]) {
            try await withTimeout(.seconds(60), "first read") {
                var read = 0
                for await batch in first.messages {
                    read += batch.count
                    first.markDone(batch)
                    if read >= 10 { break }
                }
            }
            // Commits are asynchronous: the group's offset reaches 10 a moment after the marks.
            return await eventually(within: .seconds(20)) {
                (try? await first.committedOffsets(for: [partition]))?[partition] == 10
            }
        }
        #expect(committed, "the group committed offset 10 before it went away")
        #expect(first.offsetResets().isEmpty)

        // 7 MB more: the embedded broker deletes the oldest, the group's ten among them.
        for part in 0..<7 { try await env.produce(records(1_000, bytes: 1_000, from: 10 + part * 1_000)) }

        let resets = SharedValue<[KafkaOffsetReset]>([])
        let logs = LogCapture()
        let second = try env.makeConsumer(
            group: "away",
            topics: [topic],
            logger: logs.logger(label: "herald.test.resets"),
            onOffsetReset: { reset in resets.update { $0.append(reset) } }
        )
        let firstOffset = try await withRunningServices([second]) {
            try await withTimeout(.seconds(60), "read after the reset") {
                for await batch in second.messages {
                    second.markDone(batch)
                    if let message = batch.first { return message.offset }
                }
                return -1
            }
        }
        // Read again from the oldest message the broker still has: more than the first ten are gone.
        #expect(firstOffset > 10)
        #expect(second.offsetResets() == [partition: 1])
        try #require(resets.value.count == 1)
        #expect(resets.value[0].partition == partition)
        #expect(resets.value[0].refusedOffset == 10)
        #expect(resets.value[0].detail.contains("BEGINNING"))
        // librdkafka's own line is still forwarded to the consumer's logger.
        #expect(logs.recent.contains { $0.contains("kafka.log.facility=OFFSET") })
    }
}
