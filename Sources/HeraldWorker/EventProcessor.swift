import HeraldCatalog
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldProviders
import HeraldStore
import Logging

/// Where the worker reads and writes, besides the domain topics.
public struct WorkerTopics: Sendable {
    public var directory = "herald.directory"
    public var outbound = "herald.outbound"
    public var eventsDeadLetter = "herald.events.dlq"
    /// One record per decision, for analytics; `nil`: not written.
    public var decisions: String?
    /// How those records name their recipient: hashed, unkeyed, unless configured otherwise.
    public var analyticsRecipients = AnalyticsRecipients.hashed(UserHash(key: nil))

    public init() {}
}

/// What to do with an event whose type no kind in the catalog handles.
public enum UnknownEventTypes: String, Sendable, CaseIterable {
    /// Send it to the events dead-letter topic (`event.unknown_type`).
    case deadLetter = "dead_letter"
    /// Skip it, counted in `herald_events_ignored_total`: for shared topics that carry events Herald
    /// has no notification for.
    case ignore
}

/// The worker's step from consumed messages to the records to produce: decode, route, look up
/// recipients, decide, render, build provider calls. A batch costs one directory write, one
/// recipients lookup and one decide call, whatever its size.
///
/// Processing is deterministic for a given store state and clock: a redelivered message yields the
/// same records, with the same notification ids, because the decision ledger answers with the
/// decisions already made.
public final class EventProcessor: Sendable {
    let catalog: Catalog
    let renderer: Renderer
    let policy: Policy
    let store: any StateStore
    let clock: any HeraldClock
    let topics: WorkerTopics
    let unknownEventTypes: UnknownEventTypes
    let statistics: WorkerStatistics
    let logger: Logger
    /// Dead letters and skipped devices are logged a few per code and interval (see ``LogSampler``).
    let logSampler = LogSampler()
    let decoder = EventDecoder()
    /// Told of each render whose requested locale the catalog lacks: (kind, requested locale — `nil`
    /// when neither device nor profile names one — and the locale used instead).
    let onFallbackLocale: (@Sendable (String, String?, String) -> Void)?
    /// Told of the recipient of each decision labelled `throttled.*`, wherever it is made (a batch,
    /// or due work decided again): replay's report counts them without `herald.decisions` records.
    let onThrottled: (@Sendable (String) -> Void)?
    /// The most devices one notification goes to for one recipient: the most recently registered.
    let maximumDevicesPerRecipient: Int

    /// The default for ``maximumDevicesPerRecipient`` (`worker.max_devices_per_recipient`): far more
    /// than a person uses, while an account whose clients register a new device at every start, or
    /// a shared test account, would otherwise turn each of its notifications into thousands of calls.
    public static let defaultMaximumDevicesPerRecipient = 100

    public init(
        catalog: Catalog,
        policy: Policy,
        store: any StateStore,
        clock: any HeraldClock,
        topics: WorkerTopics,
        unknownEventTypes: UnknownEventTypes,
        statistics: WorkerStatistics,
        logger: Logger,
        onFallbackLocale: (@Sendable (String, String?, String) -> Void)? = nil,
        onThrottled: (@Sendable (String) -> Void)? = nil,
        maximumDevicesPerRecipient: Int = EventProcessor.defaultMaximumDevicesPerRecipient
    ) {
        self.maximumDevicesPerRecipient = max(maximumDevicesPerRecipient, 1)
        self.onFallbackLocale = onFallbackLocale
        self.onThrottled = onThrottled
        self.catalog = catalog
        self.renderer = Renderer(catalog: catalog)
        self.policy = policy
        self.store = store
        self.clock = clock
        self.topics = topics
        self.unknownEventTypes = unknownEventTypes
        self.statistics = statistics
        self.logger = logger
    }

    /// One event ready to be decided.
    struct Routed: Sendable {
        var index: Int
        var event: CloudEvent
        /// When the event occurred (``occurrence(of:in:)``), if the worker can tell.
        var occurredAt: Timestamp?
        var kind: NotificationKind
        var recipients: [String]
        /// The event's fields, checked before deciding and rendered from in each locale.
        var fields: Renderer.CheckedFields
    }

    /// A batch decoded and routed, its directory changes applied and its recipients looked up: what
    /// the store's decide step needs. The worker prepares the next batch while the store decides
    /// this one.
    public struct PreparedBatch: Sendable {
        let messages: [KafkaMessage]
        /// Dead letters for messages that could not be decoded or routed.
        var records: [KafkaProducerRecord]
        var routed: [Routed]
        /// One per (routed event, recipient), in order, as the directory held them when the batch
        /// was prepared (nil: not in it): building finds each by position instead of hashing its id.
        var recipients: [Recipient?]
        /// One per (routed event, recipient), in order.
        var requests: [DecisionRequest]
        var now: Timestamp
    }

