import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldStore
import HeraldWorker
import Logging
import ServiceLifecycle
import Synchronization

/// `herald run --role sender`: consumes `herald.outbound` and the retry topics and makes the
/// provider calls. Each message is skipped if the delivery ledger has it, dropped if expired, sent
/// otherwise; its answer decides what follows (see ``Classification``): a ledger entry, a retry
/// record, a `device.token.invalidated` directory event, or a dead letter. Offsets are marked done
/// only once all of that is durable.
public final class Sender: Service, Sendable {
    /// The warning logged, once per batch, provider and cause, for calls that got no answer (the
    /// metadata: `provider`, `cause`, `calls`).
    public static let unansweredCallsMessage = "provider calls got no answer; retrying them"

    /// Calls by provider and outcome class, counted in a batch.
    private struct CallOutcome: Hashable {
        var provider: PushProvider
        var `class`: DeliveryOutcome.Class
    }

    /// Calls that got no answer, counted by provider and cause for ``unansweredCallsMessage``.
    private struct TransportFailure: Hashable {
        var provider: String
        var cause: String
    }

    public struct Topics: Sendable {
        public var outbound = "herald.outbound"
        public var deadLetter = "herald.outbound.dlq"
        public var directory = "herald.directory"
        /// Where `expired` decisions go, if anywhere.
        public var decisions: String?
        /// Where each provider answer goes, if anywhere: one analytics record each (docs/outbound.md).
        public var deliveries: String?
        /// How the records on `decisions` and `deliveries` name their recipient, as the worker's do.
        public var analyticsRecipients = AnalyticsRecipients.hashed(UserHash(key: nil))

        public init() {}
    }

    public struct Configuration: Sendable {
        public var consumer: KafkaConsumerConfiguration
        public var producer: KafkaProducerConfiguration
        public var topics = Topics()
        public var retry = RetryPolicy()
        public var circuitBreaker = CircuitBreaker.Configuration()
        /// How long after a ticket Expo's receipt is read (Expo suggests 15 minutes).
        public var receiptDelay = Duration.seconds(15 * 60)
        /// How often due receipts are looked for.
        public var receiptInterval = Duration.seconds(10)
        /// Poll batches whose calls may be in flight at once.
        public var batchesInFlight = 4
        public var storeRetryDelay = Duration.seconds(1)
        /// How long the delivery ledger remembers, and how often older deliveries are deleted.
        public var purge = PurgeSchedule()

        /// `consumer`'s topics are replaced by the outbound topic and the retry topics.
        public init(consumer: KafkaConsumerConfiguration, producer: KafkaProducerConfiguration) {
            self.consumer = consumer
            self.producer = producer
        }
    }

    let configuration: Configuration
    let providers: ProviderClients
    let ledger: any DeliveryLedger
    let clock: any HeraldClock
    let consumer: KafkaConsumer
    let producer: KafkaProducer
    let breakers: [PushProvider: CircuitBreaker]
    /// Messages of retry topics read and held until their time.
    private let heldRetries = Atomic<Int>(0)
    /// ``longestHold(_:)`` of the configuration's retry policy, worked out once: it bounds every
    /// retry's wait.
    let longestHold: Duration
    let logger: Logger
    /// Configuration errors come with every call until the credentials are fixed: a few are logged
    /// per code and interval, the rest counted (``LogSampler``).
    let logSampler = LogSampler()
    public let statistics: SenderStatistics
    /// Notifications a group in hand has claimed, from before it reads the ledger until its outcome
    /// is durable. Groups overlap (`batchesInFlight`), and a redelivered event's copy can come while
    /// the first copy's call is still out: the ledger knows neither yet, so without this both would
    /// be sent.
    private let sending = Mutex<Set<String>>([])

