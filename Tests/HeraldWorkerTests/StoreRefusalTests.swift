import Foundation
import HeraldEvents
import HeraldKafka
import HeraldTestSupport
import HeraldWorker
import Testing

@testable import HeraldStore

/// A batch the store refuses for what one of its events holds: retried whole, it would be refused
/// for ever and hold its partitions. SQLite refuses through triggers the test adds to the worker's
/// own database (a constraint, as PostgreSQL's is for a value it cannot keep).
@Suite("The store refusing part of a batch")
struct StoreRefusalTests {
    let scratch = ScratchDirectory()

    @Test(
        "an event or a directory change the store refuses, even alone, is dead-lettered as store.rejected; the rest go on"
    )
    func refusedParts() async throws {
        let path = try scratch.file("state.sqlite", "")
        try FileManager.default.removeItem(atPath: path)
        let store = try SQLiteStore(path: path)
        let database = try SQLiteConnection(path: path)
        try database.execute(
            """
            CREATE TRIGGER refuse_events BEFORE INSERT ON decisions WHEN NEW.event_id LIKE 'refused-%'
            BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;
            CREATE TRIGGER refuse_devices BEFORE INSERT ON devices WHEN NEW.device_id LIKE 'refused-%'
            BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;
            """
        )
        let pipeline = try Pipeline()
        let worker = try pipeline.worker(store: store, clock: TestClock("2026-11-21T08:00:00Z"))
        let user = exampleUsers[0]
        func order(_ id: String) -> KafkaProducerRecord {
            let data = object([
                ("userId", .string(user.user)), ("orderId", .string("ord-\(id)")),
                ("total", object([("amount", .number("10")), ("currency", .string("NOK"))])),
                ("itemCount", .number("1")),
            ])
            return KafkaProducerRecord(
                topic: "orders.events",
                partition: 0,
                key: KafkaBytes(user.user),
                value: KafkaBytes(cloudEvent(id: id, type: "order.confirmed", data: data))
            )
        }
        let refusedDevice = directoryRecord(
            user.user,
            "refused-registration",
            "device.registered",
            [
                ("deviceId", .string("refused-tablet")), ("platform", .string("ios")), ("provider", .string("apns")),
                ("token", .string(String(repeating: "cd", count: 32))), ("appId", .string("no.getdrop.app")),
            ]
        )
        try await pipeline.withCollector(["herald.outbound", "herald.events.dlq"]) { received in
            try await withRunningServices([worker]) {
                try await pipeline.produce(
                    recipientRecords(user) + [refusedDevice]
                )
                try await eventually("the directory is loaded and the refused change dead-lettered") {
                    try await store.recipients([user.user]).count == 1 && received.count == 1
                }
                // One batch: refused events among good ones, the first and the last of it too.
                try await pipeline.produce(["refused-1", "good-1", "refused-2", "good-2", "refused-3"].map(order))
                try await eventually("the good events sent and the refused ones dead-lettered") {
                    received.count >= 1 + 5
                }
                try await pipeline.produce([order("good-3")])
                try await eventually("an event after them is handled") { received.count >= 1 + 6 }
            }
            let letters = received.all.filter { $0.topic == "herald.events.dlq" }
            #expect(
                letters.map { $0.headerText(HeraldHeader.errorCode) } == Array(repeating: "store.rejected", count: 4)
            )
            #expect(letters.first?.headerText(HeraldHeader.originalTopic) == "herald.directory")
            #expect(
                letters.allSatisfy { ($0.headerText(HeraldHeader.errorMessage) ?? "").contains("refused by the test") }
            )
            let events = letters.dropFirst().compactMap {
                (try? EventDecoder().decode(value: $0.value.map { Array($0) }))?.id
            }
            #expect(events == ["refused-1", "refused-2", "refused-3"])
            #expect(received.all.compactMap(\.outbound).map(\.eventID) == ["good-1", "good-2", "good-3"])
        }
        #expect(try await store.recipients([user.user])[OpaqueID(user.user)]?.devices.count == 1)
    }
}
