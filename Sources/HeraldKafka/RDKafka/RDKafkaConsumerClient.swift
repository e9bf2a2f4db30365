import CRdKafka
import Logging
import Synchronization

/// What the consumer's poll thread is told from inside librdkafka's callbacks.
protocol RDKafkaConsumerDelegate: AnyObject, Sendable {
    /// Partitions are about to be assigned. Returns whether to pause them straight away.
    func partitionsAssigning(_ partitions: [TopicPartition]) -> Bool
    /// Partitions are being revoked: finish or abandon their work and commit before returning.
    func partitionsRevoking(_ partitions: [TopicPartition], client: RDKafkaConsumerClient)
    /// Partitions were released (after the revoke has been applied).
    func partitionsRevoked(_ partitions: [TopicPartition])
    /// librdkafka reported an error; `fatal` errors end the consumer.
    func clientError(_ error: KafkaError)
    /// librdkafka emitted its statistics JSON.
    func statistics(_ json: String)
}

/// The librdkafka consumer handle and every C call made on it.
///
/// All methods are thread-safe in librdkafka; `consumeBatch`, `close` and the callbacks run on the
/// consumer's poll thread only.
final class RDKafkaConsumerClient: @unchecked Sendable {
    // @unchecked: `handle` and `queue` are librdkafka objects documented as thread-safe; `delegate` is
    // set once before the poll thread starts and only read after; `messageBuffer` and `builder` are
    // used by the poll thread alone; `lifecycle` is behind its own lock.
    private let handle: OpaquePointer
    private let queue: OpaquePointer
    private let logger: Logger
    private let maxBatch: Int
    private var messageBuffer: UnsafeMutablePointer<UnsafeMutablePointer<rd_kafka_message_t>?>
    private var builder = RDKafkaBatchBuilder()
    private let lifecycle = ConditionLock(Lifecycle.open)
    weak var delegate: (any RDKafkaConsumerDelegate)?

    private enum Lifecycle { case open, closed, destroyed }

    init(
        properties: [(String, String)],
        maxBatch: Int,
        offsetResets: OffsetResetRecorder? = nil,
        logger: Logger
    ) throws(KafkaError) {
        self.logger = logger
        self.maxBatch = maxBatch
        offersCooperativeSticky = properties.contains {
            $0.0 == "partition.assignment.strategy" && $0.1.contains("cooperative-sticky")
        }
        clientID = properties.last { $0.0 == "client.id" }?.1 ?? ""
        let conf = try RDKafkaConfig.make(properties, role: "consumer")
        let context = RDKafkaCallbackContext(logger: logger, offsetResets: offsetResets)
        contextPointer = context.install(on: conf)
        rd_kafka_conf_set_rebalance_cb(conf, rdKafkaRebalanceTrampoline)
        rd_kafka_conf_set_error_cb(conf, rdKafkaConsumerErrorTrampoline)
        rd_kafka_conf_set_stats_cb(conf, rdKafkaConsumerStatsTrampoline)
        do {
            handle = try RDKafkaConfig.makeHandle(type: RD_KAFKA_CONSUMER, conf: conf, role: "consumer")
        } catch {
            RDKafkaCallbackContext.release(contextPointer)
            throw error
        }
        rd_kafka_poll_set_consumer(handle)
        queue = rd_kafka_queue_get_consumer(handle)
        messageBuffer = .allocate(capacity: maxBatch)
        context.consumer = self
    }

    private let contextPointer: UnsafeMutableRawPointer

    /// Set once the group has handed this consumer an assignment (even an empty one).
    private let hadAssignment = Atomic<Bool>(false)
    /// Whether the group may choose `cooperative-sticky` for this consumer. Read from the
    /// configuration: once closed, librdkafka no longer answers `rd_kafka_rebalance_protocol`.
    private let offersCooperativeSticky: Bool
    /// `client.id`, by which ``endedHandles(clientID:)`` counts.
    private let clientID: String

    /// How the handles that are gone ended, by `client.id`. A handle ``mayDestroy`` kept from
    /// `rd_kafka_destroy` holds its threads and connections until the process exits: for tests,
    /// a throwaway consumer must not be one.
    private static let ended = Mutex<[String: (destroyed: Int, leftAlone: Int)]>([:])

    /// How many consumer handles of `client.id` `clientID` were destroyed, and how many were
    /// closed but left alone, so far.
    package static func endedHandles(clientID: String) -> (destroyed: Int, leftAlone: Int) {
        ended.withLock { $0[clientID] ?? (0, 0) }
    }