    public init(
        configuration: Configuration,
        providers: ProviderClients,
        ledger: any DeliveryLedger,
        clock: any HeraldClock,
        statistics: SenderStatistics = SenderStatistics(),
        logger: Logger
    ) throws(KafkaError) {
        var configuration = configuration
        configuration.consumer.topics = [configuration.topics.outbound] + configuration.retry.topics
        self.configuration = configuration
        longestHold = Self.longestHold(configuration.retry)
        self.providers = providers
        self.ledger = ledger
        self.clock = clock
        self.statistics = statistics
        self.logger = logger
        breakers = Dictionary(
            uniqueKeysWithValues: [PushProvider.apns, .fcm, .expo].map {
                ($0, CircuitBreaker(configuration: configuration.circuitBreaker))
            }
        )
        consumer = try KafkaConsumer(
            configuration: configuration.consumer,
            logger: logger,
            onOffsetReset: KafkaConsumer.warnOfOffsetReset(to: logger)
        )
        producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
    }

    /// Messages of the retry topics read and held until their time (up to the longest retry delay).
    public var waitingRetries: Int { heldRetries.load(ordering: .relaxed) }

    /// Partitions of the outbound and retry topics this sender holds.
    public var assignedPartitions: Int { consumer.assignment.count }

    /// The consumer's broker connections, from its latest librdkafka statistics (`nil` without
    /// `statistics.interval.ms`, or before the first).
    public var brokerConnections: KafkaBrokerConnections? { consumer.brokerConnections }

    /// Offset resets per partition (``KafkaConsumer/offsetResets()``).
    public func offsetResets() -> [TopicPartition: Int] { consumer.offsetResets() }

    /// Messages behind the end of each assigned partition.
    public func lag() -> [TopicPartition: Int64] { consumer.lag() }

    /// Where each assigned partition of the outbound and retry topics stands in the consumer.
    public func partitionStates() -> [TopicPartition: KafkaConsumer.PartitionState] { consumer.partitionStates() }

    /// The offsets the sender's group has committed for `partitions`, asked of the broker.
    public func committedOffsets(for partitions: [TopicPartition]) async throws(KafkaError) -> [TopicPartition: Int64] {
        try await consumer.committedOffsets(for: partitions)
    }

    /// Records (retries, dead letters, analytics) handed to the producer and not yet acknowledged.
    public var unacknowledgedRecords: Int { producer.queuedMessageCount }

    /// Notifications whose provider call is being made now.
    public var callsInHand: Int { sending.withLock { $0.count } }

    /// Each provider's circuit.
    public func circuitState(of provider: PushProvider) -> CircuitBreaker.State { breakers[provider]!.current }

