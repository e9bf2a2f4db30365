import Foundation
import HeraldEvents
import HeraldKafka
import HeraldStore
import HeraldTestSupport
import HeraldWorker
import Testing

/// `count` order events for the example users, spread over the orders topic's partitions.
///
/// - Parameter time: the events' time. A worker on the wall clock (a `herald run` process) needs
///   the present: an order confirmation expires a day after its event.
func orderEvents(_ range: Range<Int>, time: String = "2026-11-21T12:00:00Z") -> [KafkaProducerRecord] {
    range.map { number in
        let user = exampleUsers[number % exampleUsers.count]
        return KafkaProducerRecord(
            topic: "orders.events",
            key: KafkaBytes("order-\(number)"),
            value: KafkaBytes(
                cloudEvent(
                    id: "order-\(number)",
                    type: "order.confirmed",
                    source: "/orders",
                    time: time,
                    data: object([
                        ("userId", .string(user.user)), ("orderId", .string("ord-\(number)")),
                        ("total", object([("amount", .number("99.5")), ("currency", .string("NOK"))])),
                        ("itemCount", .number("2")),
                    ])
                )
            )
        )
    }
}

func registerExampleUsers(_ pipeline: Pipeline, _ store: any StateStore) async throws {
    try await pipeline.produce(
        exampleUsers.flatMap {
            recipientRecords($0)
        }
    )
}

/// Checks that every event in `expected` has exactly one notification id and that its copies are
/// identical; returns the event ids seen.
func checkOutbound(_ messages: [KafkaMessage], expected: Int) -> Set<String> {
    var byEvent: [String: [OutboundMessage]] = [:]
    for message in messages.compactMap(\.outbound) { byEvent[message.eventID, default: []].append(message) }
    for (event, copies) in byEvent where copies.count > 1 {
        #expect(Set(copies.map(\.notificationID)).count == 1, "duplicates of \(event) carry one notification id")
        #expect(Set(copies.map(\.request.body)).count == 1, "duplicates of \(event) are identical")
    }
    #expect(byEvent.count == expected)
    return Set(byEvent.keys)
}

/// How many events have an outbound message among what `received` holds.
func outboundEvents(_ received: ReceivedMessages) -> Int {
    Set(received.all.compactMap(\.outbound).map(\.eventID)).count
}

@Suite("Worker failures and rebalances", .serialized)
struct WorkerResilienceTests {
    /// The SQLite files of the tests that restart a worker on one.
    let scratch = ScratchDirectory()