    /// A batch the store has decided: what rendering and building need, so that they can run on
    /// another core while the store decides the next batch.
    public struct DecidedBatch: Sendable {
        /// The batch as it was prepared; its requests are decided and dropped.
        var prepared: PreparedBatch
        /// One per (routed event, recipient), in order.
        var decisions: [Decision]
    }

    /// The records for `messages`, in order: directory changes are applied first, then each domain
    /// event gives its outbound records, dead letters and decision records.
    ///
    /// - Throws: ``StoreError`` when the store cannot be reached; nothing was produced and the batch
    ///   can be processed again.
    public func process(_ messages: [KafkaMessage]) async throws(StoreError) -> [KafkaProducerRecord] {
        build(try await decide(messages))
    }

    /// The store's part of processing `messages`: ``prepare(_:decoded:)`` and then
    /// ``decide(_:)``.
    ///
    /// - Parameter decoded: the events of `messages` where the caller has decoded them already
    ///   (replay reads their times first); `nil` entries are decoded here.
    /// - Throws: ``StoreError`` when the store cannot be reached; the batch can be decided again,
    ///   with the same result for what was already decided.
    public func decide(
        _ messages: [KafkaMessage],
        decoded: [CloudEvent?]? = nil
    ) async throws(StoreError) -> DecidedBatch {
        try await decide(try await prepare(messages, decoded: decoded))
    }

    /// Decodes and routes `messages`, applies their directory changes and looks up their
    /// recipients (one store call each for the whole batch), and plans each decision. Nothing is
    /// decided yet: the directory is all this changes.
    ///
    /// - Throws: ``StoreError`` when the store cannot be reached; the batch can be prepared again
    ///   (directory changes apply by their time, so applying them twice changes nothing).
    public func prepare(
        _ messages: [KafkaMessage],
        decoded: [CloudEvent?]? = nil
    ) async throws(StoreError) -> PreparedBatch {
        let started = ContinuousClock.now
        var records: [KafkaProducerRecord] = []
        var counters = WorkerStatistics.Counters()
        let now = clock.now()
        var changes: [DirectoryEvent] = []
        /// The message of each change, by position.
        var changeMessages: [Int] = []
        var routed: [Routed] = []
        var types = EventTypeTable()
        // The batch's events share most of their member names and many values.
        let strings = decoded == nil ? JSONStringTable() : nil
        for (index, message) in messages.enumerated() {
            // A tombstone: how a producer erases a key from the compacted directory topic (a deleted
            // user's devices and profile, after their `user.deleted`). Not a change, and not a poison
            // event: dead-lettering it would copy the erased key into a topic people read for weeks.
            if message.value == nil && message.topic == topics.directory {
                counters.directoryTombstones += 1
                continue
            }
            var event: CloudEvent
            do {
                if let known = decoded?[index] { event = known } else { event = try decode(message, strings: strings) }
            } catch {
                counters.eventsByType["unparsable", default: 0] += 1
                records.append(deadLetter(message, DeadLetterReason(error), now: now, counters: &counters))
                continue
            }
            let candidates = types.count(event.type, in: catalog, counters: &counters)
            if message.topic == topics.directory {
                do {
                    let (change, redated) = try DirectoryEvent(event).applied(at: now)
                    if redated { redatedChange(message, counters: &counters) }
                    changes.append(change)
                    changeMessages.append(index)
                } catch {
                    let reason = DeadLetterReason(code: DirectoryEventError.code, message: error.message)
                    records.append(deadLetter(message, reason, now: now, counters: &counters))
                }
                continue
            }
            guard let kind = catalog.kind(for: event, among: candidates) else {
                switch unknownEventTypes {
                case .ignore: counters.ignoredEvents += 1
                case .deadLetter:
                    let reason = DeadLetterReason(
                        code: DeadLetterReason.unknownTypeCode,
                        message: "no kind in the catalog handles event type '\(event.type)'"
                    )
                    records.append(deadLetter(message, reason, now: now, counters: &counters))
                }
                continue
            }
            let occurredAt = Self.occurrence(of: event, in: message)
            // The event is taken to have occurred then for its templates too, which may print its
            // `time`, and for the copy a deferral or a digest keeps of it.
            Self.date(&event, at: occurredAt)
            do {
                let recipients = try renderer.recipients(of: event, kind: kind)
                // Fields are checked before anything is decided, so a malformed event counts
                // against no limit.
                let fields = try renderer.checkedFields(of: event, kind: kind)
                routed.append(
                    Routed(
                        index: index,
                        event: event,
                        occurredAt: occurredAt,
                        kind: kind,
                        recipients: recipients,
                        fields: fields
                    )
                )
            } catch {
                records.append(deadLetter(message, DeadLetterReason(error), now: now, counters: &counters))
            }
        }
        types.fold(into: &counters)
        counters.directoryChanges = changes.count
        if !changes.isEmpty {
            var evicted: [String] = []
            let refused = try await StoreError.isolatingRefusals(changes.count) {
                (range: Range<Int>) throws(StoreError) in
                evicted += try await store.apply(Array(changes[range])).evicted
            }
            if !evicted.isEmpty { evictedDevices(of: evicted, counters: &counters) }
            counters.directoryChanges -= refused.count
            for (change, error) in refused {
                let message = messages[changeMessages[change]]
                records.append(deadLetter(message, DeadLetterReason(error), now: now, counters: &counters))
            }
        }
        var recipients: [Recipient?] = []
        var requests: [DecisionRequest] = []
        if !routed.isEmpty {
            recipients = try await store.recipients(inOrder: routed.flatMap(\.recipients))
            requests = self.requests(for: routed, recipients: recipients, now: now)
        }
        counters.decideTime = ContinuousClock.now - started
        let finished = counters
        statistics.update { $0.add(finished) }
        return PreparedBatch(
            messages: messages,
            records: records,
            routed: routed,
            recipients: recipients,
            requests: requests,
            now: now
        )
    }