    public func run() async throws {
        let producer = producer
        // As in the worker: the producer outlives the consumer's last batch.
        let producing = Task.detached { try await producer.run() }
        defer { producer.triggerShutdown() }
        try await withTaskCancellationHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await self.consumer.run() }
                group.addTask { await self.receiptLoop() }
                group.addTask {
                    let (ledger, statistics) = (self.ledger, self.statistics)
                    await self.configuration.purge.run(
                        what: "delivery ledger",
                        clock: self.clock,
                        logger: self.logger,
                        purge: { try await ledger.purgeDeliveries(before: $0) },
                        purged: { count in statistics.update { $0.purgedDeliveries += count } }
                    )
                }
                do {
                    try await consume()
                } catch is CancellationError where Task.isCancelled {
                    // A hard stop (the store unreachable, say): the groups in hand were given up, not
                    // marked done, and are redelivered; the consumer still commits finished work.
                }
                group.cancelAll()
                try await group.waitForAll()
            }
        } onCancel: {
            consumer.triggerShutdown()
        }
        producer.triggerShutdown()
        try await producing.value
        logger.info("sender stopped")
    }

    private func consume() async throws {
        let inFlight = ConcurrencyLimiter(limit: configuration.batchesInFlight)
        try await withThrowingDiscardingTaskGroup { group in
            for await batch in consumer.messages {
                let (ready, waiting) = split(batch)
                for (partition, messages) in waiting {
                    // Not due yet: this partition stops fetching until its messages have been tried,
                    // in the assignment it is held in. Revoked (or closing) since they were handed
                    // out, they are given back instead: the next owner sends them.
                    guard let epoch = consumer.pause(partition, orRelease: messages) else { continue }
                    group.addTask {
                        if try await self.handleWhenDue(messages, of: partition, epoch: epoch) {
                            self.consumer.resume(partition, holding: epoch)
                        }
                    }
                }
                guard !ready.isEmpty else { continue }
                await inFlight.acquire()
                group.addTask {
                    defer { inFlight.release() }
                    try await self.handle(ready)
                }
            }
        }
    }

    /// The messages that may be tried now, and per partition of a retry topic, those that must
    /// wait (the first not yet due and everything after it, to keep the partition's order).
    func split(_ batch: [KafkaMessage]) -> (ready: [KafkaMessage], waiting: [(TopicPartition, [KafkaMessage])]) {
        let now = clock.now()
        var ready: [KafkaMessage] = []
        var waiting: [TopicPartition: [KafkaMessage]] = [:]
        for message in batch {
            let partition = message.topicPartition
            if waiting[partition] != nil {
                waiting[partition]!.append(message)
            } else if let time = notBefore(message), time > now {
                waiting[partition] = [message]
            } else {
                ready.append(message)
            }
        }
        return (ready, waiting.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }

    /// When a retry may be tried: its `herald.not.before`, but no later than ``longestHold`` after
    /// it was written to its retry topic. A retry waits by holding its partition, and everything
    /// behind it waits too: a not-before years ahead (a garbled header, a sender's clock far off)
    /// stalled the partition until then.
    func notBefore(_ message: KafkaMessage) -> Timestamp? {
        Self.notBefore(message, holdingAtMost: longestHold)
    }

    static func notBefore(_ message: KafkaMessage, holdingAtMost hold: Duration) -> Timestamp? {
        guard let asked = message.header(HeraldHeader.notBefore).flatMap({ Timestamp(rfc3339: $0.string) }) else {
            return nil
        }
        guard let written = message.timestampMilliseconds else { return asked }
        let (latest, overflow) = written.addingReportingOverflow(hold.milliseconds)
        return overflow ? asked : min(asked, Timestamp(epochMilliseconds: latest))
    }

    /// The longest a retry can have been asked to wait: the last step's delay with its jitter, or
    /// the longest `Retry-After` honoured, and an hour more for clocks that disagree.
    static func longestHold(_ retry: RetryPolicy) -> Duration {
        let delay = (retry.delays.max() ?? .zero) * (1 + max(retry.jitter, 0))
        return max(delay, .seconds(ProviderAnswer.maximumRetryAfterSeconds)) + .seconds(3600)
    }

    /// Waits for each message's time, in order, and handles the ones that are due together. While
    /// it waits (up to the longest retry delay, an hour by default) the partition may be revoked or
    /// the sender closed: then it gives the rest back undone, for the partition's next owner to
    /// send. Kept, they held up a revoke until its timeout (and a shutdown until their time), and
    /// after the revoke both the old and the new owner would have called the provider with them.
    ///
    /// - Returns: whether it handled them all (false: given back, the partition no longer this
    ///   sender's).
    private func handleWhenDue(
        _ messages: [KafkaMessage],
        of partition: TopicPartition,
        epoch: Int
    ) async throws -> Bool {
        var rest = messages[...]
        // Counted down as chunks are handled; what is left when this returns or throws, at the end.
        heldRetries.add(rest.count, ordering: .relaxed)
        defer { heldRetries.subtract(rest.count, ordering: .relaxed) }
        while let first = rest.first {
            if let time = notBefore(first) {
                let wait = time.epochMilliseconds - clock.now().epochMilliseconds
                // Slept in slices, looking at the partition between them: a revoke does not wake a
                // sleeping task. (Measured on the monotonic clock: a test's clock may stand still.)
                let due = ContinuousClock.now + .milliseconds(max(wait, 0))
                while consumer.assignmentEpoch(of: partition) == epoch, ContinuousClock.now < due {
                    try await Task.sleep(for: min(due - ContinuousClock.now, Self.holdCheckInterval))
                }
            }
            guard consumer.assignmentEpoch(of: partition) == epoch else {
                consumer.release(rest, holding: epoch)
                return false
            }
            let now = clock.now()
            let due = rest.prefix { (notBefore($0) ?? now) <= now }
            // The first is due by now (or the clock stands still, as in tests): take at least it.
            let chunk = due.isEmpty ? rest.prefix(1) : due
            try await handle(Array(chunk))
            rest = rest.dropFirst(chunk.count)
            heldRetries.subtract(chunk.count, ordering: .relaxed)
        }
        return true
    }

    /// How often a task waiting for a retry's time looks whether its partition is still held.
    static let holdCheckInterval: Duration = .milliseconds(200)

    /// One group of messages, start to finish: ledger check, calls, follow-up records, ledger
    /// writes, acknowledgements, then the offsets.
    func handle(_ messages: [KafkaMessage]) async throws {
        let now = clock.now()
        var records: [KafkaProducerRecord] = []
        var decoded: [(message: KafkaMessage, outbound: OutboundMessage)] = []
        for message in messages {
            // A retry copies the record's key and headers: ones too large for a retry topic would
            // stop the partition when the retry could not be produced.
            if (message.key?.count ?? 0) > DeadLetter.maximumKeyBytes
                || DeadLetter.size(of: message.headers) > DeadLetter.maximumHeaderBytes
            {
                let why =
                    "the record's key is over \(DeadLetter.maximumKeyBytes) bytes or its headers over \(DeadLetter.maximumHeaderBytes)"
                records.append(deadLetter(message, attempt: 0, .init("outbound.invalid_message", why), now: now))
                continue
            }
            do {
                decoded.append((message, try OutboundMessage(decoding: message.value ?? KafkaBytes([]))))
            } catch {
                records.append(deadLetter(message, attempt: 0, .init("outbound.invalid_message", "\(error)"), now: now))
            }
        }
        // Each notification is claimed before the ledger is read, and held until this group's outcome
        // is durable. Read first, a copy in another group could find the ledger empty while the first
        // copy's call was out, and claim it once that group had recorded it and let go: sent twice
        // (`bench scale` on CI saw 19). A copy another group holds, or a second copy in this group (a
        // redelivered event can put the same notification twice into one group; the worker gives it
        // the same id both times), rides on that call. Skipping it loses nothing: the holder marks
        // its own message done only once the outcome is durable (a ledger entry, a retry record, a
        // dead letter); until then its message is redelivered if the sender stops.
        let claimed = sending.withLock { sending in
            decoded.filter { sending.insert($0.outbound.notificationID).inserted }
        }
        defer {
            sending.withLock { sending in for entry in claimed { sending.remove(entry.outbound.notificationID) } }
        }
        var skipped = decoded.count - claimed.count
        let delivered =
            claimed.isEmpty
            ? []
            : try await withStoreRetry { () throws(StoreError) in
                try await self.delivered(among: claimed.map(\.outbound.notificationID))
            }
        var byProvider: [PushProvider: [(message: KafkaMessage, outbound: OutboundMessage)]] = [:]
        var expired = 0
        var deferred = 0
        for entry in claimed {
            let outbound = entry.outbound
            if !delivered.isEmpty && delivered.contains(outbound.notificationID) {
                skipped += 1
            } else if let expiresAt = outbound.expiresAt, expiresAt <= now {
                expired += 1
                if let topic = configuration.topics.decisions {
                    records.append(expiredRecord(outbound, topic: topic, at: now))
                }
            } else if let until = breakers[outbound.provider]!.permit(at: now) {
                deferred += 1
                records.append(
                    retryRecord(
                        entry.message,
                        outbound,
                        topic: entry.message.topic == configuration.topics.outbound
                            ? configuration.retry.topics.first ?? configuration.topics.outbound : entry.message.topic,
                        notBefore: until,
                        reason: .init("sender.circuit_open", "the \(outbound.provider.rawValue) circuit is open"),
                        countsAsAttempt: false,
                        now: now
                    )
                )
            } else {
                byProvider[outbound.provider, default: []].append(entry)
            }
        }

        struct Sent: Sendable {
            var message: KafkaMessage
            var outbound: OutboundMessage
            var call: ProviderClients.Call
        }
        let sent = await withTaskGroup(of: [Sent].self) { group in
            for (provider, entries) in byProvider {
                group.addTask {
                    let calls = await self.providers.send(entries.map(\.outbound), provider: provider)
                    return zip(entries, calls).map { Sent(message: $0.0.message, outbound: $0.0.outbound, call: $0.1) }
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }

        var deliveries: [DeliveryRecord] = []
        var receipts: [PendingReceipt] = []
        var counters = SenderStatistics.Counters()
        counters.skippedAlreadyDelivered = skipped
        counters.expired = expired
        counters.circuitDeferred = deferred
        let answeredAt = clock.now()
        recordCircuits(sent.map { ($0.outbound.provider, $0.call.outcome) }, at: answeredAt)
        // Calls that got no answer, by provider and cause: logged once per batch, not per call.
        var transportFailures: [TransportFailure: Int] = [:]
        // Counted by enum values and named once per batch: a name made for every call was one
        // string built and hashed per call.
        var callsByOutcome: [CallOutcome: Int] = [:]
        var latencies: [PushProvider: LatencyHistogram] = [:]
        for entry in sent {
            let (message, outbound, outcome, seconds) = (
                entry.message, entry.outbound, entry.call.outcome, entry.call.seconds
            )
            let provider = outbound.provider.rawValue
            callsByOutcome[CallOutcome(provider: outbound.provider, class: outcome.class), default: 0] += 1
            latencies[outbound.provider, default: LatencyHistogram()].observe(seconds)
            if let reason = outcome.reason { counters.answersByReason[reason.code, default: 0] += 1 }
            func report(_ reported: DeliveryReport.Outcome, _ reason: DeliveryOutcome.Reason? = nil) {
                guard let topic = configuration.topics.deliveries else { return }
                records.append(
                    DeliveryReport.record(
                        outbound,
                        reported,
                        reason: reason,
                        latency: seconds,
                        answeredAt: answeredAt,
                        topic: topic,
                        recipients: configuration.topics.analyticsRecipients
                    )
                )
            }
            switch outcome {
            case .delivered(let receipt):
                report(.delivered)
                deliveries.append(
                    DeliveryRecord(notificationID: outbound.notificationID, provider: provider, deliveredAt: answeredAt)
                )
                if let receipt, outbound.provider == .expo {
                    receipts.append(
                        PendingReceipt(
                            ticketID: receipt,
                            notificationID: outbound.notificationID,
                            recipient: outbound.recipient,
                            token: outbound.token,
                            checkAfter: Timestamp(
                                epochMilliseconds: answeredAt.epochMilliseconds
                                    + configuration.receiptDelay.milliseconds
                            )
                        )
                    )
                }
            case .retry(let reason, let after):
                if reason.code.hasPrefix("transport.") {
                    transportFailures[TransportFailure(provider: provider, cause: reason.message), default: 0] += 1
                }
                let step = configuration.retry.step(of: message.topic)
                if let next = configuration.retry.next(
                    after: step,
                    now: answeredAt,
                    retryAfter: after,
                    random: Double.random(in: 0..<1)
                ) {
                    counters.retriesByStep[String(step + 1), default: 0] += 1
                    report(.retrying, reason)
                    records.append(
                        retryRecord(
                            message,
                            outbound,
                            topic: next.topic,
                            notBefore: next.notBefore,
                            reason: reason,
                            countsAsAttempt: true,
                            now: answeredAt
                        )
                    )
                } else {
                    counters.deadLettersByCode[reason.code, default: 0] += 1
                    let exhausted = DeliveryOutcome.Reason(reason.code, "\(reason.message); retries used up")
                    report(.failed, reason)
                    records.append(deadLetter(message, attempt: outbound.attempt, exhausted, now: answeredAt))
                }
            case .invalidToken(let reason, let at):
                counters.tokensInvalidated += 1
                report(.invalidToken, reason)
                records.append(
                    TokenInvalidation.record(
                        topic: configuration.topics.directory,
                        recipient: outbound.recipient,
                        provider: outbound.provider,
                        token: outbound.token,
                        at: at ?? answeredAt,
                        eventID: "herald-invalidated-\(outbound.notificationID)"
                    )
                )
            case .configuration(let reason):
                counters.configurationErrors[reason.code, default: 0] += 1
                counters.deadLettersByCode[reason.code, default: 0] += 1
                logSampler.log(
                    logger,
                    .error,
                    kind: reason.code,
                    "provider configuration error",
                    metadata: ["code": "\(reason.code)", "message": "\(reason.message)"]
                )
                report(.failed, reason)
                records.append(deadLetter(message, attempt: outbound.attempt, reason, now: answeredAt))
            case .permanent(let reason):
                counters.deadLettersByCode[reason.code, default: 0] += 1
                report(.failed, reason)
                records.append(deadLetter(message, attempt: outbound.attempt, reason, now: answeredAt))
            }
        }
        for (key, calls) in callsByOutcome {
            counters.callsByOutcome["\(key.provider.rawValue) \(key.class.rawValue)", default: 0] += calls
        }
        for (provider, histogram) in latencies { counters.latencies[provider.rawValue] = histogram }
        // A call with no answer may still have arrived: these are the retries that can deliver
        // twice, so an operator needs their cause.
        for (failure, calls) in transportFailures {
            logger.warning(
                "\(Self.unansweredCallsMessage)",
                metadata: ["provider": "\(failure.provider)", "cause": "\(failure.cause)", "calls": "\(calls)"]
            )
        }

        try await withStoreRetry { () throws(StoreError) in try await self.record(deliveries, receipts) }
        if let failure = try await producer.enqueue(records).failures().first {
            // Not marked done: the messages come back to whoever takes the partitions, and the
            // ledger keeps them from being sent twice.
            consumer.triggerShutdown()
            throw failure.error
        }
        consumer.markDone(messages)
        statistics.update { $0.add(counters) }
    }

    /// Feeds each provider's circuit with the batch's answers. Expo messages share requests, so a
    /// failed Expo request counts once, not once per message in it.
    private func recordCircuits(_ outcomes: [(PushProvider, DeliveryOutcome)], at now: Timestamp) {
        var tally: [PushProvider: (successes: Int, failures: Int)] = [:]
        for (provider, outcome) in outcomes {
            if CircuitBreaker.isProviderFailure(outcome) {
                tally[provider, default: (0, 0)].failures += 1
            } else {
                tally[provider, default: (0, 0)].successes += 1
            }
        }
        for (provider, counts) in tally {
            let failures =
                provider == .expo
                ? (counts.failures + ExpoClient.messagesPerRequest - 1) / ExpoClient.messagesPerRequest
                : counts.failures
            breakers[provider]!.record(successes: counts.successes, failures: failures, at: now)
        }
    }

    /// The ids among `ids` the ledger has. Where the store refuses the look-up for what an id holds
    /// (`store.rejected`), the ids are looked up apart: one refused alone cannot have been recorded,
    /// so it is taken as not delivered. Retried whole, the group would be refused for ever.
    private func delivered(among ids: [String]) async throws(StoreError) -> Set<String> {
        var found = Set<String>()
        let refused = try await StoreError.isolatingRefusals(ids.count) { (part: Range<Int>) throws(StoreError) in
            found.formUnion(try await ledger.delivered(among: Array(ids[part])))
        }
        ledgerRefused(refused.map(\.error), "looked up")
        return found
    }

    /// Records the group's deliveries and Expo tickets. An entry the store refuses even alone is
    /// skipped (logged and counted): the call was made, and the worst that follows is a second call
    /// if its message comes again, where waiting for the store would hold the partition for ever.
    private func record(_ deliveries: [DeliveryRecord], _ receipts: [PendingReceipt]) async throws(StoreError) {
        let refusedDeliveries = try await StoreError.isolatingRefusals(deliveries.count) {
            (part: Range<Int>) throws(StoreError) in try await ledger.recordDeliveries(Array(deliveries[part]))
        }
        ledgerRefused(refusedDeliveries.map(\.error), "recorded")
        let refusedReceipts = try await StoreError.isolatingRefusals(receipts.count) {
            (part: Range<Int>) throws(StoreError) in try await ledger.addPendingReceipts(Array(receipts[part]))
        }
        ledgerRefused(refusedReceipts.map(\.error), "kept for its receipt")
    }

    private func ledgerRefused(_ errors: [StoreError], _ what: String) {
        guard let first = errors.first else { return }
        statistics.update { $0.ledgerRefusals += errors.count }
        // The store's message names the table and the operation, never the id or the token.
        logger.error(
            "the delivery ledger refused a notification; it is skipped and may be sent again if its message comes again",
            metadata: ["refused": "\(errors.count)", "as": "\(what)", "error": "\(first)"]
        )
    }

    private func withStoreRetry<R>(_ body: () async throws(StoreError) -> R) async throws -> R {
        while true {
            do {
                return try await body()
            } catch {
                // Cancelled, the store call was interrupted rather than failed: give the group up.
                if Task.isCancelled { throw CancellationError() }
                logger.error("store failed; retrying", metadata: ["error": "\(error)"])
                try await Task.sleep(for: configuration.storeRetryDelay)
            }
        }
    }

    /// `message` again, on `topic`, with its attempt counted and why it failed.
    func retryRecord(
        _ message: KafkaMessage,
        _ outbound: OutboundMessage,
        topic: String,
        notBefore: Timestamp,
        reason: DeliveryOutcome.Reason,
        countsAsAttempt: Bool,
        now: Timestamp
    ) -> KafkaProducerRecord {
        var next = outbound
        if countsAsAttempt { next.attempt += 1 }
        var headers = failureHeaders(message, attempts: next.attempt, reason: reason, now: now)
        headers.append(KafkaHeader(HeraldHeader.notBefore, string: notBefore.description))
        return KafkaProducerRecord(topic: topic, key: message.key, value: KafkaBytes(next.encoded()), headers: headers)
    }

    func deadLetter(
        _ message: KafkaMessage,
        attempt: Int,
        _ reason: DeliveryOutcome.Reason,
        now: Timestamp
    ) -> KafkaProducerRecord {
        // A record too large for the dead-letter topic would hold its partition for ever.
        let (key, value, _, markers) = DeadLetter.original(
            key: message.key,
            value: message.value,
            headers: message.headers
        )
        var headers = failureHeaders(message, attempts: max(attempt, 1), reason: reason, now: now)
        if markers.contains(where: { $0.name == HeraldHeader.headersDropped }) {
            headers.removeAll { !$0.name.hasPrefix("herald.") }
        }
        return KafkaProducerRecord(
            topic: configuration.topics.deadLetter,
            key: key,
            value: value,
            headers: headers + markers
        )
    }

    /// The original headers, then Herald's: the original location is the first topic the message
    /// was read from (kept across retry topics), so a re-drive goes back to `herald.outbound`.
    func failureHeaders(
        _ message: KafkaMessage,
        attempts: Int,
        reason: DeliveryOutcome.Reason,
        now: Timestamp
    ) -> [KafkaHeader] {
        var headers = message.headers.filter { !$0.name.hasPrefix("herald.") }
        func kept(_ name: String, _ value: @autoclosure () -> String?) {
            if let existing = message.header(name) {
                headers.append(KafkaHeader(name, existing))
            } else if let value = value() {
                headers.append(KafkaHeader(name, string: value))
            }
        }
        headers.append(KafkaHeader(HeraldHeader.errorCode, string: reason.code))
        headers.append(KafkaHeader(HeraldHeader.errorMessage, string: reason.message))
        kept(HeraldHeader.originalTopic, message.topic)
        kept(HeraldHeader.originalPartition, String(message.partition))
        kept(HeraldHeader.originalOffset, String(message.offset))
        kept(
            HeraldHeader.originalTimestamp,
            message.timestampMilliseconds.map { Timestamp(epochMilliseconds: $0).description }
        )
        headers.append(KafkaHeader(HeraldHeader.attempts, string: String(attempts)))
        kept(HeraldHeader.firstFailure, now.description)
        headers.append(KafkaHeader(HeraldHeader.lastFailure, string: now.description))
        headers.append(KafkaHeader(HeraldHeader.version, string: DeadLetter.heraldVersion))
        return headers
    }

    func expiredRecord(_ outbound: OutboundMessage, topic: String, at: Timestamp) -> KafkaProducerRecord {
        var writer = JSONStreamWriter(capacity: 256)
        writer.beginObject()
        writer.member("notificationId", outbound.notificationID)
        writer.member("eventId", outbound.eventID)
        writer.member("kind", outbound.kind)
        let recipient = configuration.topics.analyticsRecipients.name(outbound.recipient)
        writer.member("recipient", recipient)
        writer.member("reason", DecisionReason.expired.rawValue)
        writer.member("decidedAt", timestamp: at)
        writer.endObject()
        return KafkaProducerRecord(topic: topic, key: KafkaBytes(recipient), value: KafkaBytes(writer.bytes))
    }

    /// Reads Expo receipts that are due: a `DeviceNotRegistered` receipt invalidates the token.
    private func receiptLoop() async {
        guard let expo = providers.expo else { return }
        while !Task.isCancelled {
            do {
                let claimed = try await ledger.claimPendingReceipts(now: clock.now(), limit: 1000, lease: .seconds(120))
                if !claimed.isEmpty {
                    switch await expo.receipts(claimed.map(\.ticketID)) {
                    case .failure(let outcome):
                        logger.warning(
                            "Expo receipts could not be read",
                            metadata: ["reason": "\(outcome.reason?.code ?? "")"]
                        )
                    case .success(let receipts):
                        var records: [KafkaProducerRecord] = []
                        var read: [String] = []
                        var counters = SenderStatistics.Counters()
                        let now = clock.now()
                        for pending in claimed {
                            guard let outcome = receipts[pending.ticketID] else {
                                // Expo keeps receipts a day; after that there is nothing left to learn.
                                if now.epochMilliseconds - pending.checkAfter.epochMilliseconds > 86_400_000 {
                                    read.append(pending.ticketID)
                                }
                                continue
                            }
                            read.append(pending.ticketID)
                            counters.receiptsChecked += 1
                            if let reason = outcome.reason { counters.answersByReason[reason.code, default: 0] += 1 }
                            // An `ok` receipt adds nothing to the ticket's `delivered`; a failure does.
                            if let topic = configuration.topics.deliveries, let reason = outcome.reason {
                                let reported: DeliveryReport.Outcome
                                if case .invalidToken = outcome { reported = .invalidToken } else { reported = .failed }
                                records.append(
                                    DeliveryReport.record(
                                        receiptOf: pending,
                                        reported,
                                        reason: reason,
                                        answeredAt: now,
                                        topic: topic,
                                        recipients: configuration.topics.analyticsRecipients
                                    )
                                )
                            }
                            if case .invalidToken = outcome {
                                counters.tokensInvalidated += 1
                                records.append(
                                    TokenInvalidation.record(
                                        topic: configuration.topics.directory,
                                        recipient: pending.recipient,
                                        provider: .expo,
                                        token: pending.token,
                                        at: now,
                                        eventID: "herald-invalidated-\(pending.notificationID)"
                                    )
                                )
                            }
                        }
                        if try await producer.enqueue(records).failures().isEmpty {
                            try await ledger.removePendingReceipts(read)
                            statistics.update { $0.add(counters) }
                        }
                        if claimed.count == 1000 { continue }
                    }
                }
            } catch let error as KafkaError where error.code == .closed {
                return
            } catch {
                // Stopping: the store call was interrupted, not failed.
                if Task.isCancelled { return }
                logger.error("reading Expo receipts failed; trying again", metadata: ["error": "\(error)"])
            }
            do { try await Task.sleep(for: configuration.receiptInterval) } catch { return }
        }
    }

    package func simulateCrash() {
        consumer.simulateCrash()
        producer.triggerShutdown()
    }
}

extension SenderStatistics.Counters {
    mutating func add(_ other: Self) {
        callsByOutcome.merge(other.callsByOutcome, uniquingKeysWith: +)
        // Reasons and codes name what a provider answered: bounded as the providers' lists are,
        // unless one answers something new with every call.
        MetricLabels.add(other.answersByReason, into: &answersByReason)
        retriesByStep.merge(other.retriesByStep, uniquingKeysWith: +)
        MetricLabels.add(other.deadLettersByCode, into: &deadLettersByCode)
        MetricLabels.add(other.configurationErrors, into: &configurationErrors)
        tokensInvalidated += other.tokensInvalidated
        skippedAlreadyDelivered += other.skippedAlreadyDelivered
        expired += other.expired
        circuitDeferred += other.circuitDeferred
        receiptsChecked += other.receiptsChecked
        ledgerRefusals += other.ledgerRefusals
        for (provider, histogram) in other.latencies {
            latencies[provider, default: LatencyHistogram()].merge(histogram)
        }
    }
}
