import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldStore
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// The worker role: consumes the domain topics and `herald.directory`, and produces outbound
/// provider calls, dead letters and decision records.
///
/// Batches are processed one after another in consumption order (so each partition stays in
/// order), while earlier batches' deliveries are still being acknowledged. A message is marked
/// done — and its offset becomes committable — only once every record it produced is acknowledged.
/// `await producer.enqueue` waits while librdkafka's queue is full, and the consumer stops fetching
/// when its buffer is full: a slow broker slows consumption instead of growing memory.
///
/// On graceful shutdown (SIGTERM) the consumer stops fetching; the batch in hand is finished,
/// deliveries are awaited, offsets committed and the producer flushed.
public final class Worker: Service, Sendable {
    public struct Configuration: Sendable {
        public var consumer: KafkaConsumerConfiguration
        public var producer: KafkaProducerConfiguration
        /// How often due deferrals and digests are looked for.
        public var dueWorkInterval: Duration = .seconds(1)
        public var dueWorkBatch = 500
        /// How long claimed due work stays with this worker before another may take it.
        public var dueWorkLease: Duration = .seconds(60)
        /// Wait before processing a batch again after the store failed.
        public var storeRetryDelay: Duration = .seconds(1)
        /// How many parts of a batch are rendered and built concurrently. Default: one per core.
        public var buildParallelism = Worker.onlineCores
        /// How long the decision ledger remembers (and ended throttle windows stay), and how often
        /// older entries are deleted.
        public var purge = PurgeSchedule()
        /// For failure tests only: after this many batches have had their records handed to the
        /// producer, the worker crashes (``simulateCrash()``) before they are acknowledged, as a
        /// process killed in the middle of a batch would. A crash from outside at a chosen moment
        /// could come after the worker had finished all its work.
        package var crashAfterBatches: Int?

        public init(consumer: KafkaConsumerConfiguration, producer: KafkaProducerConfiguration) {
            self.consumer = consumer
            self.producer = producer
        }
    }

    let configuration: Configuration
    let processor: EventProcessor
    let consumer: KafkaConsumer
    let producer: KafkaProducer
    let logger: Logger
    public let readiness: WorkerReadiness

    /// - Throws: ``KafkaError`` `.configuration` for invalid Kafka settings.
    public init(
        configuration: Configuration,
        processor: EventProcessor,
        readiness: WorkerReadiness = WorkerReadiness(),
        logger: Logger
    ) throws(KafkaError) {
        self.configuration = configuration
        self.processor = processor
        self.logger = logger
        self.readiness = readiness
        self.consumer = try KafkaConsumer(
            configuration: configuration.consumer,
            logger: logger,
            onAssign: { partitions in readiness.assigned(partitions) },
            onRevoke: { partitions in readiness.revoked(partitions) },
            onOffsetReset: KafkaConsumer.warnOfOffsetReset(to: logger)
        )
        self.producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
    }

    public var statistics: WorkerStatistics { processor.statistics }

    /// The consumer's broker connections, from its latest librdkafka statistics (`nil` without
    /// `statistics.interval.ms`, or before the first).
    public var brokerConnections: KafkaBrokerConnections? { consumer.brokerConnections }

    /// Offset resets per partition (``KafkaConsumer/offsetResets()``).
    public func offsetResets() -> [TopicPartition: Int] { consumer.offsetResets() }