    /// Decides a prepared batch: one store call, which records the decisions in the ledger and
    /// counts them against throttle windows. Batches must be decided in the order they were
    /// prepared.
    ///
    /// - Throws: ``StoreError`` when the store cannot be reached; the batch can be decided again,
    ///   with the same result for what was already decided.
    public func decide(_ batch: PreparedBatch) async throws(StoreError) -> DecidedBatch {
        let started = ContinuousClock.now
        var prepared = batch
        var decisions: [Decision] = []
        if !batch.requests.isEmpty {
            do {
                decisions = try await store.decide(batch.requests)
            } catch  where error.code == .storeRejected {
                (prepared, decisions) = try await decideIsolating(batch)
            }
        }
        let elapsed = ContinuousClock.now - started
        statistics.update { $0.decideTime += elapsed }
        prepared.requests = []
        return DecidedBatch(prepared: prepared, decisions: decisions)
    }

    /// Decides `batch` event by event where the store refused it whole for what it holds
    /// (`store.rejected`): an event refused even on its own is dead-lettered with the store's
    /// reason and left out of the batch; the others are decided. Retried whole, such a batch
    /// would be refused for ever, holding its partitions.
    private func decideIsolating(_ batch: PreparedBatch) async throws(StoreError) -> (PreparedBatch, [Decision]) {
        // The requests of each routed event: one per recipient, in order.
        var bounds: [Range<Int>] = []
        var start = 0
        for item in batch.routed {
            bounds.append(start..<(start + item.recipients.count))
            start += item.recipients.count
        }
        var decided = [Decision?](repeating: nil, count: batch.requests.count)
        let refused = try await StoreError.isolatingRefusals(batch.routed.count) {
            (events: Range<Int>) throws(StoreError) in
            let requests = bounds[events.lowerBound].lowerBound..<bounds[events.upperBound - 1].upperBound
            let decisions = try await store.decide(Array(batch.requests[requests]))
            for (offset, decision) in decisions.enumerated() { decided[requests.lowerBound + offset] = decision }
        }
        var prepared = batch
        var counters = WorkerStatistics.Counters()
        let left = Set(refused.map(\.item))
        for (event, error) in refused {
            let message = batch.messages[batch.routed[event].index]
            prepared.records.append(deadLetter(message, DeadLetterReason(error), now: batch.now, counters: &counters))
        }
        let finished = counters
        statistics.update { $0.add(finished) }
        let kept = batch.routed.indices.filter { !left.contains($0) }
        prepared.routed = kept.map { batch.routed[$0] }
        prepared.recipients = kept.flatMap { bounds[$0].map { batch.recipients[$0] } }
        return (prepared, kept.flatMap { bounds[$0].compactMap { decided[$0] } })
    }

