import HeraldApp
import HeraldEvents
import HeraldKafka
import HeraldTestSupport
import HeraldWorker
import Testing

@Suite("herald dlq")
struct DeadLetterToolTests {
    static func letter(
        _ id: Int,
        code: String,
        failedAt: String,
        original: String,
        topic: String = "herald.outbound.dlq",
        more: [KafkaHeader] = []
    ) -> KafkaProducerRecord {
        KafkaProducerRecord(
            topic: topic,
            key: KafkaBytes("user-\(id)"),
            value: KafkaBytes(#"{"id":\#(id)}"#),
            headers: [
                KafkaHeader("traceparent", string: "00-trace-\(id)"),
                KafkaHeader(HeraldHeader.errorCode, string: code),
                KafkaHeader(HeraldHeader.errorMessage, string: "why \(id)"),
                KafkaHeader(HeraldHeader.originalTopic, string: original),
                KafkaHeader(HeraldHeader.attempts, string: "5"),
                KafkaHeader(HeraldHeader.lastFailure, string: failedAt),
            ] + more
        )
    }

    @Test("list filters by code and time; redrive puts the originals back without Herald's headers")
    func listAndRedrive() async throws {
        let environment = try KafkaTestEnvironment(topics: [
            "herald.outbound.dlq": 2, "herald.outbound": 2, "orders.events": 1,
        ])
        let tool = DeadLetterTool(
            bootstrapServers: [environment.cluster.bootstrapServers],
            topic: "herald.outbound.dlq"
        )
        #expect(
            try await tool.read(logger: environment.logger).isEmpty,
            "an empty topic reads as empty, without waiting forever"
        )
        try await environment.produce([
            Self.letter(
                1,
                code: "apns.BadDeviceToken",
                failedAt: "2026-11-20T08:00:00.000Z",
                original: "herald.outbound"
            ),
            Self.letter(
                2,
                code: "apns.BadDeviceToken",
                failedAt: "2026-11-22T08:00:00.000Z",
                original: "herald.outbound"
            ),
            Self.letter(
                3,
                code: "fcm.INVALID_ARGUMENT",
                failedAt: "2026-11-22T09:00:00.000Z",
                original: "herald.outbound"
            ),
            // The worker's letters say when their original was written.
            Self.letter(
                4,
                code: "event.unknown_type",
                failedAt: "2026-11-22T10:00:00.000Z",
                original: "orders.events",
                more: [KafkaHeader(HeraldHeader.originalTimestamp, string: "2026-11-22T09:59:58.250Z")]
            ),
            // An event too large to carry whole: only its first bytes are in the letter.
            Self.letter(
                5,
                code: "event.oversize",
                failedAt: "2026-11-22T11:00:00.000Z",
                original: "orders.events",
                more: [KafkaHeader(HeraldHeader.valueTruncated, string: "true")]
            ),
        ])
        #expect(try await tool.read(logger: environment.logger).count == 5)
        var filtered = tool
        filtered.code = "apns.BadDeviceToken"
        filtered.since = Timestamp(rfc3339: "2026-11-21T00:00:00Z")
        let chosen = try await filtered.read(logger: environment.logger)
        #expect(chosen.map { $0.message.key?.string } == ["user-2"])
        #expect(chosen.first?.summary.contains("apns.BadDeviceToken") == true)

        try await environment.withCollector(["herald.outbound", "orders.events"]) { received in
            var all = tool
            all.since = Timestamp(rfc3339: "2026-11-22T00:00:00Z")
            // As `herald dlq redrive` does it: read to the end, then produced.
            let (matched, counts, truncated) = try await all.redriveAll(logger: environment.logger)
            #expect(matched == 4)
            #expect(counts == ["herald.outbound": 2, "orders.events": 1])
            #expect(truncated == 1, "a cut value is not the original event: not re-driven")
            #expect(await eventually { received.count == 3 }, "\(received.readerPositions)")
            for message in received.all {
                #expect(!message.headers.contains { $0.name.hasPrefix("herald.") })
                #expect(message.header("traceparent") != nil)
            }
            #expect(Set(received.all.compactMap { $0.key?.string }) == ["user-2", "user-3", "user-4"])
            // A re-driven event keeps its original's timestamp, which the worker's ledger keys an
            // event without a `time` by; a letter that does not say gets the producer's clock.
            let timestamps = Dictionary(
                received.all.compactMap { message in
                    message.timestampMilliseconds.map { (message.key?.string ?? "", $0) }
                },
                uniquingKeysWith: { first, _ in first }
            )
            #expect(timestamps["user-4"] == Timestamp(rfc3339: "2026-11-22T09:59:58.250Z")?.epochMilliseconds)
            let started = try #require(Timestamp(rfc3339: "2026-11-30T00:00:00Z")).epochMilliseconds
            #expect(timestamps["user-2"].map { $0 > started } == true, "\(timestamps)")
        }
    }

