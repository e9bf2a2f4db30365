import HeapModule
import HeraldEvents
import HeraldPolicy

extension MemoryStore {
    public func decide(_ requests: [DecisionRequest]) async throws(StoreError) -> [Decision] {
        decisions.withLock { tables in
            var decided: [Decision] = []
            decided.reserveCapacity(requests.count)
            for request in requests { decided.append(tables.decide(request)) }
            return decided
        }
    }

    public func claimDue(now: Timestamp, limit: Int, lease: Duration) async throws(StoreError) -> [DueWork] {
        decisions.withLock { $0.claimDue(now: now, limit: limit, lease: lease) }
    }

    public func nextDueAt() async throws(StoreError) -> Timestamp? {
        decisions.withLock { $0.nextDueAt() }
    }

    public func complete(_ work: [DueWork]) async throws(StoreError) {
        decisions.withLock { $0.complete(work) }
    }

    @discardableResult
    public func purge(before: Timestamp) async throws(StoreError) -> Int {
        directory.withLock { $0.purge(before: before) }
        return decisions.withLock { $0.purge(before: before) }
    }
}

/// The decision ledger, throttle windows, digest items and due work, as ``SQLiteStore``'s tables
/// of those names hold them.
struct DecisionTables: Sendable {
    /// A ledger key as the other stores keep it: an event without a time at time 0.
    struct LedgerKey: Hashable, Sendable {
        var eventTime: Int64
        var eventID: String
        var kind: String
        var recipient: String

        init(_ key: DecisionKey) {
            eventTime = key.storedEventTime
            eventID = key.eventID
            kind = key.kind
            recipient = key.recipient
        }

        // Without the kind: an event and recipient nearly always have one, and a string fewer to
        // hash is a tenth of the ledger's cost. Equality still compares it. The event id and the
        // recipient by their bytes, as the databases key them (``OpaqueID``).
        func hash(into hasher: inout Hasher) {
            hasher.combine(eventTime)
            eventID.hashBytes(into: &hasher)
            recipient.hashBytes(into: &hasher)
        }

        static func == (lhs: LedgerKey, rhs: LedgerKey) -> Bool {
            lhs.eventTime == rhs.eventTime && lhs.kind == rhs.kind && lhs.eventID.hasSameBytes(as: rhs.eventID)
                && lhs.recipient.hasSameBytes(as: rhs.recipient)
        }
    }

    /// A ledger entry, packed to 24 bytes (optional times take 16 each): the ledger holds one for
    /// every decision of a replay.
    struct Entry: Sendable, Equatable {
        private var decidedAtMilliseconds: Int64
        /// `Int64.min` for none.
        private var dueAtMilliseconds: Int64
        var reason: DecisionReason

        init(reason: DecisionReason, dueAt: Timestamp?, decidedAt: Timestamp) {
            self.reason = reason
            dueAtMilliseconds = dueAt?.epochMilliseconds ?? .min
            decidedAtMilliseconds = decidedAt.epochMilliseconds
        }

        var dueAt: Timestamp? {
            dueAtMilliseconds == .min ? nil : Timestamp(epochMilliseconds: dueAtMilliseconds)
        }

        var decidedAt: Timestamp { Timestamp(epochMilliseconds: decidedAtMilliseconds) }
    }

    struct Window: Sendable {
        var count: Int
        var end: Timestamp
    }

    /// A deferred notification or a digest waiting to come due.
    struct Due: Sendable {
        enum Work: Sendable {
            case deferred(LedgerKey, payload: String)
            case digest(ThrottleKey)

            var recipient: String {
                switch self {
                case .deferred(let key, _): key.recipient
                case .digest(let window): window.recipient
                }
            }
        }

        var dueAt: Timestamp
        var claimedUntil: Timestamp?
        var work: Work
    }

    /// One entry of the due order. Entries are not removed when their work is rescheduled or
    /// completed: one whose work no longer has its due time is passed over where it is met.
    struct Scheduled: Comparable, Sendable {
        var dueAt: Int64
        var id: Int64

        static func < (lhs: Self, rhs: Self) -> Bool { (lhs.dueAt, lhs.id) < (rhs.dueAt, rhs.id) }
    }

    private var ledger: [LedgerKey: Entry] = [:]