    /// The decision requests of `routed`, one per (event, recipient), in order; `recipients` holds
    /// the directory's answer for each of those recipients in the same order.
    private func requests(
        for routed: [Routed],
        recipients: [Recipient?],
        now: Timestamp
    ) -> [DecisionRequest] {
        var requests: [DecisionRequest] = []
        requests.reserveCapacity(recipients.count)
        var position = 0
        for item in routed {
            let createdAt = item.occurredAt ?? now
            let expiresAt = OutboundBuilder.expiry(of: item.kind, createdAt: createdAt)
            let event = item.event
            // An event with several recipients is written out once for all of them, when a store
            // may keep it; one with a single recipient only when its store does keep it.
            var shared: String?
            for userID in item.recipients {
                let recipient = recipients[position]
                position += 1
                let plan = policy.plan(
                    Policy.Input(
                        kind: item.kind.name,
                        category: item.kind.category,
                        recipient: userID,
                        deviceCount: recipient?.devices.count ?? 0,
                        preferences: recipient?.preferences ?? Preferences(),
                        expiresAt: expiresAt,
                        silent: !item.kind.presentation.showsText
                    ),
                    now: now
                )
                // The event is kept only with work that may come due later.
                let mayBeKept = plan.mayLeaveWorkDue
                if mayBeKept && shared == nil && item.recipients.count > 1 { shared = event.structuredJSON() }
                let key = DecisionKey(
                    eventID: item.event.id,
                    kind: item.kind.name,
                    recipient: userID,
                    eventTime: item.occurredAt
                )
                if mayBeKept {
                    let written = shared
                    requests.append(
                        DecisionRequest(
                            key: key,
                            plan: plan,
                            decidedAt: now,
                            payload: written ?? event.structuredJSON()
                        )
                    )
                } else {
                    requests.append(DecisionRequest(key: key, plan: plan, decidedAt: now))
                }
            }
        }
        return requests
    }

    /// When `event` occurred, as far as the worker can tell: its own time (CloudEvents `time`), or
    /// for an event without one the timestamp of its record `message` (when it was produced, or
    /// appended for a topic with `LogAppendTime`), which a redelivery of the record carries too.
    ///
    /// It keys the decision ledger (``DecisionKey/eventTime``) and dates the outbound messages and
    /// their expiry. Keyed by their ids alone, events without a `time` put each ledger insert on a
    /// page of its own when their ids are random (UUIDv4): 32,773 events/s end to end against 64,446
    /// with a `time` (docs/benchmarks.md). An event published again as a new record is then another
    /// event to the ledger, as one re-sent with another `time` is; its notification ids are the same.
    static func occurrence(of event: CloudEvent, in message: KafkaMessage) -> Timestamp? {
        event.time ?? message.timestampMilliseconds.map { Timestamp(epochMilliseconds: $0) }
    }

    /// Gives an event without a `time` the time it is taken to have occurred at
    /// (``occurrence(of:in:)``, or the one a deferral's ledger key holds), if there is one: a
    /// template that prints the time (the example `security.login`'s "on {at}") then renders
    /// instead of dead-lettering the event for a field it is missing, and the times the event is
    /// keyed, dated and printed by are one.
    static func date(_ event: inout CloudEvent, at occurrence: Timestamp?) {
        if event.time == nil, let occurrence { event.time = occurrence }
    }

    /// Renders and builds the records of a decided batch: pure work, no store.
    public func build(_ batch: DecidedBatch) -> [KafkaProducerRecord] {
        let built = build(batch, routed: batch.prepared.routed.indices, firstDecision: 0, plans: RenderPlans())
        // Joined only if there is something to join: a join copies every record.
        return batch.prepared.records.isEmpty ? built : batch.prepared.records + built
    }

    /// ``build(_:)`` split into up to `parts` runs of consecutive events built concurrently, joined
    /// in order: rendering is the worker's most expensive step, and this way it uses the cores the
    /// store leaves idle. The parts run on ``BuildThreads``.
    public func build(_ batch: DecidedBatch, parts: Int) async -> [KafkaProducerRecord] {
        // Joined only if more than one part has records: a join copies every record.
        let built = await buildParts(batch, parts: parts).filter { !$0.isEmpty }
        guard built.count > 1 else { return built.first ?? [] }
        var records: [KafkaProducerRecord] = []
        records.reserveCapacity(built.reduce(0) { $0 + $1.count })
        for part in built { records += part }
        return records
    }

