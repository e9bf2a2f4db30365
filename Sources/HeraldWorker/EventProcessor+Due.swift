import HeraldCatalog
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldStore

extension EventProcessor {
    /// Claims deferred notifications and digests that are due by the clock and builds their
    /// records. The caller produces them and then calls ``StateStore/complete(_:)`` with `claimed`;
    /// if it crashes first, the lease runs out and the work is claimed again, with the same
    /// notification ids.
    ///
    /// A deferred notification is decided again (its deferral resumed): preferences or quiet hours
    /// may have changed, and a throttle window may have room now.
    public func processDue(
        limit: Int,
        lease: Duration
    ) async throws(StoreError) -> (records: [KafkaProducerRecord], claimed: [DueWork]) {
        let now = clock.now()
        let claimed = try await store.claimDue(now: now, limit: limit, lease: lease)
        guard !claimed.isEmpty else { return ([], []) }
        var counters = WorkerStatistics.Counters()
        var records = RecordWriter()
        let directory = try await store.recipients(
            claimed.map {
                switch $0.work {
                case .deferred(let key, _): key.recipient
                case .digest(let window, _): window.recipient
                }
            }
        )

        var requests: [DecisionRequest] = []
        var resumed: [(event: CloudEvent, kind: NotificationKind)] = []
        for work in claimed {
            guard case .deferred(let key, let payload) = work.work else { continue }
            guard
                let (event, kind) = storedEvent(
                    payload,
                    kind: key.kind,
                    occurredAt: key.eventTime,
                    now: now,
                    into: &records,
                    &counters
                )
            else { continue }
            let recipient = directory[OpaqueID(key.recipient)]
            let plan = policy.plan(
                Policy.Input(
                    kind: kind.name,
                    category: kind.category,
                    recipient: key.recipient,
                    deviceCount: recipient?.devices.count ?? 0,
                    preferences: recipient?.preferences ?? Preferences(),
                    expiresAt: OutboundBuilder.expiry(of: kind, createdAt: Self.occurrence(of: event, key: key) ?? now),
                    silent: !kind.presentation.showsText
                ),
                now: now
            )
            requests.append(
                DecisionRequest(key: key, plan: plan, decidedAt: now, payload: payload, resumesDeferral: true)
            )
            resumed.append((event, kind))
        }
        let decisions = requests.isEmpty ? [] : try await store.decide(requests)
        let plans = RenderPlans()
        for (decision, (event, kind)) in zip(decisions, resumed) {
            counted(decision, &counters)
            if let topic = topics.decisions { appendDecision(decision, decidedAt: now, topic: topic, to: &records) }
            guard decision.reason == .sent, let recipient = directory[OpaqueID(decision.key.recipient)] else {
                continue
            }
            do {
                try build(
                    event,
                    kind: kind,
                    for: recipient,
                    eventID: event.id,
                    occurredAt: Self.occurrence(of: event, key: decision.key),
                    now: now,
                    plans: plans,
                    into: &records,
                    counters: &counters
                )
            } catch {
                records.append(
                    dueDeadLetter(event.structuredJSON(), key: decision.key.recipient, error, now: now, &counters)
                )
            }
        }

        for work in claimed {
            guard case .digest(let window, let items) = work.work, let first = items.first else { continue }
            var events: [CloudEvent] = []
            var kind: NotificationKind?
            for item in items {
                guard
                    let (event, itemKind) = storedEvent(
                        item.payload,
                        kind: item.key.kind,
                        occurredAt: item.key.eventTime,
                        now: now,
                        into: &records,
                        &counters
                    )
                else { continue }
                events.append(event)
                kind = itemKind
            }
            guard let kind, let latest = events.last, let recipient = directory[OpaqueID(window.recipient)] else {
                continue
            }
            do {
                try build(
                    latest,
                    kind: kind,
                    for: recipient,
                    eventID: "digest:\(window.rule):\(window.windowStart.epochMilliseconds):\(first.key.eventID)",
                    occurredAt: nil,
                    now: now,
                    digestOf: events,
                    plans: plans,
                    into: &records,
                    counters: &counters
                )
            } catch {
                records.append(
                    dueDeadLetter(latest.structuredJSON(), key: window.recipient, error, now: now, &counters)
                )
            }
        }
        let finished = counters
        statistics.update { $0.add(finished) }
        return (records.finish(), claimed)
    }

    /// When the event of a deferred notification occurred: its own time, or the time its ledger key
    /// holds, which for an event without one is its record's (``occurrence(of:in:)``). Keys decided
    /// before the ledger held event times hold none.
    static func occurrence(of event: CloudEvent, key: DecisionKey) -> Timestamp? {
        event.time ?? key.eventTime
    }

    /// The event kept with due work, and its kind; a dead letter if either is gone (the catalog
    /// dropped the kind since). An event kept without a `time` is given the one its ledger key
    /// holds, `occurredAt` (workers before 9ca545d kept such events as they came).
    private func storedEvent(
        _ payload: String,
        kind name: String,
        occurredAt: Timestamp?,
        now: Timestamp,
        into records: inout RecordWriter,
        _ counters: inout WorkerStatistics.Counters
    ) -> (CloudEvent, NotificationKind)? {
        var event: CloudEvent
        do {
            event = try decoder.decode(value: Array(payload.utf8))
            Self.date(&event, at: occurredAt)
        } catch {
            records.append(dueDeadLetter(payload, key: nil, DeadLetterReason(error), now: now, &counters))
            return nil
        }
        guard let kind = catalog.kind(named: name) else {
            let reason = DeadLetterReason(
                code: DeadLetterReason.unknownTypeCode,
                message: "the catalog no longer has kind '\(name)'"
            )
            records.append(dueDeadLetter(payload, key: nil, reason, now: now, &counters))
            return nil
        }
        return (event, kind)
    }

    private func dueDeadLetter(
        _ payload: String,
        key: String?,
        _ reason: DeadLetterReason,
        now: Timestamp,
        _ counters: inout WorkerStatistics.Counters
    ) -> KafkaProducerRecord {
        counters.deadLettersByCode[reason.code, default: 0] += 1
        logSampler.log(
            logger,
            .notice,
            kind: "due:" + reason.code,
            "due work dead-lettered",
            metadata: ["code": "\(reason.code)"]
        )
        let message = KafkaMessage(
            topic: "herald.due",
            partition: -1,
            offset: -1,
            timestampMilliseconds: now.epochMilliseconds,
            key: key.map { KafkaBytes($0) },
            value: KafkaBytes(payload)
        )
        return DeadLetter.record(for: message, reason: reason, topic: topics.eventsDeadLetter, at: now)
    }
}