    /// Whether `rd_kafka_destroy` may run on this handle. librdkafka before 2.3.0 aborts the process
    /// when it destroys a consumer whose group chose `cooperative-sticky` but that has not yet had
    /// its first assignment — closed mid-join, say by a SIGTERM during start-up — because the
    /// sticky assignor's state is still NULL (confluentinc/librdkafka#4312, fixed in 2.3.0; Debian
    /// bookworm ships 2.0.2). Such a handle is left alone instead: after `close` it is out of the
    /// group and holds only its threads and idle connections, where destroying it takes the process.
    /// (Whether it got as far as joining cannot be asked after close, so a consumer that never had
    /// an assignment is left alone whether it joined or not.)
    private var mayDestroy: Bool {
        rd_kafka_version() >= 0x0203_0000 || !offersCooperativeSticky || hadAssignment.load(ordering: .acquiring)
    }

    deinit {
        // No callback may reach this object while it is being torn down.
        RDKafkaCallbackContext.from(contextPointer)?.consumer = nil
        let destroyed = lifecycle.withLock { $0 == .destroyed }
        if !destroyed {
            rd_kafka_queue_destroy(queue)
            let destroying = mayDestroy
            countEnd(destroyed: destroying)
            if destroying {
                rd_kafka_destroy(handle)
            } else {
                // The callbacks' context stays too: librdkafka may still call through it.
                messageBuffer.deallocate()
                return
            }
        }
        RDKafkaCallbackContext.release(contextPointer)
        messageBuffer.deallocate()
    }

    private func countEnd(destroyed: Bool) {
        Self.ended.withLock { ended in
            if destroyed {
                ended[clientID, default: (0, 0)].destroyed += 1
            } else {
                ended[clientID, default: (0, 0)].leftAlone += 1
            }
        }
    }

    static func client(fromOpaque opaque: UnsafeMutableRawPointer?) -> RDKafkaConsumerClient? {
        RDKafkaCallbackContext.from(opaque)?.consumer
    }

