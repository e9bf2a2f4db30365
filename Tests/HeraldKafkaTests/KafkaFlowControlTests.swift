import Foundation
import HeraldKafka
import HeraldTestSupport
import Testing

@Suite("Kafka failures and flow control", .serialized, .timeLimit(.minutes(3)))
struct KafkaFlowControlTests {

    @Test("pausing one partition does not stop the others, and resuming continues where it left off")
    func pauseOnePartition() async throws {
        let env = try KafkaTestEnvironment(topics: ["pause": 2])
        let producer = try env.makeProducer()
        let consumer = try env.makeConsumer(group: "pause", topics: ["pause"]) { $0.maxBatchSize = 10 }
        let received = ReceivedMessages()
        let paused = TopicPartition("pause", 0)
        try await withRunningServices([producer, consumer]) {
            let consuming = consume(consumer, into: received)
            #expect(await eventually { consumer.assignment.count == 2 })
            try await produce(producer, topic: "pause", count: 20, partitions: 2)
            #expect(await eventually { received.count == 20 })
            consumer.pause([paused])
            try await produce(producer, topic: "pause", count: 200, partitions: 2, startingAt: 20)
            #expect(await eventually { received.all.filter { $0.partition == 1 }.count == 110 })
            try await Task.sleep(for: .seconds(1))
            #expect(received.all.filter { $0.partition == 0 }.count == 10, "the paused partition delivered nothing")

            consumer.resume([paused])
            #expect(await eventually { received.count == 220 })
            consumer.triggerShutdown()
            await consuming.value
        }
        let partition0 = received.all.filter { $0.partition == 0 }.map(\.offset)
        #expect(partition0 == Array(0..<110), "in order, without gaps or repeats")
    }

    @Test(
        "a paused partition taken away by a rebalance and handed back flows again; one kept through it stays paused",
        arguments: [KafkaConsumerConfiguration.AssignmentStrategy.cooperativeSticky, .eager]
    )
    func pausedPartitionHandedBack(strategy: KafkaConsumerConfiguration.AssignmentStrategy) async throws {
        let env = try KafkaTestEnvironment(topics: ["handback": 2])
        let producer = try env.makeProducer()
        // Partitions the first consumer was handed after it paused everything: fresh assignments.
        let handedBack = SharedValue<Set<TopicPartition>>([])
        let pausing = SharedValue(false)
        let first = try env.makeConsumer(
            group: "handback",
            topics: ["handback"],
            configure: { $0.assignmentStrategy = strategy },
            onAssign: { partitions in
                if pausing.value { handedBack.update { $0.formUnion(partitions) } }
            }
        )
        let second = try env.makeConsumer(
            group: "handback",
            topics: ["handback"],
            configure: { $0.assignmentStrategy = strategy }
        )
        let received = ReceivedMessages()
        let all = [TopicPartition("handback", 0), TopicPartition("handback", 1)]
        try await withRunningServices([producer, first]) {
            let consuming = consume(first, into: received)
            #expect(await eventually { first.assignment.count == 2 })
            try await produce(producer, topic: "handback", count: 20, partitions: 2)
            #expect(await eventually { received.count == 20 })
            pausing.update { $0 = true }
            first.pause(all)
            // The second member takes a partition and leaves: it comes back to the first.
            try await withRunningServices([second]) {
                #expect(await eventually(within: .seconds(30)) { second.assignment.count == 1 })
                try await Task.sleep(for: .milliseconds(500))
                second.triggerShutdown()
            }
            #expect(await eventually(within: .seconds(30)) { first.assignment.count == 2 })
            let fresh = handedBack.value
            #expect(!fresh.isEmpty, "a partition moved and came back")
            try await produce(producer, topic: "handback", count: 200, partitions: 2, startingAt: 20)
            // A handed-back partition is a new assignment, unpaused: its 100 new messages arrive. (Before,
            // librdkafka kept the pause it had when it was taken away, and nothing ever resumed it.)
            let expected = 20 + 100 * fresh.count
            #expect(
                await eventually(within: .seconds(20)) { Set(received.positions).count >= expected },
                "received \(Set(received.positions).count) of \(expected); handed back: \(fresh.sorted())"
            )
            try await Task.sleep(for: .milliseconds(500))
            for partition in all where !fresh.contains(partition) {
                #expect(
                    Set(received.all.filter { $0.topicPartition == partition }.map(\.offset)).count == 10,
                    "\(partition), kept through the rebalance, is still paused"
                )
            }
            first.resume(all)
            // (Counted as distinct positions: an eager revoke's commit may be refused mid-rebalance,
            // and what it covered comes again.)
            #expect(await eventually { Set(received.positions).count == 220 })
            first.triggerShutdown()
            await consuming.value
        }
        for partition in all {
            let offsets = received.all.filter { $0.topicPartition == partition }.map(\.offset)
            let missing = Set(0..<110).subtracting(offsets).sorted()
            #expect(missing.isEmpty, "\(partition): \(missing.count) never arrived, such as \(missing.prefix(5))")
        }
    }

    @Test("a slow application: the consumer buffers no more than its limit, and loses nothing")
    func boundedBuffer() async throws {
        let env = try KafkaTestEnvironment(topics: ["slow": 4])
        let producer = try env.makeProducer()
        let consumer = try env.makeConsumer(group: "slow", topics: ["slow"]) { configuration in
            configuration.maxBatchSize = 50
            configuration.maxBufferedMessages = 200
            configuration.fetchQueueMaxKilobytes = 64
        }
        let received = ReceivedMessages()
        try await withRunningServices([producer, consumer]) {
            try await produce(producer, topic: "slow", count: 4000, partitions: 4)
            let consuming = Task {
                for await batch in consumer.messages {
                    received.append(batch)
                    try? await Task.sleep(for: .milliseconds(5))
                    consumer.markDone(batch)
                }
            }
            #expect(await eventually(within: .seconds(90)) { received.count >= 4000 })
            consumer.triggerShutdown()
            await consuming.value
        }
        #expect(consumer.peakBufferedMessageCount <= 200)
        #expect(consumer.peakBufferedMessageCount >= 100, "the buffer did fill: the application was the bottleneck")
        #expect(Set(received.all.compactMap { $0.value?.string }).count == 4000)
    }

    @Test("lag counts what is not yet done, and librdkafka statistics are exposed")
    func lagAndStatistics() async throws {
        let env = try KafkaTestEnvironment(topics: ["lag": 2])
        let producer = try env.makeProducer()
        let consumer = try env.makeConsumer(group: "lag", topics: ["lag"]) { configuration in
            configuration.client.statisticsInterval = .milliseconds(200)
        }
        let received = ReceivedMessages()
        try await withRunningServices([producer, consumer]) {
            try await produce(producer, topic: "lag", count: 100, partitions: 2)
            // Receive everything, finish only partition 0.
            let consuming = consume(consumer, into: received, markDone: { $0.partition == 0 })
            #expect(await eventually { received.count == 100 })
            #expect(await eventually { consumer.lag() == [TopicPartition("lag", 0): 0, TopicPartition("lag", 1): 50] })
            #expect(await eventually { consumer.statisticsJSON != nil })
            let statistics =
                try JSONSerialization.jsonObject(with: Data(consumer.statisticsJSON!.utf8)) as? [String: Any]
            #expect(statistics?["type"] as? String == "consumer")
            #expect(statistics?["client_id"] as? String == "herald-test-consumer")
            consumer.triggerShutdown()
            await consuming.value
        }
    }
}