    /// ``build(_:parts:)``'s records as its parts made them, in order (the batch's own records, such
    /// as dead letters, first): for a caller that hands them on part by part
    /// (``KafkaProducer/enqueue(contentsOf:)``), so that no record is copied into one array.
    public func buildParts(_ batch: DecidedBatch, parts: Int) async -> [[KafkaProducerRecord]] {
        // Below this many events a part costs more to schedule than it saves.
        let parts = min(parts, batch.prepared.routed.count / 64)
        guard parts > 1 else {
            let built = build(batch, routed: batch.prepared.routed.indices, firstDecision: 0, plans: RenderPlans())
            return [batch.prepared.records, built]
        }
        var ranges: [(routed: Range<Int>, firstDecision: Int)] = []
        var firstDecision = 0
        var lower = 0
        for part in 0..<parts {
            let upper = batch.prepared.routed.count * (part + 1) / parts
            ranges.append((lower..<upper, firstDecision))
            for item in batch.prepared.routed[lower..<upper] { firstDecision += item.recipients.count }
            lower = upper
        }
        let built = await withTaskGroup(of: (Int, [KafkaProducerRecord]).self) { group in
            for (part, range) in ranges.enumerated() {
                group.addTask {
                    await BuildThreads.shared.run { plans in
                        (
                            part,
                            self.build(batch, routed: range.routed, firstDecision: range.firstDecision, plans: plans)
                        )
                    }
                }
            }
            var built = [[KafkaProducerRecord]](repeating: [], count: ranges.count + 1)
            built[0] = batch.prepared.records
            for await (part, records) in group { built[part + 1] = records }
            return built
        }
        return built
    }

    /// The records of the events `routed` of `batch`, whose first decision is
    /// `batch.decisions[firstDecision]`, rendered through `plans` (the build thread's).
    private func build(
        _ batch: DecidedBatch,
        routed: Range<Int>,
        firstDecision: Int,
        plans: RenderPlans
    ) -> [KafkaProducerRecord] {
        let started = ContinuousClock.now
        var records = RecordWriter()
        var counters = WorkerStatistics.Counters()
        var next = firstDecision
        for item in batch.prepared.routed[routed] {
            var failure: DeadLetterReason?
            for _ in item.recipients.indices {
                let decision = batch.decisions[next]
                let recipient = batch.prepared.recipients[next]
                next += 1
                counted(decision, &counters)
                if let topic = topics.decisions {
                    appendDecision(decision, decidedAt: batch.prepared.now, topic: topic, to: &records)
                }
                guard decision.reason == .sent, let recipient else { continue }
                do {
                    try build(
                        item.event,
                        kind: item.kind,
                        for: recipient,
                        eventID: item.event.id,
                        occurredAt: item.occurredAt,
                        now: batch.prepared.now,
                        fields: item.fields,
                        plans: plans,
                        into: &records,
                        counters: &counters
                    )
                } catch {
                    failure = failure ?? error
                }
            }
            // The event's other recipients got theirs; the dead letter says which part failed.
            if let failure {
                records.append(
                    deadLetter(
                        batch.prepared.messages[item.index],
                        failure,
                        now: batch.prepared.now,
                        counters: &counters
                    )
                )
            }
        }
        counters.buildTime = ContinuousClock.now - started
        let finished = counters
        statistics.update { $0.add(finished) }
        return records.finish()
    }

    /// Counts `decision` by its label, and tells ``onThrottled`` of a throttled one.
    func counted(_ decision: Decision, _ counters: inout WorkerStatistics.Counters) {
        let label = decision.label
        counters.decisionsByPosition[label.position] += 1
        if label == .throttledDropped || label == .throttledDigested { onThrottled?(decision.key.recipient) }
    }

