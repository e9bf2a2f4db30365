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

    /// A started machine with `partition` assigned, three messages of it (offsets 0–2) handed
    /// out, and the assignment's epoch.
    static func holdingThree(
        of partition: TopicPartition
    ) -> (
        machine: KafkaConsumer.StateMachine, held: [KafkaMessage], epoch: Int
    ) {
        var machine = KafkaConsumer.StateMachine(maxBatchSize: 100, maxBufferedMessages: 1000)
        _ = machine.start()
        _ = machine.assign([partition])
        let epoch = machine.assignmentEpoch(of: partition)!
        _ = machine.append(Self.run(partition.topic, partition.partition, from: 0, count: 3))
        let held = Self.delivered(&machine)
        return (machine, held, epoch)
    }

    @Test(
        "a partition paused for messages held is paused in the assignment it is held in, or the messages are given back; a resume from an ended assignment does nothing"
    )
    func pauseHoldingEpoch() {
        let partition = TopicPartition("retries", 0)
        var (machine, held, first) = Self.holdingThree(of: partition)
        #expect(held.count == 3)
        let pausedInFirst = machine.pause(partition, orRelease: held)
        #expect(pausedInFirst == first)
        #expect(machine.userPaused == [partition])
        #expect(machine.outstanding(in: [partition]) == 3, "held, not given back")
        // Taken away: a resume from its work does nothing while it is revoked.
        machine.beginRevoke([partition])
        let resumedWhileRevoking = machine.resume(partition, holding: first)
        #expect(!resumedWhileRevoking, "not resumed while being revoked")
        machine.finishRevoke([partition])
        // Handed back: a new assignment, flowing, with the same offsets handed out again.
        _ = machine.assign([partition])
        let second = machine.assignmentEpoch(of: partition)!
        #expect(second != first)
        #expect(machine.userPaused.isEmpty)
        _ = machine.append(Self.run("retries", 0, from: 0, count: 3))
        let again = Self.delivered(&machine)
        let pausedInSecond = machine.pause(partition, orRelease: again)
        #expect(pausedInSecond == second)
        // Work from the first assignment does not end the second's pause.
        let staleResume = machine.resume(partition, holding: first)
        #expect(!staleResume)
        #expect(machine.userPaused == [partition])
        let resumedInSecond = machine.resume(partition, holding: second)
        #expect(resumedInSecond)
        #expect(machine.userPaused.isEmpty)
        #expect(machine.pollPlan().resume == [partition])
        // Being revoked: nothing is paused, and the messages stop holding up the revoke.
        machine.beginRevoke([partition])
        let pausedWhileRevoking = machine.pause(partition, orRelease: again)
        #expect(pausedWhileRevoking == nil)
        #expect(machine.userPaused.isEmpty)
        #expect(machine.outstanding(in: [partition]) == 0)
    }

    @Test(
        "messages given back by work from an ended assignment leave the next assignment's copies of them alone; given back while it is revoked, they stop counting"
    )
    func releaseHoldingEpoch() {
        let partition = TopicPartition("retries", 0)
        var (machine, held, first) = Self.holdingThree(of: partition)
        #expect(machine.outstanding(in: [partition]) == 3)
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