    @Test("letters that come back while their topic is re-driven (events still broken) are not re-driven again")
    func redriveDoesNotChaseItsTail() async throws {
        let environment = try KafkaTestEnvironment(topics: [
            "herald.outbound.dlq": 2, "herald.events.dlq": 2, "orders.events": 2,
        ])
        let tool = DeadLetterTool(
            bootstrapServers: [environment.cluster.bootstrapServers],
            topic: "herald.outbound.dlq"
        )
        let count = 200
        // Letters whose original topic is the dead-letter topic itself: each one re-driven comes
        // straight back, acknowledged before the re-drive reads on, as an event still broken comes
        // back from a worker (only later). Read as they arrive, they would be chosen again.
        try await environment.produce(
            (1...count).map {
                Self.letter(
                    $0,
                    code: "event.not_json",
                    failedAt: "2026-11-22T08:00:00.000Z",
                    original: "herald.outbound.dlq"
                )
            }
        )
        let (matched, counts, _) = try await tool.redriveAll(logger: environment.logger)
        #expect(matched == count)
        #expect(counts == ["herald.outbound.dlq": count])
        #expect(try await tool.read(logger: environment.logger).count == 2 * count)

        // And with a stand-in for a worker that dead-letters every re-driven event again as soon as
        // it arrives, while the re-drive still reads the topic.
        var fresh = tool
        fresh.topic = "herald.events.dlq"
        try await environment.produce(
            (1...count).map {
                Self.letter(
                    $0,
                    code: "event.not_json",
                    failedAt: "2026-11-22T08:00:00.000Z",
                    original: "orders.events",
                    topic: "herald.events.dlq"
                )
            }
        )
        try await environment.withCollector(["orders.events"]) { received in
            let worker = Task {
                var handled = 0
                while !Task.isCancelled {
                    let events = received.all
                    if events.count > handled {
                        try await environment.produce(
                            events[handled...].map {
                                DeadLetter.record(
                                    for: $0,
                                    reason: DeadLetterReason(code: "event.not_json", message: "still broken"),
                                    topic: "herald.events.dlq",
                                    at: Timestamp(rfc3339: "2026-11-26T08:00:00Z")!
                                )
                            }
                        )
                        handled = events.count
                    }
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
            defer { worker.cancel() }
            let (matched, counts, _) = try await fresh.redriveAll(logger: environment.logger)
            #expect(matched == count)
            #expect(counts == ["orders.events": count])
            #expect(try await eventually { try await fresh.read(logger: environment.logger).count == 2 * count })
            #expect(received.count == count, "each letter re-driven once")
        }
    }

    @Test("a broker that cannot be reached is an error, not an empty list")
    func unreachableBroker() async throws {
        let environment = try KafkaTestEnvironment(topics: [:])
        let tool = DeadLetterTool(bootstrapServers: ["127.0.0.1:1"], topic: "herald.outbound.dlq")
        await #expect(throws: TopicReaderError.self) {
            _ = try await tool.read(logger: environment.logger, timeout: .seconds(3))
        }
    }
}
