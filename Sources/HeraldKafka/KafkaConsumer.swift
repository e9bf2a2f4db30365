import Logging
import ServiceLifecycle

/// A Kafka consumer in a consumer group with at-least-once offsets.
///
/// Messages arrive in batches through ``messages``. The application marks each message done
/// (``markDone(_:)``) once every effect of it is durable; the consumer stores and commits, per
/// partition, only up to the highest *contiguous* done offset, periodically, when partitions are
/// revoked and when it closes. A crash therefore redelivers unfinished messages and never skips one.
///
/// librdkafka is polled by a thread of the consumer's own, never by Swift's cooperative pool; it hands
/// messages over in batches and wakes on librdkafka's queue rather than sleeping. When the
/// application falls behind, at most ``KafkaConsumerConfiguration/maxBufferedMessages`` wait in
/// Herald, plus what librdkafka prefetches (``KafkaConsumerConfiguration/fetchQueueMaxKilobytes``).
///
/// On a rebalance, the revoke runs inside librdkafka's callback: buffered messages of the revoked
/// partitions are dropped, the optional revoke handler runs, the consumer waits up to
/// ``KafkaConsumerConfiguration/revokeTimeout`` for in-flight messages of those partitions to be done,
/// commits their done offsets synchronously, and only then lets the partitions go.
///
/// The consumer is a `Service`: ``run()`` starts polling and returns after graceful shutdown, having
/// waited for in-flight work, committed and left the group.
public final class KafkaConsumer: Service, Sendable {
    /// Called on the poll thread inside the rebalance callback; keep it short and non-blocking.
    public typealias RebalanceHandler = @Sendable ([TopicPartition]) -> Void
    /// Called on one of librdkafka's threads when it resets a partition's position (see
    /// ``KafkaOffsetReset``); keep it short and non-blocking.
    public typealias OffsetResetHandler = @Sendable (KafkaOffsetReset) -> Void

    let configuration: KafkaConsumerConfiguration
    let logger: Logger
    let state: ConditionLock<StateMachine>
    let client: RDKafkaConsumerClient
    let core: Core
    private let onAssign: RebalanceHandler?
    private let onRevoke: RebalanceHandler?
    private let offsetResetRecorder: OffsetResetRecorder
    private let stopped = ConditionLock<CheckedContinuation<Void, Never>?>(nil)

    /// Creates a consumer. Nothing is fetched until ``run()``.
    ///
    /// - Parameters:
    ///   - configuration: group, topics, limits and librdkafka properties.
    ///   - logger: where the consumer and librdkafka log.
    ///   - onAssign: called with newly assigned partitions, before any of their messages.
    ///   - onRevoke: called with partitions being revoked, before the consumer waits for their
    ///     in-flight messages; use it to abandon work for them early.
    ///   - onOffsetReset: called when librdkafka resets a partition's position because the broker
    ///     refused the offset asked for (``KafkaOffsetReset``): messages may have been skipped.
    ///     Counted in ``offsetResets()`` either way.
    /// - Throws: ``KafkaError`` with code `.configuration` naming an invalid option or property.
    public init(
        configuration: KafkaConsumerConfiguration,
        logger: Logger,
        onAssign: RebalanceHandler? = nil,
        onRevoke: RebalanceHandler? = nil,
        onOffsetReset: OffsetResetHandler? = nil
    ) throws(KafkaError) {
        try configuration.validate()
        self.configuration = configuration
        self.logger = logger
        self.onAssign = onAssign
        self.onRevoke = onRevoke
        let state = ConditionLock(
            StateMachine(
                maxBatchSize: configuration.maxBatchSize,
                maxBufferedMessages: configuration.maxBufferedMessages
            )
        )
        self.state = state
        offsetResetRecorder = OffsetResetRecorder(handler: onOffsetReset)
        client = try RDKafkaConsumerClient(
            properties: configuration.librdkafkaProperties()
                + configuration.client.properties.sorted { $0.key < $1.key },
            maxBatch: configuration.maxBatchSize,
            offsetResets: offsetResetRecorder,
            logger: logger
        )
        core = Core(
            state: state,
            logger: logger,
            revokeTimeout: configuration.revokeTimeout,
            onAssign: onAssign,
            onRevoke: onRevoke
        )
        client.delegate = core
    }

    /// The batches of messages, in order within each partition. Supports a single iterator. The
    /// sequence ends when the consumer shuts down.
    public var messages: Messages { Messages(consumer: self) }

    /// Marks a message done: every effect of it is durable, so its offset may be committed.
    public func markDone(_ message: KafkaMessage) {
        markDone(CollectionOfOne(message))
    }

    /// Marks messages done. Marking a message twice, or one of a partition no longer assigned, does
    /// nothing.
    public func markDone(_ messages: some Collection<KafkaMessage>) {
        let wake = state.withLock { $0.markDone(messages) }
        if wake { state.broadcast() }
    }

    /// Gives handed-out messages back without marking them done, for work given up because its
    /// partition is no longer this consumer's (see ``assignmentEpoch(of:)``): a revoke or close no
    /// longer waits for them, and the committed offset never passes them, so the partition's next
    /// owner reads them again. Marking a released message done afterwards does nothing.
    public func release(_ messages: some Collection<KafkaMessage>) {
        state.withLock { $0.release(messages) }
        state.broadcast()
    }

