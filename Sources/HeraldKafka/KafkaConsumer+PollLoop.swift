import CRdKafka
import Logging
import Synchronization

extension KafkaConsumer {
    /// The poll thread's loop: apply pauses, seeks and offset stores, fetch a batch, hand it over.
    func pollLoop() {
        while true {
            let plan = state.withLock { $0.pollPlan() }
            if state.withLock({ $0.crashRequested }) {
                client.destroyAbruptly()
                state.withLock { $0.finishClosing() }?.resume(returning: nil)
                return
            }
            if plan.stop { break }
            client.pause(plan.pause)
            client.resume(plan.resume)
            client.seek(plan.seek)
            client.storeOffsets(plan.store)
            if let deadline = plan.waitForRoomUntil {
                state.wait(until: { $0.shouldStopWaitingForRoom }, deadline: deadline)
                continue
            }
            let (messages, errors) = client.consumeBatch(max: plan.maxMessages, timeout: .milliseconds(100))
            for error in errors {
                logger.info("kafka consume error", metadata: ["kafka.error": "\(error)"])
            }
            if case .deliver(let waiter, let batch) = state.withLock({ $0.append(messages) }) {
                waiter.resume(returning: batch)
            }
        }
        close()
    }

    /// Graceful close: stop handing out messages, wait for in-flight ones, commit, leave the group.
    private func close() {
        let deadline = ContinuousClock.now + configuration.closeTimeout
        let (waiter, assigned) = state.withLock { state in
            (state.beginDraining(deadline: deadline), state.assignment)
        }
        waiter?.resume(returning: nil)
        client.pause(assigned)
        while true {
            let finished = state.wait(
                until: { $0.outstanding == 0 || $0.crashRequested },
                deadline: min(deadline, .now + .milliseconds(50))
            )
            if finished || ContinuousClock.now >= deadline { break }
            // Keep serving librdkafka's queue (rebalances) while the application finishes; anything
            // fetched now is dropped unstored and read again later.
            _ = client.consumeBatch(max: configuration.maxBatchSize, timeout: .zero)
        }
        let outstanding = state.withLock { $0.outstanding }
        if outstanding > 0 {
            logger.info(
                "kafka consumer closing with unfinished messages; they will be redelivered",
                metadata: ["kafka.outstanding": "\(outstanding)"]
            )
        }
        client.storeOffsets(state.withLock { $0.takeDirtyOffsets() })
        commitBeforeLeaving(deadline: deadline)
        if state.withLock({ $0.crashRequested }) {
            client.destroyAbruptly()
        } else if let error = client.close() {
            logger.info("kafka consumer close failed", metadata: ["kafka.error": "\(error)"])
        }
        state.withLock { $0.finishClosing() }?.resume(returning: nil)
        logger.debug("kafka consumer closed")
    }

    /// Commits what is done before leaving the group. A broker refuses commits while the group is
    /// rebalancing (another member joining or leaving at the same moment); the rebalance can only
    /// finish while this thread serves librdkafka's queue, so it does that and tries again, until the
    /// close deadline. What still is not committed is redelivered to the next owner.
    private func commitBeforeLeaving(deadline: ContinuousClock.Instant) {
        var attempt = 0
        while true {
            attempt += 1
            let offsets = state.withLock { $0.committable(in: $0.assignment) }
            do {
                try client.commitSync(offsets)
                return
            } catch {
                guard error.isRebalanceInProgress, ContinuousClock.now < deadline,
                    !state.withLock({ $0.crashRequested })
                else {
                    logger.info(
                        "kafka commit on close failed; unfinished offsets will be redelivered",
                        metadata: ["kafka.error": "\(error)", "kafka.attempts": "\(attempt)"]
                    )
                    return
                }
                _ = client.consumeBatch(max: configuration.maxBatchSize, timeout: .milliseconds(100))
            }
        }
    }

    /// Receives librdkafka's callbacks on the poll thread and applies them to the shared state.
    final class Core: RDKafkaConsumerDelegate {
        private let state: ConditionLock<StateMachine>
        private let logger: Logger
        private let revokeTimeout: Duration
        private let onAssign: RebalanceHandler?
        private let onRevoke: RebalanceHandler?
        /// Commits on revoke that the broker refused with REBALANCE_IN_PROGRESS: the next owner gets
        /// that work again.
        let revokeCommitsRefusedMidRebalance = Atomic<Int>(0)

        init(
            state: ConditionLock<StateMachine>,
            logger: Logger,
            revokeTimeout: Duration,
            onAssign: RebalanceHandler?,
            onRevoke: RebalanceHandler?
        ) {
            self.state = state
            self.logger = logger
            self.revokeTimeout = revokeTimeout
            self.onAssign = onAssign
            self.onRevoke = onRevoke
        }

        func partitionsAssigning(_ partitions: [TopicPartition]) -> Bool {
            let startPaused = state.withLock { $0.assign(partitions) }
            logger.debug("kafka partitions assigned", metadata: ["kafka.partitions": "\(partitions)"])
            onAssign?(partitions)
            return startPaused
        }

        func partitionsRevoking(_ partitions: [TopicPartition], client: RDKafkaConsumerClient) {
            let deadline = state.withLock { state in
                state.beginRevoke(partitions)
                return state.closeDeadline.map { min($0, .now + revokeTimeout) } ?? .now + revokeTimeout
            }
            onRevoke?(partitions)
            let finished = state.wait(
                until: { $0.outstanding(in: partitions) == 0 || $0.crashRequested },
                deadline: deadline
            )
            let (offsets, unfinished) = state.withLock {
                ($0.committable(in: partitions), $0.outstanding(in: partitions))
            }
            if !finished {
                logger.info(
                    "kafka revoke timed out; unfinished messages will be redelivered to the next owner",
                    metadata: ["kafka.partitions": "\(partitions)", "kafka.outstanding": "\(unfinished)"]
                )
            }
            do {
                try client.commitSync(offsets)
            } catch {
                if error.librdkafkaCode == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS.rawValue {
                    revokeCommitsRefusedMidRebalance.add(1, ordering: .relaxed)
                }
                logger.info("kafka commit on revoke failed", metadata: ["kafka.error": "\(error)"])
            }
            logger.debug("kafka partitions revoked", metadata: ["kafka.partitions": "\(partitions)"])
        }

        func partitionsRevoked(_ partitions: [TopicPartition]) {
            state.withLock { $0.finishRevoke(partitions) }
        }

        func clientError(_ error: KafkaError) {
            if error.isFatal {
                logger.info("kafka consumer fatal error", metadata: ["kafka.error": "\(error)"])
                state.withLock { $0.fail(error) }
                state.broadcast()
            } else {
                // librdkafka has already logged it through the log callback.
                logger.debug("kafka consumer error", metadata: ["kafka.error": "\(error)"])
            }
        }

        func statistics(_ json: String) {
            state.withLock { $0.recordStatistics(json) }
        }
    }
}