    public func run() async throws {
        let producer = producer
        // The producer must outlive the consumer's last batch: it is shut down by this method,
        // after the deliveries, not by the graceful-shutdown signal all services receive.
        let producing = Task.detached { try await producer.run() }
        defer { producer.triggerShutdown() }
        try await withTaskCancellationHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await self.consumer.run() }
                group.addTask { try await self.dueWorkLoop() }
                group.addTask {
                    let (store, statistics) = (self.processor.store, self.statistics)
                    await self.configuration.purge.run(
                        what: "decision ledger",
                        clock: self.processor.clock,
                        logger: self.logger,
                        purge: { try await store.purge(before: $0) },
                        purged: { count in statistics.update { $0.purgedDecisions += count } }
                    )
                }
                do {
                    try await consume()
                } catch is CancellationError where Task.isCancelled {
                    // A hard stop: the batch in hand was abandoned, not marked done, and is
                    // redelivered to the next owner; the consumer still commits the finished work.
                }
                // The consumer has finished: done work is committed, the group left.
                group.cancelAll()
                try await group.waitForAll()
            }
        } onCancel: {
            consumer.triggerShutdown()
        }
        producer.triggerShutdown()
        try await producing.value
        logger.info("worker stopped")
    }

    /// Three batches move at once, each a stage behind the one before: batch `n + 2` is decoded,
    /// routed and looked up while the store decides batch `n + 1` and batch `n` is rendered and
    /// built. The store decides in consumption order (``Turnstile``), and the builds enqueue their
    /// records in that order too; a slow build or a full producer queue slows consumption instead
    /// of piling up batches. With PostgreSQL the look-up of one batch overlaps the `decide` round
    /// trip of the one before it.
    private func consume() async throws {
        let (consumer, producer, processor, statistics) = (consumer, producer, processor, statistics)
        let parallelism = configuration.buildParallelism
        let deciding = Turnstile()
        let enqueueing = Turnstile()
        var turn = 0
        var received = false
        try await withThrowingDiscardingTaskGroup { tasks in
            for await batch in consumer.messages {
                if !received && !batch.isEmpty {
                    received = true
                    statistics.noteBatchReceived()
                }
                await enqueueing.wait(until: turn - 2)
                let prepared = try await retryingStore { () async throws(StoreError) in
                    try await processor.prepare(batch)
                }
                let current = turn
                turn += 1
                tasks.addTask {
                    await deciding.wait(until: current)
                    let decided: EventProcessor.DecidedBatch
                    do {
                        decided = try await self.retryingStore { () async throws(StoreError) in
                            try await processor.decide(prepared)
                        }
                        deciding.finish(current)
                    } catch {
                        // Given up (the worker stops): the turns after it must not wait forever.
                        deciding.finish(current)
                        enqueueing.finish(current)
                        throw error
                    }
                    let records = await processor.buildParts(decided, parts: parallelism)
                    await enqueueing.wait(until: current)
                    let enqueued: Result<KafkaDeliveries, KafkaError>
                    do throws(KafkaError) {
                        enqueued = .success(try await producer.enqueue(contentsOf: records))
                    } catch {
                        enqueued = .failure(error)
                    }
                    // Before the next batch may enqueue: it then finds the producer shut down.
                    if current + 1 == self.configuration.crashAfterBatches { self.simulateCrash() }
                    // Finished also when enqueueing failed: the turns after it must not wait forever.
                    enqueueing.finish(current)
                    if let failure = await (try enqueued.get()).failures().first {
                        // Not marked done: the batch is redelivered to whoever takes the partitions.
                        consumer.triggerShutdown()
                        throw failure.error
                    }
                    consumer.markDone(batch)
                    let now = WallClock().now().epochMilliseconds
                    statistics.update { counters in
                        counters.handledEvents += batch.count
                        for message in batch {
                            if let sent = message.timestampMilliseconds {
                                counters.latencies.observe(Double(max(now - sent, 0)) / 1000)
                            }
                        }
                    }
                }
            }
        }
    }

    /// Runs a store step, waiting and trying again while the store is unreachable: the partition
    /// waits (and readiness says so) rather than skipping events.
    private func retryingStore<Result>(_ step: () async throws(StoreError) -> Result) async throws -> Result {
        while true {
            do {
                let result = try await step()
                readiness.storeAnswered(true)
                return result
            } catch {
                // Cancelled, the store call was interrupted rather than failed: give up the batch.
                if Task.isCancelled { throw CancellationError() }
                readiness.storeAnswered(false)
                logger.error("store failed; retrying the batch", metadata: ["error": "\(error)"])
                try await Task.sleep(for: configuration.storeRetryDelay)
            }
        }
    }

    private func dueWorkLoop() async throws {
        while !Task.isCancelled {
            do {
                let (records, claimed) = try await processor.processDue(
                    limit: configuration.dueWorkBatch,
                    lease: configuration.dueWorkLease
                )
                if !claimed.isEmpty {
                    let failures = try await producer.enqueue(records).failures()
                    // Unacknowledged due work stays claimed until its lease runs out, then comes back.
                    if failures.isEmpty { try await processor.store.complete(claimed) }
                    // More may be due right away.
                    if claimed.count == configuration.dueWorkBatch { continue }
                }
            } catch let error as KafkaError where error.code == .closed {
                return
            } catch {
                // Stopping: the store call was interrupted, not failed.
                if Task.isCancelled { return }
                logger.error("due work failed; trying again", metadata: ["error": "\(error)"])
            }
            do {
                try await Task.sleep(for: configuration.dueWorkInterval)
            } catch {
                return
            }
        }
    }

    /// The cores the process may use: the default parallelism of building.
    public static var onlineCores: Int { max(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 1) }

    /// Drops the consumer without committing or leaving the group, as a killed process would.
    /// For failure tests only.
    package func simulateCrash() {
        consumer.simulateCrash()
        producer.triggerShutdown()
    }
}