extension KafkaFlowControlTests {
    /// Tests that take the embedded broker down: they run in a phase of their own (see `BrokerOutage`
    /// in the Makefile).
    @Suite("Kafka broker outages", .serialized)
    struct BrokerOutage {
        @Test("a broker going down and coming back: the producer retries and nothing is lost or duplicated")
        func brokerDownAndUp() async throws {
            let env = try KafkaTestEnvironment(topics: ["outage": 3])
            let producer = try env.makeProducer()
            let consumer = try env.makeConsumer(group: "outage", topics: ["outage"])
            let received = ReceivedMessages()
            try await withRunningServices([producer, consumer]) {
                let consuming = consume(consumer, into: received)
                try await produce(producer, topic: "outage", count: 100, partitions: 3, prefix: "before")
                #expect(await eventually { received.count == 100 })

                try env.cluster.setBrokerDown(1)
                let records = (0..<300).map { index in
                    KafkaProducerRecord(
                        topic: "outage",
                        key: KafkaBytes("k\(index)"),
                        value: KafkaBytes("during-\(index)")
                    )
                }
                let deliveries = try await producer.enqueue(records)
                let pending = Task { await deliveries.wait() }
                try await Task.sleep(for: .seconds(3))
                #expect(received.count == 100, "nothing can arrive while the only broker is down")
                try env.cluster.setBrokerUp(1)
                let results = try await withTimeout(.seconds(60), "deliveries after the outage") { await pending.value }
                #expect(results.allSatisfy { (try? $0.get()) != nil })
                #expect(await eventually(within: .seconds(60)) { received.count >= 400 })
                try await Task.sleep(for: .milliseconds(500))
                consumer.triggerShutdown()
                await consuming.value
            }
            // What the topic holds: each value at exactly one (partition, offset). A value at two offsets
            // would be a duplicate written by the producer's retries, which idempotence rules out.
            // (The consumer may legitimately see a record twice: the group lost its coordinator too.)
            var positionsByValue: [String: Set<PartitionOffset>] = [:]
            for message in received.all {
                positionsByValue[message.value!.string, default: []].insert(
                    PartitionOffset(partition: message.partition, offset: message.offset)
                )
            }
            let expected = Set((0..<100).map { "before-\($0)" } + (0..<300).map { "during-\($0)" })
            #expect(
                Set(positionsByValue.keys) == expected,
                "lost: \(expected.subtracting(positionsByValue.keys).sorted().prefix(5))"
            )
            let written = positionsByValue.filter { $0.value.count > 1 }
            #expect(written.isEmpty, "written twice: \(written.prefix(5))")
        }

