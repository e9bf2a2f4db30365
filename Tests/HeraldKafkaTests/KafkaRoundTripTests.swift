import HeraldKafka
import HeraldTestSupport
import Testing

@Suite("Kafka round trip", .serialized, .timeLimit(.minutes(2)))
struct KafkaRoundTripTests {
    @Test("keys, headers, binary, empty and null values survive a round trip unchanged")
    func roundTrip() async throws {
        let env = try KafkaTestEnvironment(topics: ["roundtrip": 1])
        let producer = try env.makeProducer()
        let consumer = try env.makeConsumer(group: "roundtrip", topics: ["roundtrip"])
        let binary = KafkaBytes((0...255).map { UInt8($0) } + [0, 0, 0xFF])
        let records = [
            KafkaProducerRecord(topic: "roundtrip", key: "user-1", value: "{\"hello\":\"wörld ✓\"}"),
            KafkaProducerRecord(
                topic: "roundtrip",
                key: binary,
                value: binary,
                headers: [
                    KafkaHeader("ce_type", string: "order.confirmed"),
                    KafkaHeader("empty", KafkaBytes([])),
                    KafkaHeader("null", nil),
                    KafkaHeader("ce_type", string: "duplicate name"),
                ]
            ),
            KafkaProducerRecord(topic: "roundtrip", key: KafkaBytes([]), value: KafkaBytes([])),
            KafkaProducerRecord(topic: "roundtrip", key: nil, value: nil),
        ]
        let received = try await withRunningServices([producer, consumer]) {
            let results = try await producer.send(records)
            for result in results { _ = try result.get() }
            return try await withTimeout(.seconds(30), "consume") {
                var all: [KafkaMessage] = []
                for await batch in consumer.messages {
                    all += batch
                    consumer.markDone(batch)
                    if all.count >= records.count { break }
                }
                return all
            }
        }
        try #require(received.count == 4)
        #expect(received.map(\.offset) == [0, 1, 2, 3])
        #expect(received[0].key?.string == "user-1")
        #expect(received[0].value?.string == "{\"hello\":\"wörld ✓\"}")
        #expect(received[0].headers.isEmpty)
        #expect(received[0].timestampMilliseconds != nil)
        #expect(received[1].key == binary)
        #expect(received[1].value == binary)
        #expect(received[1].headers == records[1].headers)
        #expect(received[1].header("ce_type")?.string == "order.confirmed")
        #expect(received[1].header("null") == nil)
        #expect(received[1].header("missing") == nil)
        #expect(received[2].key == KafkaBytes([]))
        #expect(received[2].value == KafkaBytes([]))
        #expect(received[2].value != nil)
        #expect(received[3].key == nil)
        #expect(received[3].value == nil)
    }

    @Test("records queued in parts arrive in order, with one set of deliveries indexed across the parts")
    func enqueueInParts() async throws {
        let env = try KafkaTestEnvironment(topics: ["parts": 1, "parts.other": 1])
        let producer = try env.makeProducer()
        let consumer = try env.makeConsumer(group: "parts", topics: ["parts"])
        func record(_ value: String, topic: String = "parts") -> KafkaProducerRecord {
            KafkaProducerRecord(topic: topic, key: "k", value: KafkaBytes(value))
        }
        // An empty part, and a topic changing within a part and across parts.
        let parts = [
            [record("a"), record("b")], [], [record("c"), record("x", topic: "parts.other"), record("d")],
            [record("e")],
        ]
        let received = try await withRunningServices([producer, consumer]) {
            let nothing = try await producer.enqueue(contentsOf: [])
            #expect(nothing.count == 0)
            #expect(await nothing.wait().isEmpty)
            #expect(try await producer.enqueue(contentsOf: [[], []]).count == 0)

            let deliveries = try await producer.enqueue(contentsOf: parts)
            #expect(deliveries.count == 6)
            let results = await deliveries.wait()
            let reports = try results.map { try $0.get() }
            // Indexed as the parts joined: the fourth record is the other topic's only one.
            #expect(reports.map(\.offset) == [0, 1, 2, 0, 3, 4])
            #expect(await deliveries.failures().isEmpty)
            return try await withTimeout(.seconds(30), "consume") {
                var all: [KafkaMessage] = []
                for await batch in consumer.messages {
                    all += batch
                    consumer.markDone(batch)
                    if all.count >= 5 { break }
                }
                return all
            }
        }
        #expect(received.compactMap { $0.value?.string } == ["a", "b", "c", "d", "e"])
    }

    @Test("a bad property fails at start-up naming the key, and never echoes a secret")
    func badConfiguration() throws {
        var configuration = KafkaProducerConfiguration()
        configuration.client.properties["linger.ms"] = "not-a-number"
        let error = #expect(throws: KafkaError.self) {
            try KafkaProducer(configuration: configuration, logger: .init(label: "t"))
        }
        #expect(error?.code == .configuration)
        #expect(error?.message.contains("linger.ms") == true)

        var secret = KafkaConsumerConfiguration(groupID: "g", topics: ["t"])
        secret.client.properties["sasl.password.bogus"] = "hunter2-very-secret"
        let secretError = #expect(throws: KafkaError.self) {
            try KafkaConsumer(configuration: secret, logger: .init(label: "t"))
        }
        #expect(secretError?.message.contains("sasl.password.bogus") == true)
        #expect(secretError?.message.contains("hunter2") == false)
        #expect(secretError?.description.contains("hunter2") == false)

        let empty = #expect(throws: KafkaError.self) {
            try KafkaConsumer(
                configuration: KafkaConsumerConfiguration(groupID: "", topics: ["t"]),
                logger: .init(label: "t")
            )
        }
        #expect(empty?.message.contains("groupID") == true)
    }
}
