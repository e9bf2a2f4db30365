import HeraldKafka
import HeraldTestSupport
import Testing

/// Produces `count` messages "<prefix>-<n>" spread over `partitions` partitions and waits for all.
func produce(
    _ producer: KafkaProducer,
    topic: String,
    count: Int,
    partitions: Int32,
    prefix: String = "m",
    startingAt first: Int = 0
) async throws {
    let records = (first..<(first + count)).map { index in
        KafkaProducerRecord(
            topic: topic,
            partition: Int32(index) % partitions,
            key: KafkaBytes("key-\(index)"),
            value: KafkaBytes("\(prefix)-\(index)")
        )
    }
    for result in try await producer.send(records) { _ = try result.get() }
}

/// Consumes into `received`, marking each batch done unless `markDone` says otherwise, until the
/// sequence ends.
func consume(
    _ consumer: KafkaConsumer,
    into received: ReceivedMessages,
    markDone: @Sendable @escaping (KafkaMessage) -> Bool = { _ in true }
) -> Task<Void, Never> {
    Task {
        for await batch in consumer.messages {
            received.append(batch)
            consumer.markDone(batch.filter(markDone))
        }
    }
}

@Suite("Kafka consumer groups", .serialized, .timeLimit(.minutes(3)))
struct KafkaConsumerGroupTests {
    @Test("two consumers share the partitions; when one closes the other takes all, losing nothing")
    func shareAndTakeOver() async throws {
        let env = try KafkaTestEnvironment(topics: ["shared": 6])
        let producer = try env.makeProducer()
        let history = SharedValue<[String]>([])
        let first = try env.makeConsumer(
            group: "share",
            topics: ["shared"],
            onAssign: { partitions in history.update { $0.append("first+\(partitions.map(\.partition))") } },
            onRevoke: { partitions in history.update { $0.append("first-\(partitions.map(\.partition))") } }
        )
        let second = try env.makeConsumer(
            group: "share",
            topics: ["shared"],
            onAssign: { partitions in history.update { $0.append("second+\(partitions.map(\.partition))") } },
            onRevoke: { partitions in history.update { $0.append("second-\(partitions.map(\.partition))") } }
        )
        let receivedByFirst = ReceivedMessages()
        let receivedBySecond = ReceivedMessages()
        var committedAtHandOver: [TopicPartition: Int64] = [:]

        try await withRunningServices([producer, second]) {
            let secondTask = consume(second, into: receivedBySecond)
            try await withRunningServices([first]) {
                let firstTask = consume(first, into: receivedByFirst)
                #expect(await eventually { first.assignment.count == 3 && second.assignment.count == 3 })
                try await produce(producer, topic: "shared", count: 600, partitions: 6)
                #expect(await eventually { receivedByFirst.count + receivedBySecond.count >= 600 })
                #expect(receivedByFirst.count > 0 && receivedBySecond.count > 0)
                first.triggerShutdown()
                await firstTask.value
            }
            committedAtHandOver = try await second.committedOffsets(for: (0..<6).map { TopicPartition("shared", $0) })
            #expect(await eventually { second.assignment.count == 6 })
            try await produce(producer, topic: "shared", count: 600, partitions: 6, startingAt: 600)
            #expect(await eventually { receivedByFirst.count + receivedBySecond.count >= 1200 })
            try await Task.sleep(for: .milliseconds(500))
            second.triggerShutdown()
            await secondTask.value
        }

        let values = (receivedByFirst.all + receivedBySecond.all).compactMap { $0.value?.string }
        #expect(Set(values) == Set((0..<1200).map { "m-\($0)" }))
        // A message whose offset the first consumer stored before it left is not delivered again: the
        // second consumer may only repeat messages at or above the offsets committed at the hand-over.
        // (The first marked everything done, so normally nothing repeats; a commit refused because the
        // group was rebalancing at that moment leaves duplicates, never losses.)
        let overlap = Set(receivedByFirst.positions).intersection(receivedBySecond.positions)
        let repeatedBelowCommit = overlap.filter { position in
            position.offset < (committedAtHandOver[TopicPartition("shared", position.partition)] ?? 0)
        }
        #expect(
            repeatedBelowCommit.isEmpty,
            "stored offsets delivered again: \(repeatedBelowCommit.sorted().prefix(10)); committed at hand-over: \(committedAtHandOver); rebalances: \(history.value)"
        )
    }

    @Test("a consumer that dies without storing offsets leaves its unfinished messages to the next member")
    func crashRedelivers() async throws {
        let env = try KafkaTestEnvironment(topics: ["crash": 2])
        let producer = try env.makeProducer()
        let doomed = try env.makeConsumer(group: "crash", topics: ["crash"])
        let receivedByDoomed = ReceivedMessages()
        // The doomed consumer finishes only even-numbered messages.
        let finishesEven: @Sendable (KafkaMessage) -> Bool = { message in
            Int(message.value!.string.split(separator: "-")[1])! % 2 == 0
        }
        try await withRunningServices([producer]) {
            try await produce(producer, topic: "crash", count: 100, partitions: 2)
        }
        try await withRunningServices([doomed]) {
            let task = consume(doomed, into: receivedByDoomed, markDone: finishesEven)
            #expect(await eventually { receivedByDoomed.count == 100 })
            // Let the periodic commit run, so that the committed offsets are the contiguous ones.
            try await Task.sleep(for: .milliseconds(600))
            doomed.simulateCrash()
            await task.value
        }

        let successor = try env.makeConsumer(group: "crash", topics: ["crash"])
        let receivedBySuccessor = ReceivedMessages()
        try await withRunningServices([successor]) {
            let task = consume(successor, into: receivedBySuccessor)
            // Partition p received 0, 2, 4, ... (p = 0) or 1, 3, 5, ... (p = 1) in offset order; on
            // partition 0 everything was done, on partition 1 nothing.
            #expect(await eventually(within: .seconds(40)) { receivedBySuccessor.count >= 50 })
            try await Task.sleep(for: .milliseconds(500))
            successor.triggerShutdown()
            await task.value
        }
        let redelivered = Set(receivedBySuccessor.all.compactMap { $0.value?.string })
        let unfinished = Set((0..<100).filter { $0 % 2 == 1 }.map { "m-\($0)" })
        #expect(redelivered == unfinished)
    }

    @Test("finishing offsets 0, 1 and 3 commits 2 as the next offset to read")
    func contiguousCommit() async throws {
        let env = try KafkaTestEnvironment(topics: ["gaps": 1])
        let producer = try env.makeProducer()
        try await withRunningServices([producer]) {
            try await produce(producer, topic: "gaps", count: 4, partitions: 1)
        }
        let consumer = try env.makeConsumer(group: "gaps", topics: ["gaps"]) { $0.closeTimeout = .seconds(1) }
        let received = ReceivedMessages()
        try await withRunningServices([consumer]) {
            let task = consume(consumer, into: received, markDone: { $0.offset != 2 })
            #expect(await eventually { received.count == 4 })
            let committedWhileRunning = await eventually {
                (try? await consumer.committedOffsets(for: [TopicPartition("gaps", 0)]))?[TopicPartition("gaps", 0)]
                    == 2
            }
            #expect(committedWhileRunning)
            consumer.triggerShutdown()
            await task.value
        }
        let next = try env.makeConsumer(group: "gaps", topics: ["gaps"])
        let redelivered = ReceivedMessages()
        try await withRunningServices([next]) {
            // Nothing marked done: the committed offset must stay where the first consumer left it
            // (marking 2 and 3 done would race the next periodic commit to 4).
            let task = consume(next, into: redelivered, markDone: { _ in false })
            // The joiner's first assignment waits out two rebalance rounds of the embedded
            // coordinator after the first member left; a CI run saw none within 30 s while the tests
            // refreshed metadata every second (see KafkaTestEnvironment.consumerConfiguration).
            #expect(await eventually(within: .seconds(60)) { redelivered.count >= 2 })
            let committed = try await next.committedOffsets(for: [TopicPartition("gaps", 0)])
            #expect(committed[TopicPartition("gaps", 0)] == 2)
            next.triggerShutdown()
            await task.value
        }
        #expect(redelivered.all.map(\.offset) == [2, 3])
    }

    @Test(
        "messages released when their partition stops being held: the revoke does not wait for them, and the next owner reads them"
    )
    func releaseOnRevoke() async throws {
        let env = try KafkaTestEnvironment(topics: ["release": 2])
        let producer = try env.makeProducer()
        try await withRunningServices([producer]) {
            try await produce(producer, topic: "release", count: 20, partitions: 2)
        }
        // A revoke that waited for the held messages would wait far longer than the test does.
        let holder = try env.makeConsumer(
            group: "release",
            topics: ["release"],
            configure: { $0.revokeTimeout = .seconds(120) }
        )
        let held = ReceivedMessages()
        let receivedByJoiner = ReceivedMessages()
        try await withRunningServices([holder]) {
            let holding = Task {
                for await batch in holder.messages { held.append(batch) }
            }
            #expect(await eventually { held.count == 20 })
            let partitions = [0, 1].map { TopicPartition("release", $0) }
            let epochs = partitions.map { holder.assignmentEpoch(of: $0) }
            #expect(epochs.allSatisfy { $0 != nil }, "both partitions held")
            // As the sender's waiting retries do: give a partition's messages back once it is no
            // longer held, without marking them done.
            let releasing = Task {
                var released: Set<TopicPartition> = []
                while released.count < 2, !Task.isCancelled {
                    for (partition, epoch) in zip(partitions, epochs) where !released.contains(partition) {
                        if holder.assignmentEpoch(of: partition) != epoch {
                            holder.release(held.all.filter { $0.topicPartition == partition })
                            released.insert(partition)
                        }
                    }
                    try? await Task.sleep(for: .milliseconds(50))
                }
                return released
            }
            let joiner = try env.makeConsumer(group: "release", topics: ["release"])
            try await withRunningServices([joiner]) {
                let joining = consume(joiner, into: receivedByJoiner)
                // Each round of the embedded coordinator's rebalance can wait out a session timeout (6 s).
                #expect(
                    await eventually(within: .seconds(45)) {
                        joiner.assignment.count == 1 && receivedByJoiner.count == 10
                    },
                    "handed over with its 10 messages (the joiner read \(receivedByJoiner.count))"
                )
                let moved = joiner.assignment
                #expect(
                    Set(receivedByJoiner.all.map(\.topicPartition)) == Set(moved),
                    "the joiner read the released messages of the partition it took"
                )
                if let kept = partitions.first(where: { !moved.contains($0) }) {
                    #expect(holder.assignmentEpoch(of: kept) == epochs[partitions.firstIndex(of: kept)!])
                }
                joiner.triggerShutdown()
                await joining.value
            }
            releasing.cancel()
            _ = await releasing.value
            holder.triggerShutdown()
            await holding.value
        }
    }

    @Test("on revoke, in-flight work of the revoked partitions is finished and committed before release")
    func revokeWaitsForInFlightWork() async throws {
        let env = try KafkaTestEnvironment(topics: ["revoke": 2])
        let producer = try env.makeProducer()
        try await withRunningServices([producer]) {
            try await produce(producer, topic: "revoke", count: 40, partitions: 2)
        }
        let revoked = SharedValue<[TopicPartition]>([])
        // The group's own story (librdkafka's `cgrp` debug lines), told if the hand-over stalls.
        let groupLog = LogCapture()
        let holder = try env.makeConsumer(
            group: "revoke",
            topics: ["revoke"],
            configure: {
                $0.revokeTimeout = .seconds(20)
                $0.client.properties["debug"] = "cgrp"
            },
            logger: groupLog.logger(label: "holder"),
            onRevoke: { partitions in revoked.update { $0 += partitions } }
        )
        let receivedByHolder = ReceivedMessages()
        let receivedByJoiner = ReceivedMessages()
        let refusedOnHandOver = SharedValue(0)
        try await withRunningServices([holder]) {
            // Hold everything in flight, unfinished.
            let holding = Task {
                for await batch in holder.messages {
                    receivedByHolder.append(batch)
                }
            }
            #expect(await eventually { receivedByHolder.count == 40 })
            let joiner = try env.makeConsumer(
                group: "revoke",
                topics: ["revoke"],
                configure: { $0.client.properties["debug"] = "cgrp" },
                logger: groupLog.logger(label: "joiner")
            )
            try await withRunningServices([joiner]) {
                let joining = consume(joiner, into: receivedByJoiner)
                // The rebalance starts and the holder's revoke waits for its in-flight messages.
                #expect(await eventually { !revoked.value.isEmpty })
                try await Task.sleep(for: .seconds(1))
                #expect(receivedByJoiner.count == 0)
                holder.markDone(receivedByHolder.all)
                // Each round of the embedded coordinator's rebalance can wait out a session timeout (6 s).
                let handedOver = await eventually(within: .seconds(60)) {
                    joiner.assignment.count == 1 && holder.assignment.count == 1
                }
                if !handedOver {
                    // Without the assignment dumps, which fill the story without telling it.
                    let told = groupLog.recent.filter { !$0.contains("facility=DUMP") }
                    let lines = told.suffix(40).map { String($0.prefix(300)) }
                    let story = "holder \(holder.assignment), joiner \(joiner.assignment); the group's last lines:\n"
                    Issue.record(
                        "the partition was not handed over within 60 s: \(story + lines.joined(separator: "\n"))"
                    )
                }
                // The hand-over's revoke is over (the holder's own close revokes again later).
                refusedOnHandOver.update { $0 = holder.revokeCommitsRefusedMidRebalance }
                try await Task.sleep(for: .seconds(1))
                joiner.triggerShutdown()
                await joining.value
            }
            holder.triggerShutdown()
            await holding.value
        }
        if refusedOnHandOver.value == 0 {
            // Everything was finished during the revoke and committed before the partition moved.
            #expect(receivedByJoiner.count == 0)
        } else {
            // Only the embedded broker's documented refusal (REBALANCE_IN_PROGRESS while its group
            // is joining; Apache Kafka accepts the commit in a cooperative rebalance) takes this
            // branch; any other commit failure still has to meet the assertion above. The moved
            // partition's work comes again, all of it and only it, and the wait above still held
            // it back until it was finished.
            let moved = Set(receivedByJoiner.all.map(\.partition))
            #expect(moved.count == 1)
            #expect(receivedByJoiner.count == receivedByHolder.all.filter { moved.contains($0.partition) }.count)
        }
    }
}