        @Test("librdkafka reads values in place: records the caller dropped at enqueue arrive intact after an outage")
        func valuesLentUntilDelivered() async throws {
            let env = try KafkaTestEnvironment(topics: ["lent": 2])
            let producer = try env.makeProducer()
            let consumer = try env.makeConsumer(group: "lent", topics: ["lent"])
            let received = ReceivedMessages()
            // Values of 1–3 KiB written into shared arenas as the worker writes them, so that a value
            // freed too early is overwritten by the churn below rather than left as it was.
            func value(_ index: Int) -> [UInt8] {
                let text = "lent-\(index)-"
                return Array(String(repeating: text, count: (1024 + index % 2048) / text.utf8.count + 1).utf8)
            }
            try await withRunningServices([producer, consumer]) {
                let consuming = consume(consumer, into: received)
                try env.cluster.setBrokerDown(1)
                // Made and handed over in a function of its own: only the producer keeps them afterwards.
                func enqueue() async throws -> KafkaDeliveries {
                    var records: [KafkaProducerRecord] = []
                    var arena: [UInt8] = []
                    var ranges: [Range<Int>] = []
                    for index in 0..<400 {
                        let bytes = value(index)
                        ranges.append(arena.count..<(arena.count + bytes.count))
                        arena += bytes
                        if arena.count >= 8192 || index == 399 {
                            for range in ranges {
                                records.append(
                                    KafkaProducerRecord(
                                        topic: "lent",
                                        key: KafkaBytes("k\(records.count)"),
                                        value: KafkaBytes(arena, range)
                                    )
                                )
                            }
                            arena = []
                            ranges = []
                        }
                    }
                    return try await producer.enqueue(records)
                }
                let deliveries = try await enqueue()
                // Churn the heap while the messages wait for the broker: freed buffers get reused.
                var churn: [[UInt8]] = []
                for round in 0..<2_000 {
                    churn.append(
                        [UInt8](repeating: UInt8(truncatingIfNeeded: round) | 0x80, count: 1024 + round % 8192)
                    )
                    if churn.count > 64 { churn.removeFirst(32) }
                }
                try await Task.sleep(for: .seconds(1))
                try env.cluster.setBrokerUp(1)
                let results = try await withTimeout(.seconds(60), "deliveries after the outage") {
                    await deliveries.wait()
                }
                #expect(results.allSatisfy { (try? $0.get()) != nil })
                #expect(await eventually(within: .seconds(60)) { received.count >= 400 })
                consumer.triggerShutdown()
                await consuming.value
            }
            var byKey: [String: [UInt8]] = [:]
            for message in received.all { byKey[message.key!.string] = message.value.map { Array($0) } }
            try #require(byKey.count == 400)
            let damaged = (0..<400).filter { byKey["k\($0)"] != value($0) }
            #expect(damaged.isEmpty, "values that arrived changed: \(damaged.prefix(5))")
        }

        @Test("a full producer queue makes enqueue wait, neither failing nor growing without bound")
        func producerBackpressure() async throws {
            let env = try KafkaTestEnvironment(topics: ["pressure": 1])
            let producer = try env.makeProducer { $0.maxQueuedMessages = 50 }
            let consumer = try env.makeConsumer(group: "pressure", topics: ["pressure"])
            let received = ReceivedMessages()
            try await withRunningServices([producer, consumer]) {
                let consuming = consume(consumer, into: received)
                try env.cluster.setBrokerDown(1)
                let records = (0..<500).map { KafkaProducerRecord(topic: "pressure", value: KafkaBytes("p-\($0)")) }
                let enqueued = SharedValue(false)
                let sending = Task {
                    let deliveries = try await producer.enqueue(records)
                    enqueued.update { $0 = true }
                    return await deliveries.wait()
                }
                var peakQueued = 0
                for _ in 0..<100 {
                    peakQueued = max(peakQueued, producer.queuedMessageCount)
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(!enqueued.value, "enqueue must wait while the queue is full")
                #expect(peakQueued == 50)

                try env.cluster.setBrokerUp(1)
                let results = try await withTimeout(.seconds(60), "deliveries") { try await sending.value }
                #expect(enqueued.value)
                #expect(results.count == 500)
                #expect(results.allSatisfy { (try? $0.get()) != nil })
                #expect(await eventually(within: .seconds(60)) { received.count == 500 })
                consumer.triggerShutdown()
                await consuming.value
            }
            #expect(received.all.compactMap { $0.value?.string } == (0..<500).map { "p-\($0)" })
        }
    }
}