    /// Renders `event` for each of the recipient's devices (once per locale) and appends one
    /// outbound record per device.
    ///
    /// - Parameters:
    ///   - occurredAt: when `event` occurred (``occurrence(of:in:)``); the outbound messages'
    ///     creation time, or `now` if nil. Not read for a digest, which is created `now`.
    ///   - fields: `event`'s fields as checked before deciding, if they were (not for a digest,
    ///     which renders from its events).
    ///   - plans: the calling run's render plans (see ``RenderPlans``), if it keeps them.
    /// - Throws: ``DeadLetterReason`` for a render failure or a payload over the provider's limit.
    func build(
        _ event: CloudEvent,
        kind: NotificationKind,
        for recipient: Recipient,
        eventID: String,
        occurredAt: Timestamp?,
        now: Timestamp,
        digestOf digest: [CloudEvent]? = nil,
        fields: Renderer.CheckedFields? = nil,
        plans: RenderPlans? = nil,
        into records: inout RecordWriter,
        counters: inout WorkerStatistics.Counters
    ) throws(DeadLetterReason) {
        let createdAt = digest == nil ? (occurredAt ?? now) : now
        let expiresAt = OutboundBuilder.expiry(of: kind, createdAt: createdAt)
        let timeZone = recipient.timeZone ?? "UTC"
        // A user's devices mostly share one locale: a short list searched in order, not a dictionary.
        // An entry is used in place (`inout`), never copied out: a copy of a rendering retains each of
        // its strings, the kind's presentation included, and releases them again.
        var renders: [Render] = []
        let envelope = Envelope(
            eventID: eventID,
            createdAt: createdAt,
            expiresAt: expiresAt,
            recipient: recipient.userID,
            trace: (event.extensions["traceparent"], event.extensions["tracestate"])
        )
        let key = KafkaBytes(recipient.userID)
        // Counted once per recipient (kinds and categories) and per rendering (locales) rather than
        // per device, in short lists that `add(_:)` folds into the counters' dictionaries.
        var built = 0
        defer {
            if built > 0 { counters.countOutbound(built, kind: kind.name, category: kind.category) }
            for index in renders.indices where renders[index].built > 0 {
                counters.countOutbound(renders[index].built, locale: renders[index].rendered.locale)
            }
        }
        // The directory keeps devices oldest registration first: the newest are kept.
        let devices = recipient.devices
        let kept = max(devices.count - maximumDevicesPerRecipient, 0)..<devices.count
        if kept.count < devices.count {
            leftOutDevices(devices.count - kept.count, of: recipient.userID, counters: &counters)
        }
        // Each device is read where it is, by index, its fields passed on one by one: a device
        // passed on whole was copied out of its array, retaining each of its strings (in a
        // directory too large for the CPU's caches, a miss each).
        // Notification ids are made two at a time (see `NotificationID.make(eventID:kind:recipient:
        // devices:_:)`): the next device's, made with this one's, waits here.
        var nextID: String?
        for index in kept {
            let notificationID: String
            if let made = nextID {
                notificationID = made
                nextID = nil
            } else if index + 1 < kept.upperBound {
                let pair = NotificationID.make(
                    eventID: envelope.eventID,
                    kind: kind.name,
                    recipient: envelope.recipient,
                    devices: devices[index].token,
                    devices[index + 1].token
                )
                (notificationID, nextID) = (pair.0, pair.1)
            } else {
                notificationID = NotificationID.make(
                    eventID: envelope.eventID,
                    kind: kind.name,
                    recipient: envelope.recipient,
                    device: devices[index].token
                )
            }
            let locale = devices[index].locale ?? recipient.locale
            let slot: Int
            if let found = renders.firstIndex(where: { $0.locale == locale }) {
                slot = found
            } else {
                let rendered: RenderedNotification
                do throws(RenderError) {
                    if let digest {
                        rendered = try renderer.renderDigest(
                            digest,
                            as: kind,
                            locale: locale,
                            timeZone: timeZone,
                            plans: plans
                        )
                    } else {
                        rendered = try renderer.render(
                            event,
                            as: kind,
                            locale: locale,
                            timeZone: timeZone,
                            fields: fields,
                            plans: plans
                        )
                    }
                } catch {
                    throw DeadLetterReason(error)
                }
                if rendered.usedFallbackLocale { onFallbackLocale?(kind.name, locale, rendered.locale) }
                slot = renders.count
                renders.append(
                    Render(
                        locale: locale,
                        rendered: rendered,
                        message: OutboundBuilder.pushMessage(rendered, createdAt: createdAt)
                    )
                )
            }
            // No headers (docs/outbound.md): the value says what it is, and two constant headers on
            // every record cost librdkafka four allocations and frees per message.
            let written = try records.append(topic: topics.outbound, key: key) {
                writer throws(DeadLetterReason) in
                try write(devices, index, notificationID, envelope, &renders[slot], into: &writer, counters: &counters)
            }
            guard let bodySize = written else { continue }
            built += 1
            renders[slot].built += 1
            let provider = devices[index].provider.position
            counters.outboundByProviderPosition[provider] += 1
            counters.payloadSizesByProviderPosition[provider].add(bodySize)
        }
    }

    /// One locale's rendering of a notification for a recipient, and its push message.
    struct Render {
        var locale: String?
        var rendered: RenderedNotification
        var message: PushMessage
        /// Outbound messages written from it.
        var built = 0
    }

    /// What a recipient's outbound messages share.
    struct Envelope {
        var eventID: String
        var createdAt: Timestamp
        var expiresAt: Timestamp?
        var recipient: String
        var trace: (parent: String?, state: String?)
    }