    init(expectedDecisions: Int = 0) {
        ledger.reserveCapacity(expectedDecisions)
    }
    private var windows: [ThrottleKey: Window] = [:]
    private var due: [Int64: Due] = [:]
    /// The due work, earliest first, with stale entries among it.
    private var schedule = Heap<Scheduled>()
    private var deferred: [LedgerKey: Int64] = [:]
    private var digests: [ThrottleKey: Int64] = [:]
    /// Each window's collected notifications, oldest first.
    private var digestItems: [ThrottleKey: [DigestItem]] = [:]
    /// The ids in ``due`` of each recipient's waiting work, and of some done since (left for the
    /// purge to drop, not looked for in the list as each is done): a deleted user's waiting work is
    /// found without looking at everyone's. A replay of a week may hold hundreds of thousands of
    /// deferrals when its deletions come.
    private var dueByRecipient: [OpaqueID: [Int64]] = [:]
    /// Ids are never reused: a new one is larger than every id in use, as SQLite's rowids are.
    private var lastDueID: Int64 = 0
    private var lastItemID: Int64 = 0

    /// ``StateStore/decide(_:)`` for one request, with the same rules as the other stores.
    mutating func decide(_ request: DecisionRequest) -> Decision {
        let key = LedgerKey(request.key)
        // The likely outcome is entered at once, in the look-up that finds out whether the ledger
        // holds the key: one search of the ledger for a new key instead of a look-up and an insert.
        let likely = Entry(
            reason: request.plan.outcome.reason,
            dueAt: request.plan.outcome.dueAt,
            decidedAt: request.decidedAt
        )
        if let prior = ledger.updateValue(likely, forKey: key), !(request.resumesDeferral && prior.reason.isDeferral) {
            ledger[key] = prior
            return Decision(
                key: request.key,
                reason: prior.reason,
                dueAt: prior.dueAt,
                redelivered: true,
                recordedAt: prior.decidedAt
            )
        }
        let outcome = resolve(request.plan)
        switch outcome.heldEffect {
        case .none: break
        case .digest(let window, let flushAt):
            lastItemID += 1
            digestItems[window, default: []].append(
                DigestItem(
                    id: lastItemID,
                    key: DecisionKey(eventID: key.eventID, kind: key.kind, recipient: key.recipient, eventTime: nil),
                    payload: request.payload,
                    addedAt: request.decidedAt
                )
            )
            // A window's digest comes due once, at the flush time its first item set.
            if digests[window] == nil { digests[window] = add(Due(dueAt: flushAt, work: .digest(window))) }
        case .schedule(let dueAt):
            if let id = deferred[key] {
                due[id]?.dueAt = dueAt
                due[id]?.work = .deferred(key, payload: request.payload)
                due[id]?.claimedUntil = nil
                schedule.insert(Scheduled(dueAt: dueAt.epochMilliseconds, id: id))
            } else {
                deferred[key] = add(Due(dueAt: dueAt, work: .deferred(key, payload: request.payload)))
            }
        }
        let entry = Entry(reason: outcome.reason, dueAt: outcome.dueAt, decidedAt: request.decidedAt)
        if entry != likely { ledger[key] = entry }
        return Decision(key: request.key, reason: outcome.reason, dueAt: outcome.dueAt, redelivered: false)
    }

    /// The plan against the windows' counts; a notification that fits counts once in every window
    /// it is limited by.
    private mutating func resolve(_ plan: DecisionPlan) -> PolicyOutcome {
        guard plan.outcome.reason == .sent, !plan.limits.isEmpty else { return plan.outcome }
        let outcome = plan.resolved { limit in windows[limit.key]?.count ?? 0 }
        guard outcome.reason == .sent else { return outcome }
        for limit in plan.limits {
            var window = windows[limit.key] ?? Window(count: 0, end: limit.windowEnd)
            window.count += 1
            window.end = max(window.end, limit.windowEnd)
            windows[limit.key] = window
        }
        return outcome
    }

    private mutating func add(_ work: Due) -> Int64 {
        lastDueID += 1
        due[lastDueID] = work
        dueByRecipient[OpaqueID(work.work.recipient), default: []].append(lastDueID)
        schedule.insert(Scheduled(dueAt: work.dueAt.epochMilliseconds, id: lastDueID))
        return lastDueID
    }

    /// Drops the due work `id`, whose work is `work`. Its entries in the due order and in the index
    /// by recipient go stale: passed over where they are met.
    private mutating func removeDue(_ id: Int64, _ work: Due.Work) {
        due[id] = nil
        switch work {
        case .deferred(let key, _): deferred[key] = nil
        case .digest(let window): digests[window] = nil
        }
    }