    /// ``release(_:)`` for messages handed out in the assignment `epoch` names: given back to it
    /// (while it is being revoked, say), never to a later assignment of the same partition, which
    /// may have handed the same offsets out again; released there, their completion would no
    /// longer move its committed offset.
    public func release(_ messages: some Collection<KafkaMessage>, holding epoch: Int) {
        state.withLock { $0.release(messages, epoch: epoch) }
        state.broadcast()
    }

    /// An id of this consumer's current hold on `partition`, or nil when it does not hold it: not
    /// assigned, being revoked, or the consumer closing. Every assignment gets a new one, so work
    /// that waits long with a message (a retry not yet due) can tell whether the partition is still
    /// the one it was handed, and ``release(_:)`` the message if not.
    public func assignmentEpoch(of partition: TopicPartition) -> Int? {
        state.withLock { $0.assignmentEpoch(of: partition) }
    }

    /// Stops fetching `partitions` until ``resume(_:)``. Messages of them not yet handed out are
    /// discarded and re-fetched after resume, so delivery continues where the application left off.
    /// Other partitions keep flowing.
    public func pause(_ partitions: [TopicPartition]) {
        state.withLock { $0.pause(partitions) }
        state.broadcast()
        client.wake()
    }

    /// Resumes fetching partitions paused with ``pause(_:)``.
    public func resume(_ partitions: [TopicPartition]) {
        state.withLock { $0.resume(partitions) }
        state.broadcast()
        client.wake()
    }

    /// Where one assigned partition stands in this consumer: what a stuck partition is diagnosed by.
    public struct PartitionState: Sendable, Equatable, CustomStringConvertible {
        /// Which assignment of the partition this is (see ``KafkaConsumer/assignmentEpoch(of:)``).
        public var epoch: Int
        /// The offset up to which every handed-out message is done; nil before any was handed out.
        public var donePosition: Int64?
        /// Handed out and not yet done or released.
        public var outstanding: Int
        /// Paused by the application (``KafkaConsumer/pause(_:)``).
        public var paused: Bool
        public var revoking: Bool
        /// A rewind not yet applied: fetching starts again there.
        public var pendingSeek: Int64?
        /// Fetched and waiting in Herald's buffer.
        public var buffered: Int

        public var description: String {
            "epoch \(epoch), done to \(donePosition.map(String.init) ?? "-"), outstanding \(outstanding), "
                + "buffered \(buffered)\(paused ? ", paused" : "")\(revoking ? ", revoking" : "")"
                + (pendingSeek.map { ", rewinding to \($0)" } ?? "")
        }
    }

    /// Where each assigned partition stands.
    public func partitionStates() -> [TopicPartition: PartitionState] { state.withLock { $0.partitionStates() } }

    /// Pauses `partition` for `messages` of it the application holds, in the assignment it holds
    /// it in, and returns that assignment's epoch (``assignmentEpoch(of:)``), for
    /// ``resume(_:holding:)`` and ``release(_:holding:)``. If the consumer no longer holds the
    /// partition (being revoked, gone, or closing), it gives `messages` back instead
    /// (``release(_:)``) and returns nil: the next owner reads them.
    ///
    /// One lock for the look-up and the pause or release: read and then paused, a partition
    /// revoked and handed back in between would be paused in its next assignment, which the work
    /// never resumes; read and then released, messages would be given back to that assignment.
    public func pause(_ partition: TopicPartition, orRelease messages: some Collection<KafkaMessage>) -> Int? {
        let epoch = state.withLock { $0.pause(partition, orRelease: messages) }
        state.broadcast()
        if epoch != nil { client.wake() }
        return epoch
    }

    /// Resumes `partition` only if this consumer still holds it in the assignment `epoch` names: a
    /// pause made in a later assignment is that assignment's to end.
    @discardableResult
    public func resume(_ partition: TopicPartition, holding epoch: Int) -> Bool {
        let resumed = state.withLock { $0.resume(partition, holding: epoch) }
        if resumed {
            state.broadcast()
            client.wake()
        }
        return resumed
    }

    /// The partitions currently assigned to this consumer.
    public var assignment: [TopicPartition] { state.withLock { $0.assignment } }

    /// How many commits on revoke the broker refused as "rebalance in progress". The work they
    /// covered is redelivered to the partitions' next owner (at least once). Apache Kafka accepts
    /// them during a cooperative rebalance; the embedded broker may refuse them while its group is
    /// joining. Other commit failures are logged, not counted here.
    public var revokeCommitsRefusedMidRebalance: Int {
        core.revokeCommitsRefusedMidRebalance.load(ordering: .relaxed)
    }

    /// How many messages wait in Herald's buffer, not yet handed to the application.
    public var bufferedMessageCount: Int { state.withLock { $0.bufferedCount } }

    /// The most messages that ever waited in Herald's buffer at once.
    public var peakBufferedMessageCount: Int { state.withLock { $0.peakBufferedCount } }