    /// Writes the outbound message of `devices[index]` (read where it is, not copied), whose
    /// notification id is `notificationID`, from `render` (taken `inout` so that nothing of it is
    /// copied; only its notification id changes, to the device's) into `writer`.
    ///
    /// - Returns: the request body's size, or nil for a device whose token no provider accepts
    ///   (counted and logged: the event is fine).
    /// - Throws: ``DeadLetterReason`` for a payload over the provider's limit.
    private func write(
        _ devices: [RegisteredDevice],
        _ index: Int,
        _ notificationID: String,
        _ envelope: Envelope,
        _ render: inout Render,
        into writer: inout JSONStreamWriter,
        counters: inout WorkerStatistics.Counters
    ) throws(DeadLetterReason) -> Int? {
        render.message.notificationID = notificationID
        let bodySize: Int
        do {
            bodySize = try OutboundBuilder.write(
                render.message,
                of: render.rendered,
                eventID: envelope.eventID,
                createdAt: envelope.createdAt,
                expiresAt: envelope.expiresAt,
                recipient: envelope.recipient,
                provider: devices[index].provider,
                token: devices[index].token,
                appID: devices[index].appID,
                sandbox: devices[index].sandbox,
                trace: envelope.trace,
                into: &writer
            )
        } catch  where error.code == .invalidToken {
            // The directory holds a token no provider accepts; the event is fine.
            counters.skippedDevices += 1
            logSampler.log(
                logger,
                .warning,
                kind: "skipped_device",
                "skipped a device whose token the provider cannot address",
                metadata: [
                    "user": "\(Redact.user(envelope.recipient))", "provider": "\(devices[index].provider.rawValue)",
                ]
            )
            return nil
        } catch {
            throw DeadLetterReason(error)
        }
        return bodySize
    }

    /// Counts and logs (sampled) devices left out of a notification by ``maximumDevicesPerRecipient``.
    private func leftOutDevices(_ count: Int, of user: String, counters: inout WorkerStatistics.Counters) {
        counters.devicesLeftOut += count
        logSampler.log(
            logger,
            .warning,
            kind: "devices_left_out",
            "a recipient has more devices than worker.max_devices_per_recipient; the oldest registrations are left out",
            metadata: [
                "user": "\(Redact.user(user))", "left_out": "\(count)", "limit": "\(maximumDevicesPerRecipient)",
            ]
        )
    }

    /// Counts and logs (sampled) devices the directory removed because their user had more than
    /// it keeps (`store.max_devices_per_user`); `users` has a user once per device.
    private func evictedDevices(of users: [String], counters: inout WorkerStatistics.Counters) {
        counters.devicesEvicted += users.count
        // One line per user, with that user's count (the sampler bounds how many are written).
        var perUser: [(user: String, count: Int)] = []
        for user in users {
            if let index = perUser.firstIndex(where: { $0.user.hasSameBytes(as: user) }) {
                perUser[index].count += 1
            } else {
                perUser.append((user, 1))
            }
        }
        for (user, count) in perUser {
            logSampler.log(
                logger,
                .warning,
                kind: "devices_evicted",
                "a user registered more devices than store.max_devices_per_user; the oldest registrations were removed",
                metadata: ["user": "\(Redact.user(user))", "evicted": "\(count)"]
            )
        }
    }

    /// Counts and logs (sampled) a directory change dated too far ahead of the worker's clock, which
    /// is applied as of now instead (see ``DirectoryEvent/applied(at:)``).
    private func redatedChange(_ message: KafkaMessage, counters: inout WorkerStatistics.Counters) {
        counters.directoryChangesRedated += 1
        logSampler.log(
            logger,
            .warning,
            kind: "directory_redated",
            "directory change dated ahead of the worker's clock; applied as of now",
            metadata: ["topic": "\(message.topic)", "partition": "\(message.partition)", "offset": "\(message.offset)"]
        )
    }

    func deadLetter(
        _ message: KafkaMessage,
        _ reason: DeadLetterReason,
        now: Timestamp,
        counters: inout WorkerStatistics.Counters
    ) -> KafkaProducerRecord {
        counters.deadLettersByCode[reason.code, default: 0] += 1
        logSampler.log(
            logger,
            .notice,
            kind: reason.code,
            "event dead-lettered",
            metadata: [
                "code": "\(reason.code)", "topic": "\(message.topic)", "partition": "\(message.partition)",
                "offset": "\(message.offset)",
            ]
        )
        return DeadLetter.record(for: message, reason: reason, topic: topics.eventsDeadLetter, at: now)
    }