    func subscribe(_ topics: [String]) throws(KafkaError) {
        let list = rd_kafka_topic_partition_list_new(Int32(topics.count))!
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for topic in topics { rd_kafka_topic_partition_list_add(list, topic, herald_partition_unassigned()) }
        let error = rd_kafka_subscribe(handle, list)
        if error != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(rdkafka: error, context: "subscribe") }
    }

    /// Returns the messages that are ready, waiting up to `timeout` only if there are none, and
    /// serves callbacks (rebalances, errors, statistics) meanwhile.
    func consumeBatch(max count: Int, timeout: Duration) -> (messages: [KafkaMessage], errors: [KafkaError]) {
        let received = RDKafkaConsumerClient.consumeReady(
            queue,
            into: messageBuffer,
            capacity: Swift.min(count, maxBatch),
            timeout: timeout
        )
        guard received > 0 else { return ([], []) }
        let result = builder.build(messageBuffer, count: received)
        for index in 0..<received { rd_kafka_message_destroy(messageBuffer[index]) }
        return result
    }

    /// `rd_kafka_consume_batch_queue` waits until the batch is full or the timeout passes, which
    /// would hold messages back whenever traffic is light. So: take what is ready without waiting;
    /// if nothing is, wait for one message (librdkafka wakes the call as soon as one arrives, or on
    /// `rd_kafka_queue_yield`), then take whatever arrived with it.
    static func consumeReady(
        _ queue: OpaquePointer,
        into buffer: UnsafeMutablePointer<UnsafeMutablePointer<rd_kafka_message_t>?>,
        capacity: Int,
        timeout: Duration
    ) -> Int {
        let ready = rd_kafka_consume_batch_queue(queue, 0, buffer, capacity)
        if ready != 0 || timeout == .zero { return Swift.max(ready, 0) }
        let first = rd_kafka_consume_batch_queue(queue, Int32(timeout.milliseconds), buffer, 1)
        guard first > 0 else { return 0 }
        guard capacity > 1 else { return 1 }
        return 1 + Swift.max(rd_kafka_consume_batch_queue(queue, 0, buffer + 1, capacity - 1), 0)
    }

    /// Interrupts a `consumeBatch` that is waiting, from any thread.
    func wake() {
        rd_kafka_queue_yield(queue)
    }

    func pause(_ partitions: some Collection<TopicPartition>) {
        guard !partitions.isEmpty else { return }
        RDKafkaTopicPartitionList.with(partitions) { _ = rd_kafka_pause_partitions(handle, $0) }
    }

    func resume(_ partitions: some Collection<TopicPartition>) {
        guard !partitions.isEmpty else { return }
        RDKafkaTopicPartitionList.with(partitions) { _ = rd_kafka_resume_partitions(handle, $0) }
    }

    /// Moves fetch positions (asynchronously; already prefetched messages are purged).
    func seek(_ offsets: [TopicPartition: Int64]) {
        guard !offsets.isEmpty else { return }
        let list = RDKafkaTopicPartitionList.make(offsets: offsets)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        if let error = rd_kafka_seek_partitions(handle, list, 0) {
            logger.info(
                "kafka seek failed",
                metadata: ["kafka.error": "\(KafkaError(consuming: error, context: "seek"))"]
            )
        }
    }

    /// Stores offsets for the next automatic commit.
    func storeOffsets(_ offsets: [TopicPartition: Int64]) {
        guard !offsets.isEmpty else { return }
        let list = RDKafkaTopicPartitionList.make(offsets: offsets)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        // Partitions revoked in the meantime answer with a state error; their offsets were committed
        // by the revoke itself.
        _ = rd_kafka_offsets_store(handle, list)
    }

    /// Commits offsets and waits for the broker's answer.
    func commitSync(_ offsets: [TopicPartition: Int64]) throws(KafkaError) {
        guard !offsets.isEmpty else { return }
        let list = RDKafkaTopicPartitionList.make(offsets: offsets)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let error = rd_kafka_commit(handle, list, 0)
        if error != RD_KAFKA_RESP_ERR_NO_ERROR && error != RD_KAFKA_RESP_ERR__NO_OFFSET {
            throw KafkaError(rdkafka: error, context: "commit")
        }
    }

    /// The committed offsets of `partitions`, asked of the group coordinator (blocking).
    func committed(_ partitions: [TopicPartition], timeout: Duration) throws(KafkaError) -> [TopicPartition: Int64] {
        let list = RDKafkaTopicPartitionList.make(partitions)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let error = rd_kafka_committed(handle, list, Int32(timeout.milliseconds))
        if error != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(rdkafka: error, context: "committed offsets") }
        var result: [TopicPartition: Int64] = [:]
        for (partition, offset, _) in RDKafkaTopicPartitionList.offsets(list) where offset >= 0 {
            result[partition] = offset
        }
        return result
    }

    /// The fetch positions of `partitions` (the offset after the last message received).
    func positions(_ partitions: [TopicPartition]) -> [TopicPartition: Int64] {
        guard !partitions.isEmpty else { return [:] }
        let list = RDKafkaTopicPartitionList.make(partitions)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        _ = rd_kafka_position(handle, list)
        var result: [TopicPartition: Int64] = [:]
        for (partition, offset, error) in RDKafkaTopicPartitionList.offsets(list)
        where error == RD_KAFKA_RESP_ERR_NO_ERROR && offset >= 0 {
            result[partition] = offset
        }
        return result
    }

    /// The cached high watermark of a partition, from the last fetch response (non-blocking).
    func highWatermark(_ partition: TopicPartition) -> Int64? {
        watermarks(partition)?.high
    }

    /// The cached low and high watermarks of a partition (non-blocking); nil until a fetch or offset
    /// query has reported both.
    func watermarks(_ partition: TopicPartition) -> (low: Int64, high: Int64)? {
        var low: Int64 = -1
        var high: Int64 = -1
        let error = rd_kafka_get_watermark_offsets(handle, partition.topic, partition.partition, &low, &high)
        return error == RD_KAFKA_RESP_ERR_NO_ERROR && high >= 0 && low >= 0 ? (low, high) : nil
    }

    /// Leaves the group: the final revoke runs through the rebalance callback and commits.
    func close() -> KafkaError? {
        let error = rd_kafka_consumer_close(handle)
        lifecycle.withLock { $0 = .closed }
        return error == RD_KAFKA_RESP_ERR_NO_ERROR ? nil : KafkaError(rdkafka: error, context: "close")
    }

    /// Destroys the handle without leaving the group or committing, as a crashed process would.
    /// For failure tests only.
    func destroyAbruptly() {
        let alreadyDestroyed = lifecycle.withLock { state in
            defer { state = .destroyed }
            return state == .destroyed
        }
        guard !alreadyDestroyed else { return }
        rd_kafka_queue_destroy(queue)
        let destroying = mayDestroy
        countEnd(destroyed: destroying)
        guard destroying else { return }
        rd_kafka_destroy_flags(handle, Int32(RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE))
    }

    // MARK: Callbacks (on the poll thread, inside consumeBatch or close)

    fileprivate func handleRebalance(
        _ error: rd_kafka_resp_err_t,
        _ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
    ) {
        let partitions = list.map { RDKafkaTopicPartitionList.partitions($0) } ?? []
        // librdkafka answers NULL once its group's queue is shut, as when a rebalance callback runs
        // while the handle terminates (a CI run crashed there, force-unwrapping it, with the broker
        // gone). The configuration then tells which call undoes the assignment; were it the wrong
        // one, librdkafka reports an error, which is logged.
        let cooperative =
            rd_kafka_rebalance_protocol(handle).map { String(cString: $0) == "COOPERATIVE" } ?? offersCooperativeSticky
        switch error {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
            hadAssignment.store(true, ordering: .releasing)
            let pauseNow = delegate?.partitionsAssigning(partitions) ?? false
            if cooperative {
                if let failure = rd_kafka_incremental_assign(handle, list) {
                    report(KafkaError(consuming: failure, context: "incremental assign"))
                }
            } else {
                let failure = rd_kafka_assign(handle, list)
                if failure != RD_KAFKA_RESP_ERR_NO_ERROR { report(KafkaError(rdkafka: failure, context: "assign")) }
            }
            // A partition starts a new assignment flowing unless the buffer is full. librdkafka
            // keeps a partition's pause through a revoke and a later assignment (pause is a flag on
            // its partition object, which outlives the assignment): one paused when it was taken
            // away (a retry waiting for its time, a full buffer) came back paused, and as the
            // assignment that paused it was over, nothing ever resumed it.
            if pauseNow { pause(partitions) } else { resume(partitions) }
        default:
            if error != RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS {
                report(KafkaError(rdkafka: error, context: "rebalance"))
            }
            delegate?.partitionsRevoking(partitions, client: self)
            if cooperative {
                if let failure = rd_kafka_incremental_unassign(handle, list) {
                    report(KafkaError(consuming: failure, context: "incremental unassign"))
                }
            } else {
                _ = rd_kafka_assign(handle, nil)
            }
            delegate?.partitionsRevoked(partitions)
        }
    }

    fileprivate func report(_ error: KafkaError) {
        delegate?.clientError(error)
    }

    fileprivate func handleError(_ code: rd_kafka_resp_err_t, reason: String) {
        var error = KafkaError(rdkafka: code, context: "consumer")
        if code == RD_KAFKA_RESP_ERR__FATAL {
            var buffer = [CChar](repeating: 0, count: 512)
            let original = rd_kafka_fatal_error(handle, &buffer, buffer.count)
            error = KafkaError(rdkafka: original, context: "consumer fatal error")
            error.isFatal = true
        }
        error.message += " (\(reason))"
        delegate?.clientError(error)
    }

    fileprivate func handleStatistics(_ json: String) {
        delegate?.statistics(json)
    }
}

