import Testing

@testable import HeraldKafka

@Suite("Consumer state machine")
struct ConsumerStateMachineTests {
    /// `count` messages of `topic`/`partition` from `offset` on.
    static func run(_ topic: String, _ partition: Int32, from offset: Int64, count: Int) -> [KafkaMessage] {
        (0..<count).map {
            KafkaMessage(topic: topic, partition: partition, offset: offset + Int64($0), key: nil, value: "v")
        }
    }

    static func delivered(_ machine: inout KafkaConsumer.StateMachine) -> [KafkaMessage] {
        guard case .deliver(let batch) = machine.next() else { return [] }
        return batch
    }

    @Test(
        "messages fetched for a partition not assigned are not handed out, wherever their run stands in the fetch",
        arguments: [0, 1, 2]
    )
    func unassignedRuns(position: Int) {
        var machine = KafkaConsumer.StateMachine(maxBatchSize: 100, maxBufferedMessages: 1000)
        _ = machine.start()
        _ = machine.assign([TopicPartition("events", 0)])
        // Runs of one partition, as fetches come; partition 1 and another topic's partition 0 are
        // not assigned.
        var runs = [
            Self.run("events", 0, from: 0, count: 3),
            Self.run("events", 0, from: 3, count: 2),
        ]
        runs.insert(
            Self.run("events", 1, from: 0, count: 4) + Self.run("other", 0, from: 0, count: 2),
            at: position
        )
        _ = machine.append(runs.flatMap { $0 })
        let batch = Self.delivered(&machine)
        #expect(batch.map(\.topicPartition) == Array(repeating: TopicPartition("events", 0), count: 5))
        #expect(batch.map(\.offset) == [0, 1, 2, 3, 4])
    }

    @Test(
        "pausing or resuming a partition in an assignment that has ended does nothing: the next assignment's pause is its own"
    )
    func pauseHoldingEpoch() {
        var machine = KafkaConsumer.StateMachine(maxBatchSize: 100, maxBufferedMessages: 1000)
        _ = machine.start()
        let partition = TopicPartition("retries", 0)
        _ = machine.assign([partition])
        let first = machine.assignmentEpoch(of: partition)!
        let pausedInFirst = machine.pause(partition, holding: first)
        #expect(pausedInFirst)
        #expect(machine.userPaused == [partition])
        // Taken away and handed back: a new assignment, flowing.
        machine.beginRevoke([partition])
        let resumedWhileRevoking = machine.resume(partition, holding: first)
        #expect(!resumedWhileRevoking, "not resumed while being revoked")
        machine.finishRevoke([partition])
        _ = machine.assign([partition])
        let second = machine.assignmentEpoch(of: partition)!
        #expect(second != first)
        #expect(machine.userPaused.isEmpty)
        // Work from the first assignment neither pauses the second nor ends its pause.
        let stalePause = machine.pause(partition, holding: first)
        #expect(!stalePause)
        #expect(machine.userPaused.isEmpty)
        let pausedInSecond = machine.pause(partition, holding: second)
        #expect(pausedInSecond)
        let staleResume = machine.resume(partition, holding: first)
        #expect(!staleResume)
        #expect(machine.userPaused == [partition])
        let resumedInSecond = machine.resume(partition, holding: second)
        #expect(resumedInSecond)
        #expect(machine.userPaused.isEmpty)
        #expect(machine.pollPlan().resume == [partition])
    }

    @Test(
        "messages given back by work from an ended assignment leave the next assignment's copies of them alone; given back while it is revoked, they stop counting"
    )
    func releaseHoldingEpoch() {
        var machine = KafkaConsumer.StateMachine(maxBatchSize: 100, maxBufferedMessages: 1000)
        _ = machine.start()
        let partition = TopicPartition("retries", 0)
        _ = machine.assign([partition])
        let first = machine.assignmentEpoch(of: partition)!
        _ = machine.append(Self.run("retries", 0, from: 0, count: 3))
        let held = Self.delivered(&machine)
        // Given back while the partition is revoked: they no longer hold up the revoke.
        machine.beginRevoke([partition])
        machine.release(held, epoch: first)
        #expect(machine.outstanding(in: [partition]) == 0)
        machine.finishRevoke([partition])
        // Handed back: the same offsets are handed out again, in the new assignment.
        _ = machine.assign([partition])
        _ = machine.append(Self.run("retries", 0, from: 0, count: 3))
        let again = Self.delivered(&machine)
        #expect(again.count == 3)
        // The old work gives them back late: the new assignment's copies stay in flight, and once
        // done they move its committed offset.
        machine.release(held, epoch: first)
        #expect(machine.outstanding(in: [partition]) == 3)
        _ = machine.markDone(again)
        #expect(machine.committable(in: [partition]) == [partition: 3])
    }

    @Test("messages fetched for a partition being revoked are not handed out")
    func revokedRun() {
        var machine = KafkaConsumer.StateMachine(maxBatchSize: 100, maxBufferedMessages: 1000)
        _ = machine.start()
        _ = machine.assign([TopicPartition("events", 0), TopicPartition("events", 2)])
        machine.beginRevoke([TopicPartition("events", 2)])
        _ = machine.append(Self.run("events", 0, from: 0, count: 2) + Self.run("events", 2, from: 0, count: 2))
        let batch = Self.delivered(&machine)
        #expect(batch.map(\.topicPartition) == [TopicPartition("events", 0), TopicPartition("events", 0)])
    }

    @Test("a fetch of assigned partitions only is handed out whole, in order")
    func allAssigned() {
        var machine = KafkaConsumer.StateMachine(maxBatchSize: 100, maxBufferedMessages: 1000)
        _ = machine.start()
        _ = machine.assign([TopicPartition("events", 0), TopicPartition("events", 1)])
        let fetched = Self.run("events", 1, from: 7, count: 3) + Self.run("events", 0, from: 0, count: 2)
        _ = machine.append(fetched)
        let batch = Self.delivered(&machine)
        #expect(batch.map(\.topicPartition) == fetched.map(\.topicPartition))
        #expect(batch.map(\.offset) == [7, 8, 9, 0, 1])
    }
}
