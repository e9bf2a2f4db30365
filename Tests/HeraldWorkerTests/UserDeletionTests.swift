import HeraldKafka
import HeraldStore
import HeraldTestSupport
import HeraldWorker
import Testing

@Suite("A user deleted on herald.directory")
struct UserDeletionTests {
    @Test(
        "user.deleted is applied and the topic's tombstones skipped, neither dead-lettered: the user's next notification finds no devices, and a registration from before the deletion arriving after it does not bring them back"
    )
    func deletedUser() async throws {
        let store = try SQLiteStore(path: ":memory:")
        let pipeline = try Pipeline()
        let worker = try pipeline.worker(store: store, clock: TestClock("2026-11-21T12:00:00Z"))
        let deleted = exampleUsers[0]
        try await withRunningServices([worker]) {
            try await registerExampleUsers(pipeline, store)
            try await pipeline.produce([
                directoryRecord(deleted.user, "delete-1", "user.deleted", [], time: "2026-11-01T10:00:00Z"),
                // The registration of 09:00 again, redelivered after the deletion.
                recipientRecords(deleted)[0],
                // The account service erases the user's keys from the compacted topic.
                KafkaProducerRecord(topic: "herald.directory", key: KafkaBytes(deleted.user), value: nil),
                KafkaProducerRecord(
                    topic: "herald.directory",
                    key: KafkaBytes("\(deleted.user)/device/device-1"),
                    value: nil
                ),
            ])
            try await eventually("the deletion and the redelivered registration applied, the tombstones skipped") {
                let counters = worker.statistics.snapshot
                return counters.directoryChanges == 3 * exampleUsers.count + 2 && counters.directoryTombstones == 2
            }
            #expect(try await store.recipients([deleted.user]).isEmpty)
            // One order for each example user.
            try await pipeline.produce(orderEvents(0..<exampleUsers.count))
            try await eventually("every order decided") {
                worker.statistics.snapshot.decisionsByReason.values.reduce(0, +) == exampleUsers.count
            }
        }
        let counters = worker.statistics.snapshot
        #expect(counters.decisionsByReason == ["sent": exampleUsers.count - 1, "no_devices": 1])
        #expect(counters.outboundByProvider.values.reduce(0, +) == exampleUsers.count - 1)
        #expect(counters.deadLettersByCode.isEmpty)
    }
}