    @Test("a worker killed mid-batch and a new one started: every outbound message exists, duplicates are identical")
    func killAndRestart() async throws {
        let pipeline = try Pipeline()
        let path = scratch.path + "/kill-and-restart.sqlite"
        let clock = TestClock("2026-11-21T08:00:00Z")
        let total = 5000
        try await pipeline.withCollector(["herald.outbound"]) { received in
            // The worker crashes itself once its tenth batch is handed to the producer and before
            // it is acknowledged: crashed from here, when the collector had seen some of the
            // output, it had sometimes finished every event already (a collector joining its
            // group late receives everything at once), and the test proved nothing.
            let first = try pipeline.worker(
                store: try SQLiteStore(path: path),
                clock: clock,
                batchSize: 20,
                crashAfterBatches: 10
            )
            let running = Task { try await first.run() }
            try await registerExampleUsers(pipeline, try SQLiteStore(path: path))
            try await eventually("the directory is loaded") {
                try await SQLiteStore(path: path).recipients(exampleUsers.map(\.user)).count == 3
            }
            try await pipeline.produce(orderEvents(0..<total))
            // Stopped by its crash, or after a minute by cancellation if it never crashed.
            let crashed = await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    _ = try? await running.value
                    return true
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(60))
                    return false
                }
                let crashed = await group.next() ?? false
                running.cancel()
                group.cancelAll()
                return crashed
            }
            #expect(crashed, "the first worker crashed after its tenth batch")
            // Handled counts every consumed message marked done (the directory's records too): at
            // most the ten batches of twenty before the crash, far from all of them.
            let handled = first.statistics.handledEvents
            #expect(handled <= 10 * 20, "the crash came after ten batches (\(handled) messages handled)")

            // A new process: a new store connection to the same file, the same group.
            let second = try pipeline.worker(store: try SQLiteStore(path: path), clock: clock, batchSize: 20)
            try await withRunningServices([second]) {
                try await eventually(within: .seconds(60), "every event's outbound message") {
                    Set(received.all.compactMap(\.outbound).map(\.eventID)).count >= total
                }
            }
            _ = checkOutbound(received.all, expected: total)
        }
    }

    @Test("two workers share the topics; when one leaves, the other takes over and no event is lost")
    func oneOfTwoLeaves() async throws {
        let pipeline = try Pipeline()
        try await withPostgresStore { store in
            let clock = TestClock("2026-11-21T08:00:00Z")
            try await pipeline.withCollector(["herald.outbound"]) { received in
                let staying = try pipeline.worker(store: store, clock: clock, batchSize: 20)
                let leaving = try pipeline.worker(store: store, clock: clock, batchSize: 20)
                try await withRunningServices([staying]) {
                    let leavingTask = Task { try await leaving.run() }
                    try await registerExampleUsers(pipeline, store)
                    try await eventually("the directory is loaded") {
                        try await store.recipients(exampleUsers.map(\.user)).count == 3
                    }
                    try await eventually("both workers have partitions") {
                        staying.readiness.assignedPartitions > 0 && leaving.readiness.assignedPartitions > 0
                    }
                    try await pipeline.produce(orderEvents(0..<400))
                    try await eventually("both workers are busy") {
                        leaving.statistics.snapshot.outboundByProvider.values.reduce(0, +) > 0
                            && staying.statistics.snapshot.outboundByProvider.values.reduce(0, +) > 0
                    }
                    leavingTask.cancel()  // graceful: finish, commit, leave the group
                    try await leavingTask.value
                    try await pipeline.produce(orderEvents(400..<600))
                    try await eventually(within: .seconds(60), "every event's outbound message") {
                        Set(received.all.compactMap(\.outbound).map(\.eventID)).count >= 600
                    }
                }
                _ = checkOutbound(received.all, expected: 600)
            }
        }
    }

    @Test(
        "PostgreSQL down: the partition waits and readiness says so; back up, the worker carries on; stopped while it is down, it exits cleanly and loses nothing"
    )
    func storeOutage() async throws {
        let pipeline = try Pipeline()
        let cluster = try await PostgresTestCluster.makeOwn()
        defer { cluster.destroy() }
        var configuration = try await cluster.makeDatabase()
        configuration.maximumConnections = 4
        configuration.callTimeout = .seconds(2)
        let store = PostgresStore(configuration: configuration, logger: pipeline.environment.logger)
        let clock = TestClock("2026-11-21T08:00:00Z")
        try await withRunningServices([store]) {
            try await store.migrate()
            try await pipeline.withCollector(["herald.outbound"]) { received in
                let first = try pipeline.worker(store: store, clock: clock, batchSize: 20)
                let firstRun = Task { try await first.run() }
                try await registerExampleUsers(pipeline, store)
                try await eventually("the directory is loaded") {
                    try await store.recipients(exampleUsers.map(\.user)).count == 3
                }
                try await pipeline.produce(orderEvents(0..<100))
                try await eventually("the first events are out") { outboundEvents(received) == 100 }
                try await eventually("the worker is ready") { first.readiness.isReady }

                // Down while events arrive: nothing is skipped, the worker is not ready.
                try await cluster.halt()
                try await pipeline.produce(orderEvents(100..<200))
                try await eventually("readiness reports the store") { !first.readiness.storeAnswers }
                #expect(!first.readiness.isReady)
                try await Task.sleep(for: .seconds(2))
                #expect(outboundEvents(received) == 100, "no event passes without its decision")

                // Back: the same worker, with the same connection pool, carries on.
                try await cluster.start()
                try await eventually(within: .seconds(60), "the events that waited are out") {
                    outboundEvents(received) == 200
                }
                #expect(first.readiness.isReady)

                // Down again, and the worker is stopped meanwhile: it gives the batch up and exits.
                try await cluster.halt()
                try await pipeline.produce(orderEvents(200..<300))
                try await eventually("readiness reports the store") { !first.readiness.storeAnswers }
                let stopping = ContinuousClock.now
                firstRun.cancel()
                try await firstRun.value
                #expect(ContinuousClock.now - stopping < .seconds(20), "stopped within the shutdown deadline")

                // Another worker, once the store is back, does what the first one gave up.
                try await cluster.start()
                let second = try pipeline.worker(store: store, clock: clock, batchSize: 20)
                try await withRunningServices([second]) {
                    try await eventually(within: .seconds(60), "every event's outbound message") {
                        outboundEvents(received) == 300
                    }
                }
                _ = checkOutbound(received.all, expected: 300)
            }
        }
    }
}

extension WorkerResilienceTests {
    /// Tests that take the embedded broker down: they run in a phase of their own (see `BrokerOutage`
    /// in the Makefile).
    @Suite("Kafka broker outages", .serialized)
    struct BrokerOutage {
        /// The SQLite files of the tests.
        let scratch = ScratchDirectory()

