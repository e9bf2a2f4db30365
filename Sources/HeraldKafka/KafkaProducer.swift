import Logging
import ServiceLifecycle
import Synchronization

/// An asynchronous Kafka producer with one delivery result per message and awaitable backpressure.
///
/// ``enqueue(_:)`` hands records to librdkafka in order and returns once all are queued, waiting
/// (never failing, never growing without bound) while the local queue is full; the returned
/// ``KafkaDeliveries`` completes when every record is acknowledged by the cluster or has failed.
/// Splitting the two lets a caller keep per-partition order while awaiting deliveries concurrently.
///
/// Delivery reports are served by a thread of the producer's own. The producer is a `Service`:
/// ``run()`` must be running for deliveries to complete; on graceful shutdown it flushes for up to
/// ``KafkaProducerConfiguration/flushTimeout`` and fails what is left with `.purged`.
public final class KafkaProducer: Service, Sendable {
    let logger: Logger
    let configuration: KafkaProducerConfiguration
    let client: RDKafkaProducerClient
    let state: ConditionLock<State>
    /// Bumped after every batch of delivery reports; a sender that found the queue full waits for it
    /// to change, which cannot miss a wake-up because it reads the value before trying to produce.
    let deliveryGeneration = Atomic<UInt64>(0)
    /// Messages handed to librdkafka whose delivery report has not been served yet. Counted here
    /// because librdkafka's own count (`rd_kafka_outq_len`) also holds requests and error events
    /// waiting in its queues, so it reads above the message limit while a broker is down.
    private let undelivered = Atomic<Int>(0)
    private let stopped = ConditionLock<CheckedContinuation<Void, Never>?>(nil)

    /// The opaque pointer of each message carries its ticket id and its index in the ticket, so a
    /// delivery report finds its result slot without any allocation per message.
    static let indexBits: UInt = 24
    static let maxTicketSize = 1 << 24

    struct State {
        var nextTicketID: UInt = 1
        var tickets: [UInt: DeliveryTicket] = [:]
        var spaceWaiters: [CheckedContinuation<Bool, Never>] = []
        var started = false
        var shutdownRequested = false
        var closed = false
        var failure: KafkaError?
    }

    /// Creates a producer. Deliveries complete only while ``run()`` runs.
    ///
    /// - Throws: ``KafkaError`` with code `.configuration` naming an invalid option or property.
    public init(configuration: KafkaProducerConfiguration, logger: Logger) throws(KafkaError) {
        try configuration.validate()
        self.configuration = configuration
        self.logger = logger
        let state = ConditionLock(State())
        self.state = state
        client = try RDKafkaProducerClient(
            properties: configuration.librdkafkaProperties()
                + configuration.client.properties.sorted { $0.key < $1.key },
            logger: logger
        )
        client.onError = { error in
            if error.isFatal {
                state.withLock { $0.failure = error }
                logger.info("kafka producer fatal error", metadata: ["kafka.error": "\(error)"])
            } else {
                // librdkafka has already logged it through the log callback.
                logger.debug("kafka producer error", metadata: ["kafka.error": "\(error)"])
            }
        }
    }

    /// Queues `records` in order, waiting while the local queue is full.
    ///
    /// A record that cannot be queued at all (too large, unknown partition) gets a failed result in
    /// the returned deliveries rather than an error here.
    ///
    /// librdkafka reads the keys and values in place, so the producer keeps `records` until every
    /// one of them is reported (see docs/kafka.md); the caller may drop them as soon as this returns.
    ///
    /// - Throws: ``KafkaError`` `.closed` if the producer has shut down, or its fatal error.
    public func enqueue(_ records: [KafkaProducerRecord]) async throws(KafkaError) -> KafkaDeliveries {
        try await enqueue(contentsOf: [records])
    }

    /// ``enqueue(_:)`` for records that come in several arrays, queued in this order (a batch built
    /// in parts): one set of deliveries for all of them, indexed as if the arrays were joined,
    /// without joining them, which copied every record (retaining each of its four buffers, and
    /// releasing them again as the parts were freed).
    ///
    /// - Throws: ``KafkaError`` `.closed` if the producer has shut down, or its fatal error.
    public func enqueue(contentsOf parts: [[KafkaProducerRecord]]) async throws(KafkaError) -> KafkaDeliveries {
        var deliveries: [DeliveryTicket] = []
        for records in parts {
            var start = 0
            while start < records.count {
                let end = min(records.count, start + Self.maxTicketSize)
                deliveries.append(try await enqueueChunk(records[start..<end]))
                start = end
            }
        }
        // Nothing to queue still finds out whether the producer is open, and is delivered at once.
        if deliveries.isEmpty { deliveries.append(try await enqueueChunk([])) }
        return KafkaDeliveries(producer: self, tickets: deliveries)
    }

    /// Produces one record and waits for its delivery.
    ///
    /// - Throws: ``KafkaError`` if it could not be delivered.
    public func send(_ record: KafkaProducerRecord) async throws(KafkaError) -> KafkaDeliveryReport {
        try await enqueue([record]).wait()[0].get()
    }

    /// Produces records and waits for all their deliveries.
    public func send(
        _ records: [KafkaProducerRecord]
    ) async throws(KafkaError) -> [Result<KafkaDeliveryReport, KafkaError>] {
        try await enqueue(records).wait()
    }

    /// How many messages wait in librdkafka's queues, not yet acknowledged.
    public var queuedMessageCount: Int { max(undelivered.load(ordering: .relaxed), 0) }