private func rdKafkaRebalanceTrampoline(
    _ handle: OpaquePointer?,
    _ error: rd_kafka_resp_err_t,
    _ partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?,
    _ opaque: UnsafeMutableRawPointer?
) {
    RDKafkaConsumerClient.client(fromOpaque: opaque)?.handleRebalance(error, partitions)
}

private func rdKafkaConsumerErrorTrampoline(
    _ handle: OpaquePointer?,
    _ error: Int32,
    _ reason: UnsafePointer<CChar>?,
    _ opaque: UnsafeMutableRawPointer?
) {
    let text = reason.map { String(cString: $0) } ?? ""
    RDKafkaConsumerClient.client(fromOpaque: opaque)?.handleError(rd_kafka_resp_err_t(error), reason: text)
}

private func rdKafkaConsumerStatsTrampoline(
    _ handle: OpaquePointer?,
    _ json: UnsafeMutablePointer<CChar>?,
    _ length: Int,
    _ opaque: UnsafeMutableRawPointer?
) -> Int32 {
    if let json {
        let text = String(decoding: UnsafeRawBufferPointer(start: json, count: length), as: UTF8.self)
        RDKafkaConsumerClient.client(fromOpaque: opaque)?.handleStatistics(text)
    }
    return 0  // librdkafka frees the JSON.
}