        /// The decisions (one per order event) the outage tests' store makes before the broker goes
        /// down: enough for the first 100 events' outbound messages the tests wait for, and far from
        /// all 2,000.
        static let decidesBeforeOutage = 300

        @Test(
            "Kafka down mid-stream and back: the worker waits instead of stopping, then carries on, and every event's notification is out"
        )
        func brokerOutage() async throws {
            let pipeline = try Pipeline()
            // Decisions past the first 300 events wait until the broker is down: the outage comes while
            // most of the events are still to do. (Timing alone was not enough: a CI run's worker was
            // done before the collector had seen the first outbound messages.)
            let store = UnevenLatencyStore(
                try SQLiteStore(path: scratch.path + "/outage.sqlite"),
                holdingAfter: Self.decidesBeforeOutage
            )
            let clock = TestClock("2026-11-21T08:00:00Z")
            let total = 2000
            try await pipeline.withCollector(["herald.outbound"]) { received in
                let worker = try pipeline.worker(store: store, clock: clock, batchSize: 20)
                let (running, ended) = try await takeKafkaDownMidStream(pipeline, worker, store, received, total: total)
                try await Task.sleep(for: .seconds(4))
                #expect(ended.value == nil, "the worker waits for the broker instead of stopping")
                #expect(worker.statistics.handledEvents < total, "nothing is done without its records acknowledged")

                try pipeline.environment.cluster.setBrokerUp(1)
                try await eventually(within: .seconds(90), "every event's outbound message") {
                    outboundEvents(received) >= total
                }
                #expect(ended.value == nil, "the same worker did the rest")
                running.cancel()
                try await running.value
                _ = checkOutbound(received.all, expected: total)
            }
        }

        @Test(
            "Kafka down past the delivery timeout: the worker stops with the delivery's error instead of hanging, and a new worker loses nothing"
        )
        func brokerOutagePastDeliveryTimeout() async throws {
            let pipeline = try Pipeline()
            let path = scratch.path + "/outage.sqlite"
            let clock = TestClock("2026-11-21T08:00:00Z")
            let total = 2000
            try await pipeline.withCollector(["herald.outbound"]) { received in
                let store = UnevenLatencyStore(try SQLiteStore(path: path), holdingAfter: Self.decidesBeforeOutage)
                let first = try pipeline.worker(store: store, clock: clock, batchSize: 20, deliveryTimeout: .seconds(2))
                let (_, ended) = try await takeKafkaDownMidStream(pipeline, first, store, received, total: total)
                // Its records cannot be delivered: once librdkafka gives them up, the worker stops (a
                // process exits, and its orchestrator restarts it) rather than mark their events done.
                // (Polled: a task's value cannot be given up on when it never comes.)
                let outage = ContinuousClock.now
                try await eventually(within: .seconds(60), "the worker stops") { ended.value != nil }
                let failure: (any Error)? = if case .failure(let error) = ended.value { error } else { nil }
                #expect(
                    (failure as? KafkaError)?.code == .deliveryTimedOut,
                    "stopped by the delivery that timed out, not by \(String(describing: failure))"
                )
                #expect(ContinuousClock.now - outage < .seconds(30), "stopped within the consumer's close deadlines")

                // Back up: another worker on the same file does everything the first did not finish.
                try pipeline.environment.cluster.setBrokerUp(1)
                let second = try pipeline.worker(store: try SQLiteStore(path: path), clock: clock, batchSize: 20)
                try await withRunningServices([second]) {
                    try await eventually(within: .seconds(90), "every event's outbound message") {
                        outboundEvents(received) >= total
                    }
                }
                _ = checkOutbound(received.all, expected: total)
            }
        }

        /// Runs `worker` over `store`, loads the example users and produces `total` order events; once
        /// the first are out, takes the broker down, with events still to do (the store holds the rest
        /// of the decisions until then). Returns the worker's task and how its run ended (`nil` while it
        /// runs).
        private func takeKafkaDownMidStream(
            _ pipeline: Pipeline,
            _ worker: Worker,
            _ store: UnevenLatencyStore,
            _ received: ReceivedMessages,
            total: Int
        ) async throws -> (running: Task<Void, any Error>, ended: SharedValue<Result<Void, any Error>?>) {
            let (running, ended) = startService(worker)
            try await registerExampleUsers(pipeline, store)
            try await eventually("the directory is loaded") {
                try await store.recipients(exampleUsers.map(\.user)).count == 3
            }
            try await pipeline.produce(orderEvents(0..<total))
            try await eventually("the first events are out") { outboundEvents(received) >= 100 }
            try pipeline.environment.cluster.setBrokerDown(1)
            let handled = worker.statistics.handledEvents
            #expect(handled < total, "the outage came with events still to do (\(handled) handled)")
            store.release()
            return (running, ended)
        }
    }
}