    /// Whether `entry` still stands for its work's due time.
    private func isCurrent(_ entry: Scheduled) -> Bool {
        due[entry.id]?.dueAt.epochMilliseconds == entry.dueAt
    }

    mutating func nextDueAt() -> Timestamp? {
        while let first = schedule.min {
            if isCurrent(first) { return Timestamp(epochMilliseconds: first.dueAt) }
            schedule.removeMin()
        }
        return nil
    }

    mutating func claimDue(now: Timestamp, limit: Int, lease: Duration) -> [DueWork] {
        let until = Timestamp(epochMilliseconds: now.epochMilliseconds + lease.milliseconds)
        var claimed: [DueWork] = []
        // Due work is taken off the order to be looked at and put back whether claimed or not: it
        // stays due until completed. Stale entries, and a second entry for the same work, stay off.
        var passed: [Scheduled] = []
        var seen = Set<Int64>()
        while claimed.count < limit, let first = schedule.min, first.dueAt <= now.epochMilliseconds {
            schedule.removeMin()
            guard isCurrent(first), seen.insert(first.id).inserted, var work = due[first.id] else { continue }
            passed.append(first)
            if let claimedUntil = work.claimedUntil, claimedUntil > now { continue }
            work.claimedUntil = until
            due[first.id] = work
            claimed.append(
                DueWork(id: first.id, dueAt: work.dueAt, work: handedOut(work.work), claimedUntil: until)
            )
        }
        for entry in passed { schedule.insert(entry) }
        return claimed
    }

    private func handedOut(_ work: Due.Work) -> DueWork.Work {
        switch work {
        case .deferred(let key, let payload):
            .deferred(
                DecisionKey(eventID: key.eventID, kind: key.kind, recipient: key.recipient, storedTime: key.eventTime),
                payload: payload
            )
        case .digest(let window): .digest(window, items: digestItems[window] ?? [])
        }
    }

    mutating func complete(_ work: [DueWork]) {
        for entry in work {
            if case .digest(let window, let items) = entry.work, !items.isEmpty {
                let handed = Set(items.map(\.id))
                digestItems[window]?.removeAll { handed.contains($0.id) }
                if digestItems[window]?.isEmpty == true { digestItems[window] = nil }
            }
            // Rescheduled since the claim (a deferral deferred again): its claim is gone, and it stays.
            guard let current = due[entry.id], current.claimedUntil == entry.claimedUntil else { continue }
            // A digest that collected more since the claim stays, to come due again at once.
            if case .digest(let window) = current.work, digestItems[window] != nil {
                due[entry.id]?.claimedUntil = nil
                continue
            }
            removeDue(entry.id, current.work)
        }
    }

    /// Drops the notifications waiting for `recipient` (a deleted user), as ``SQLiteStore`` does:
    /// deferred ones whose event is no later than `at` (or has no time), digest items collected no
    /// later than it, and a digest with no item left.
    mutating func forget(_ recipient: String, asOf at: Timestamp) {
        guard let ids = dueByRecipient.removeValue(forKey: OpaqueID(recipient)) else { return }
        var kept: [Int64] = []
        for id in ids {
            guard let work = due[id]?.work else { continue }
            switch work {
            case .deferred(let key, _):
                if key.eventTime <= at.epochMilliseconds { removeDue(id, work) } else { kept.append(id) }
            case .digest(let window):
                digestItems[window]?.removeAll { $0.addedAt <= at }
                if digestItems[window]?.isEmpty == true { digestItems[window] = nil }
                if digestItems[window] == nil { removeDue(id, work) } else { kept.append(id) }
            }
        }
        if !kept.isEmpty { dueByRecipient[OpaqueID(recipient)] = kept }
    }

    /// Forgets ledger entries decided before `before`, and windows that started and ended before it.
    ///
    /// In place: replay purges every interval of event time, and a filtered copy of the ledger
    /// would hold two ledgers' memory for nothing when there is little to delete.
    mutating func purge(before: Timestamp) -> Int {
        let old = ledger.compactMap { $0.value.decidedAt < before ? $0.key : nil }
        for key in old { ledger.removeValue(forKey: key) }
        let ended = windows.compactMap { $0.key.windowStart < before && $0.value.end < before ? $0.key : nil }
        for key in ended { windows.removeValue(forKey: key) }
        // The index by recipient keeps only work still waiting.
        let work = due
        dueByRecipient = dueByRecipient.compactMapValues { ids in
            let waiting = ids.filter { work[$0] != nil }
            return waiting.isEmpty ? nil : waiting
        }
        return old.count
    }
}