    private func enqueueChunk(_ records: ArraySlice<KafkaProducerRecord>) async throws(KafkaError) -> DeliveryTicket {
        let ticket = DeliveryTicket(count: records.count)
        let id: UInt = try state.withLock { state throws(KafkaError) in
            if let failure = state.failure { throw failure }
            if state.shutdownRequested || state.closed { throw KafkaError.closed("producer") }
            let id = state.nextTicketID
            state.nextTicketID += 1
            if !records.isEmpty { state.tickets[id] = ticket }
            return id
        }
        if !records.isEmpty { client.lend(records, ticket: id) }
        var topicName = ""
        var topic: RDKafkaProducerClient.Topic?
        for (index, record) in zip(0..., records) {
            let opaque = id << Self.indexBits | UInt(index)
            // Records come in runs of one topic: resolve its handle once per run.
            if topic == nil || record.topic != topicName {
                topicName = record.topic
                topic = client.topic(named: topicName)
            }
            while true {
                let observed = deliveryGeneration.load(ordering: .acquiring)
                // Counted before the hand-over: its report may be served before `produce` returns.
                undelivered.add(1, ordering: .relaxed)
                switch client.produce(record, to: topic!, opaque: opaque) {
                case .enqueued:
                    break
                case .failed(let error):
                    undelivered.subtract(1, ordering: .relaxed)
                    complete(ticket: ticket, id: id, index: index, with: error)
                case .queueFull:
                    undelivered.subtract(1, ordering: .relaxed)
                    if await waitForSpace(after: observed) { continue }
                    // Closed while waiting: fail what was not queued; what was queued still completes.
                    for remaining in index..<records.count {
                        complete(ticket: ticket, id: id, index: remaining, with: .closed("producer"))
                    }
                    return ticket
                }
                break
            }
        }
        return ticket
    }

    private func complete(ticket: DeliveryTicket, id: UInt, index: Int, with error: KafkaError) {
        let finished = state.withLock { state in
            guard ticket.fail(index, error) else { return false }
            state.tickets[id] = nil
            ticket.resumeWaiters()
            return true
        }
        if finished { client.giveBack(CollectionOfOne(id)) }
    }

    /// Waits until deliveries free space. Returns false if the producer closed instead.
    private func waitForSpace(after observed: UInt64) async -> Bool {
        await withCheckedContinuation { continuation in
            let resumeNow: Bool? = state.withLock { state in
                if state.closed || state.failure != nil { return false }
                if deliveryGeneration.load(ordering: .acquiring) != observed { return true }
                state.spaceWaiters.append(continuation)
                return nil
            }
            if let resumeNow { continuation.resume(returning: resumeNow) }
        }
    }

    /// Serves delivery reports until graceful shutdown (or task cancellation, or
    /// ``triggerShutdown()``), then flushes and closes.
    public func run() async throws {
        let first = state.withLock { state in
            defer { state.started = true }
            return !state.started
        }
        guard first else { throw KafkaError(code: .closed, message: "KafkaProducer.run() may be called once") }
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await withCheckedContinuation { continuation in
                    stopped.withLock { $0 = continuation }
                    DedicatedThread.start(name: "herald.producer") { [self] in
                        pollLoop()
                        stopped.withLock { slot in
                            defer { slot = nil }
                            return slot
                        }?.resume()
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

    /// Asks the producer to flush and close as on graceful shutdown.
    public func triggerShutdown() {
        state.withLock { $0.shutdownRequested = true }
        client.wake()
    }

    private func pollLoop() {
        while !state.withLock({ $0.shutdownRequested }) {
            apply(client.poll(timeout: .milliseconds(100)))
        }
        apply(client.flush(timeout: configuration.flushTimeout))
        if client.queuedCount > 0 {
            logger.info(
                "kafka producer flush timed out; purging undelivered messages",
                metadata: ["kafka.queued": "\(queuedMessageCount)"]
            )
            client.purge()
            apply(client.flush(timeout: .seconds(5)))
        }
        let (tickets, waiters) = state.withLock { state in
            state.closed = true
            defer {
                state.tickets.removeAll()
                state.spaceWaiters.removeAll()
            }
            return (state.tickets.values.map { $0 }, state.spaceWaiters)
        }
        for waiter in waiters { waiter.resume(returning: false) }
        state.withLock { _ in
            for ticket in tickets {
                ticket.failRemaining(.closed("producer"))
                ticket.resumeWaiters()
            }
        }
        logger.debug("kafka producer closed")
    }

    private func apply(_ batch: RDKafkaProducerClient.Reports) {
        guard !batch.isEmpty else { return }
        undelivered.subtract(batch.reports.count, ordering: .relaxed)
        deliveryGeneration.add(1, ordering: .releasing)
        var finishedTickets: [UInt] = []
        let waiters = state.withLock { state in
            var currentID: UInt = 0
            var current: DeliveryTicket?
            var nextFailure = 0
            for report in batch.reports {
                let id = report.opaque >> Self.indexBits
                let index = Int(report.opaque & (1 << Self.indexBits - 1))
                var failure: KafkaError?
                if report.failed {
                    failure = batch.failures[nextFailure]
                    nextFailure += 1
                }
                if id != currentID {
                    currentID = id
                    current = state.tickets[id]
                }
                guard let ticket = current else { continue }
                let finished =
                    if let failure {
                        ticket.fail(index, failure)
                    } else {
                        ticket.succeed(
                            index,
                            partition: report.partition,
                            offset: report.offset >= 0 ? report.offset : nil
                        )
                    }
                if finished {
                    finishedTickets.append(id)
                    state.tickets[id] = nil
                    // Resuming a continuation only schedules the waiting task; it is safe under the lock.
                    ticket.resumeWaiters()
                }
            }
            defer { state.spaceWaiters.removeAll() }
            return state.spaceWaiters
        }
        for waiter in waiters { waiter.resume(returning: true) }
        if !finishedTickets.isEmpty { client.giveBack(finishedTickets) }
    }
}