    /// Decodes the message's value in place, without copying it out of the consumed record.
    func decode(_ message: KafkaMessage, strings: JSONStringTable? = nil) throws(EventError) -> CloudEvent {
        let headers =
            message.headers.isEmpty
            ? [] : message.headers.map { EventDecoder.Header(name: $0.name, value: $0.value.map(Array.init)) }
        guard let value = message.value else {
            return try decoder.decode(value: Optional<UnsafeRawBufferPointer>.none, headers: headers)
        }
        let result = value.withUnsafeBytes { bytes in
            Result { () throws(EventError) in try decoder.decode(value: bytes, headers: headers, strings: strings) }
        }
        return try result.get()
    }

    /// Appends `decision`'s record on `topic` (``WorkerTopics/decisions``), keyed by its recipient
    /// as ``WorkerTopics/analyticsRecipients`` names them.
    func appendDecision(_ decision: Decision, decidedAt: Timestamp, topic: String, to records: inout RecordWriter) {
        let recipient = topics.analyticsRecipients.name(decision.key.recipient)
        records.append(topic: topic, key: KafkaBytes(recipient)) { writer in
            Self.writeDecision(decision, recipient: recipient, decidedAt: decidedAt, into: &writer)
        }
    }

    /// Writes `decision`'s record, naming its recipient `recipient`.
    static func writeDecision(
        _ decision: Decision,
        recipient: String,
        decidedAt: Timestamp,
        into writer: inout JSONStreamWriter
    ) {
        writer.beginObject()
        writer.member("eventId", decision.key.eventID)
        writer.member("kind", decision.key.kind)
        writer.member("recipient", recipient)
        writer.member("reason", decision.label.rawValue)
        // A redelivery is labelled `duplicate`; what was decided the first time, and when, goes
        // with it, so a reader that missed the first record (a worker killed before flushing it)
        // still learns it, and counts it in the throttle window it was counted in, not the
        // redelivery's.
        if decision.redelivered { writer.member("recorded", decision.reason.rawValue) }
        if let dueAt = decision.dueAt { writer.member("dueAt", timestamp: dueAt) }
        writer.member("decidedAt", timestamp: decidedAt)
        if decision.redelivered, let recordedAt = decision.recordedAt {
            writer.member("recordedAt", timestamp: recordedAt)
        }
        writer.endObject()
    }
}

extension DeadLetterReason: Error {}

extension WorkerStatistics.Counters {
    mutating func add(_ other: Self) {
        MetricLabels.add(
            other.eventsByType,
            into: &eventsByType,
            limit: Self.maximumEventTypes,
            maximumBytes: Self.maximumEventTypeBytes
        )
        decisionsByReason.merge(other.decisionsByReason, uniquingKeysWith: +)
        outboundByProvider.merge(other.outboundByProvider, uniquingKeysWith: +)
        outboundByKind.merge(other.outboundByKind, uniquingKeysWith: +)
        outboundByLocale.merge(other.outboundByLocale, uniquingKeysWith: +)
        outboundByCategory.merge(other.outboundByCategory, uniquingKeysWith: +)
        for (provider, sizes) in other.payloadSizes { payloadSizes[provider, default: SizeCounts()].merge(sizes) }
        for (locale, count) in other.outboundByLocaleList { outboundByLocale[locale, default: 0] += count }
        for (kind, category, count) in other.outboundByKindList {
            outboundByKind[kind, default: 0] += count
            outboundByCategory[category, default: 0] += count
        }
        for (position, count) in other.decisionsByPosition.enumerated() where count > 0 {
            decisionsByReason[DecisionReason.allCases[position].rawValue, default: 0] += count
        }
        for (position, provider) in PushProvider.byPosition.enumerated() {
            let count = other.outboundByProviderPosition[position]
            if count > 0 { outboundByProvider[provider.rawValue, default: 0] += count }
            let sizes = other.payloadSizesByProviderPosition[position]
            if sizes.total > 0 { payloadSizes[provider.rawValue, default: SizeCounts()].merge(sizes) }
        }
        deadLettersByCode.merge(other.deadLettersByCode, uniquingKeysWith: +)
        ignoredEvents += other.ignoredEvents
        directoryChanges += other.directoryChanges
        directoryChangesRedated += other.directoryChangesRedated
        directoryTombstones += other.directoryTombstones
        devicesLeftOut += other.devicesLeftOut
        devicesEvicted += other.devicesEvicted
        skippedDevices += other.skippedDevices
        handledEvents += other.handledEvents
        decideTime += other.decideTime
        buildTime += other.buildTime
    }
}