    /// How many times librdkafka reset each partition's position because the broker refused the
    /// offset asked for (``KafkaOffsetReset``), since the consumer was created: every partition
    /// assigned now (0 if it never was reset), and every partition reset before, assigned or not.
    /// A counter per partition that exists from its assignment on, so that a rise shows.
    public func offsetResets() -> [TopicPartition: Int] {
        var resets = offsetResetRecorder.snapshot
        for partition in assignment where resets[partition] == nil { resets[partition] = 0 }
        return resets
    }

    /// The latest librdkafka statistics JSON, when ``KafkaClientOptions/statisticsInterval`` is set.
    public var statisticsJSON: String? { state.withLock { $0.statisticsJSON } }

    /// The consumer's broker connections as its latest statistics tell (see
    /// ``KafkaBrokerConnections``); `nil` until the first statistics arrive, and always without
    /// ``KafkaClientOptions/statisticsInterval``.
    public var brokerConnections: KafkaBrokerConnections? {
        statisticsJSON.flatMap { KafkaBrokerConnections(statistics: $0) }
    }

    /// The lag of each assigned partition: the high watermark minus the offset up to which this
    /// consumer's messages are done (messages received but unfinished count as lag), or minus the
    /// fetch position before any message arrived. Uses cached watermarks; non-blocking.
    public func lag() -> [TopicPartition: Int64] {
        let (assigned, done) = state.withLock { state in
            (state.assignment, state.donePositions(in: state.assignment))
        }
        let positions = client.positions(assigned.filter { done[$0] == nil })
        var result: [TopicPartition: Int64] = [:]
        for partition in assigned {
            guard let high = client.highWatermark(partition),
                let position = done[partition] ?? positions[partition]
            else { continue }
            result[partition] = max(0, high - position)
        }
        return result
    }

    /// The assigned partitions with nothing to read at all (their low and high watermarks are
    /// equal), as far as the cached watermarks tell.
    public func emptyPartitions() -> Set<TopicPartition> {
        Set(assignment.filter { partition in client.watermarks(partition).map { $0.low == $0.high } ?? false })
    }

    /// Where reading stands in each assigned partition: for an error or a failed test that must say
    /// which partition did not reach its end, and whether it was ever fetched. Uses cached
    /// watermarks; non-blocking.
    public var readingPositions: String {
        let assignment = assignment.sorted()
        guard !assignment.isEmpty else { return "no partition was assigned" }
        let lag = lag()
        let buffered = bufferedMessageCount
        let partitions = assignment.map { partition in
            guard let marks = client.watermarks(partition) else {
                return "\(partition) not fetched (no watermarks)"
            }
            let range = "offsets \(marks.low)..<\(marks.high)"
            guard let behind = lag[partition] else { return "\(partition) at no known position, \(range)" }
            // Done with, or fetched into the buffer (counted below): either way nothing is missing.
            return behind == 0
                ? "\(partition) fetched to its end, \(range)" : "\(partition) \(behind) behind its end, \(range)"
        }
        return partitions.joined(separator: "; ") + (buffered > 0 ? "; \(buffered) records buffered" : "")
    }

    /// The offsets the group has committed for `partitions`, asked of the broker.
    public func committedOffsets(
        for partitions: [TopicPartition],
        timeout: Duration = .seconds(10)
    ) async throws(KafkaError) -> [TopicPartition: Int64] {
        let client = self.client
        let result = await DedicatedThread.run(name: "herald.commits") {
            Result { () throws(KafkaError) in try client.committed(partitions, timeout: timeout) }
        }
        return try result.get()
    }

    /// Polls until graceful shutdown (or task cancellation, or ``triggerShutdown()``), then finishes
    /// in-flight work, commits and leaves the group.
    ///
    /// - Throws: a fatal ``KafkaError`` that ended the consumer.
    public func run() async throws {
        guard state.withLock({ $0.start() }) == .start else {
            throw KafkaError(code: .closed, message: "KafkaConsumer.run() may be called once")
        }
        try client.subscribe(configuration.topics)
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await withCheckedContinuation { continuation in
                    stopped.withLock { $0 = continuation }
                    DedicatedThread.start(name: "herald.consumer") { [self] in
                        pollLoop()
                        let continuation = stopped.withLock { slot in
                            defer { slot = nil }
                            return slot
                        }
                        continuation?.resume()
                    }
                }
            } onGracefulShutdown: {
                self.triggerShutdown()
            }
        } onCancel: {
            self.triggerShutdown()
        }
        if let failure = state.withLock({ $0.failure }) { throw failure }
    }

    /// Asks the consumer to shut down as on graceful shutdown.
    public func triggerShutdown() {
        if state.withLock({ $0.requestShutdown() }) { client.wake() }
        state.broadcast()
    }

    /// Destroys the consumer's handle without finishing work, committing or leaving the group, as if
    /// its process had been killed: the group reassigns its partitions after the session timeout and
    /// unfinished messages are redelivered. For failure tests and drills only.
    package func simulateCrash() {
        state.withLock { $0.requestCrash() }
        client.wake()
        state.broadcast()
    }
}
