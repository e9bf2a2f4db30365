import HeraldEvents
import HeraldKafka
import HeraldStore
import HeraldTestSupport
import HeraldWorker
import Testing

/// A domain topic may take records larger than the dead-letter topic does (and than the producer's
/// limit on a record, 1 MB by default): the dead letter of such a record must still be producible,
/// or the batch is never acknowledged and the partition stops.
@Suite("Records too large to dead-letter whole")
struct LargeRecordTests {
    @Test(
        "an event of 1.2 MB is dead-lettered as event.oversize with its first 256 KiB, the original size and place; the partition goes on"
    )
    func oversizeEvent() async throws {
        let store = try SQLiteStore(path: ":memory:")
        let pipeline = try Pipeline()
        let worker = try pipeline.worker(store: store, clock: TestClock("2026-11-21T08:00:00Z"))
        let user = exampleUsers[0]
        func order(_ id: String, note: String = "") -> KafkaProducerRecord {
            KafkaProducerRecord(
                topic: "orders.events",
                partition: 0,
                key: KafkaBytes(user.user),
                value: KafkaBytes(
                    cloudEvent(
                        id: id,
                        type: "order.confirmed",
                        data: object([
                            ("userId", .string(user.user)), ("orderId", .string("ord-\(id)")),
                            ("total", object([("amount", .number("10")), ("currency", .string("NOK"))])),
                            ("itemCount", .number("1")), ("note", .string(note)),
                        ])
                    )
                ),
                headers: [KafkaHeader("traceparent", string: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")]
            )
        }
        let big = order("big", note: String(repeating: "x", count: 1_200_000))
        let size = try #require(big.value?.count)
        // The test's own producer takes records of up to 4 MB, as a topic configured for them would.
        let producer = try pipeline.environment.makeProducer { $0.client.properties["message.max.bytes"] = "4000000" }
        let all = try await pipeline.withCollector(["herald.outbound", "herald.events.dlq"]) { received in
            try await withRunningServices([worker]) {
                try await pipeline.produce(
                    recipientRecords(user)
                )
                try await eventually("the directory is loaded") { try await store.recipients([user.user]).count == 1 }
                try await withRunningServices([producer]) {
                    for result in try await producer.send([order("before"), big, order("after")]) {
                        _ = try result.get()
                    }
                }
                try await eventually("the events around it sent and it dead-lettered") { received.count >= 3 }
            }
            return received.all
        }
        let letters = all.filter { $0.topic == "herald.events.dlq" }
        #expect(letters.count == 1)
        let letter = try #require(letters.first)
        #expect(letter.headerText(HeraldHeader.errorCode) == "event.oversize")
        #expect(letter.headerText(HeraldHeader.valueTruncated) == "true")
        #expect(letter.headerText(HeraldHeader.originalSize) == String(size))
        #expect(letter.headerText(HeraldHeader.originalTopic) == "orders.events")
        #expect(letter.headerText("traceparent") != nil, "the original headers, small, are kept")
        #expect(letter.value.map { [UInt8]($0) } == big.value.map { [UInt8]($0.prefix(DeadLetter.maximumValueBytes)) })
        #expect(all.compactMap(\.outbound).map(\.eventID) == ["before", "after"])
    }

    @Test("a value and headers within the limits are carried whole; over them, cut and left out with what was left out")
    func originalParts() {
        let small = KafkaBytes(Array(repeating: 7, count: DeadLetter.maximumValueBytes))
        let headers = [KafkaHeader("a", string: "1")]
        let whole = DeadLetter.original(key: KafkaBytes("user"), value: small, headers: headers)
        #expect(
            whole.key == KafkaBytes("user") && whole.value == small && whole.headers == headers && whole.markers.isEmpty
        )

        let large = KafkaBytes(Array(repeating: 7, count: DeadLetter.maximumValueBytes + 1))
        let many = (0..<70).map { KafkaHeader("h\($0)", KafkaBytes(Array(repeating: 1, count: 1024))) }
        let cut = DeadLetter.original(
            key: KafkaBytes(Array(repeating: 9, count: DeadLetter.maximumKeyBytes + 1)),
            value: large,
            headers: many
        )
        #expect(cut.key?.count == DeadLetter.maximumKeyBytes)
        #expect(cut.value?.count == DeadLetter.maximumValueBytes)
        #expect(cut.headers.isEmpty)
        #expect(
            cut.markers == [
                KafkaHeader(HeraldHeader.keyTruncated, string: "true"),
                KafkaHeader(HeraldHeader.valueTruncated, string: "true"),
                KafkaHeader(HeraldHeader.headersDropped, string: "70"),
                KafkaHeader(HeraldHeader.originalSize, string: String(DeadLetter.maximumValueBytes + 1)),
            ]
        )
        let headersOnly = DeadLetter.original(key: nil, value: small, headers: many)
        #expect(headersOnly.value == small && headersOnly.headers.isEmpty)
        #expect(headersOnly.markers.map(\.name) == [HeraldHeader.headersDropped, HeraldHeader.originalSize])
    }
}
