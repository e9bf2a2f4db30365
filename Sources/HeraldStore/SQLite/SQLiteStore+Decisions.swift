import HeraldEvents
import HeraldPolicy

extension SQLiteStore {
    public func decide(_ requests: [DecisionRequest]) async throws(StoreError) -> [Decision] {
        try await run { connection throws(StoreError) in
            try self.countingTransaction(connection) { () throws(StoreError) in
                let legacy = try Self.hasLegacyDecisions(connection)
                var decisions: [Decision] = []
                decisions.reserveCapacity(requests.count)
                var next = requests.startIndex
                while next < requests.endIndex {
                    let rows = Self.ledgerRowsPerInsert.first { $0 <= requests.endIndex - next } ?? 1
                    let chunk = requests[next..<next + rows]
                    next += rows
                    // Before an upgrade's entries are purged, each decision first looks for its key
                    // at time 0, so it is decided on its own.
                    var written = false
                    if !legacy, rows > 1 { written = try Self.insertLikely(chunk, connection) }
                    for request in chunk {
                        decisions.append(
                            try Self.decide(
                                request,
                                legacy: legacy,
                                written: written,
                                &self.throttle,
                                &self.digests,
                                connection
                            )
                        )
                    }
                }
                return decisions
            }
        }
    }

    /// A write transaction that may count against throttle windows: ``ThrottleCounts`` is brought up
    /// to date first, may fold at the end, and is told if the transaction rolls back.
    func countingTransaction<R>(
        _ connection: SQLiteConnection,
        _ body: () throws(StoreError) -> R
    ) throws(StoreError) -> R {
        do {
            return try connection.transaction { () throws(StoreError) in
                try throttle.begin(connection)
                let result = try body()
                try throttle.end(connection)
                try digests.end(connection)
                return result
            }
        } catch {
            throttle.rolledBack()
            digests.rolledBack()
            throw error
        }
    }

    /// A transaction that may fold the pending digest items (``DigestBuffer/fold(_:)``): the buffer
    /// is told if it rolls back.
    func digestTransaction<R>(
        _ connection: SQLiteConnection,
        _ body: () throws(StoreError) -> R
    ) throws(StoreError) -> R {
        do {
            return try connection.transaction(body)
        } catch {
            digests.rolledBack()
            throw error
        }
    }

    /// Whether the ledger may still hold rows decided before it was keyed by event time (migration
    /// 10): they sit at time 0 until purged.
    static func hasLegacyDecisions(_ connection: SQLiteConnection) throws(StoreError) -> Bool {
        var legacy = false
        try connection.query("SELECT 1 FROM decisions_legacy_horizon LIMIT 1") { _ in legacy = true }
        return legacy
    }

    /// The ledger's entry for `keyValues` (event time, id, kind, recipient), if it has one.
    ///
    /// Its event time is compared with `+?`, not `?`: the ledger's partial index is of entries whose
    /// time is 0, and the planner, seeing whether `event_time = ?` implies it, makes the statement's
    /// plan depend on the bound value, and SQLite then prepares it again for every new time (about
    /// 55,000 instructions each time). `+?` is the same value to the comparison and the key look-up.
    static func recorded(
        _ key: DecisionKey,
        _ keyValues: [SQLiteConnection.Value],
        _ connection: SQLiteConnection
    ) throws(StoreError) -> Decision? {
        var prior: Decision?
        try connection.query(
            """
            SELECT reason, due_at, decided_at FROM decisions
            WHERE event_time = +? AND event_id = ? AND kind = ? AND recipient = ?
            """,
            keyValues
        ) { row throws(StoreError) in
            prior = Decision(
                key: key,
                reason: try reason(row.text(0)),
                dueAt: row.isNull(1) ? nil : Timestamp(epochMilliseconds: row.integer(1)),
                redelivered: true,
                recordedAt: Timestamp(epochMilliseconds: row.integer(2))
            )
        }
        return prior
    }

    /// How many ledger entries one `INSERT` writes, largest first. Each statement run has a cost of
    /// its own (the call, starting and ending the statement, resetting it) that a row of a larger
    /// `INSERT` does not pay: `bench decisions`' decide step went from 4.0 to 3.4 µs a decision.
    static let ledgerRowsPerInsert = [64, 16, 4]

    /// The `INSERT` of one ledger entry, and of each of ``ledgerRowsPerInsert``'s counts.
    private static let ledgerInsert = ledgerInsert(rows: 1)
    private static let ledgerInserts = Dictionary(
        uniqueKeysWithValues: ledgerRowsPerInsert.map { rows in (rows, ledgerInsert(rows: rows)) }
    )

    /// `INSERT … VALUES (…), (…), …` of `rows` ledger entries, skipping a key the ledger holds.
    private static func ledgerInsert(rows: Int) -> SQLiteConnection.SQL {
        let values = Array(repeating: "(?,?,?,?,?,?,?)", count: rows).joined(separator: ",")
        return SQLiteConnection.SQL(
            built: """
                INSERT INTO decisions (event_time, event_id, kind, recipient, reason, due_at, decided_at)
                VALUES \(values) ON CONFLICT (event_time, event_id, kind, recipient) DO NOTHING
                """
        )
    }

    /// The UTF-8 length of ``likelyEntry(_:into:)``'s texts.
    private static func textBytes(of request: DecisionRequest) -> Int {
        let key = request.key
        return key.eventID.utf8.count + key.kind.utf8.count + key.recipient.utf8.count
            + request.plan.outcome.reason.rawValue.utf8.count
    }

    /// Binds a ledger entry with the plan's likely outcome, as one statement's values: the key, the
    /// reason, when it is due, the decision's time.
    private static func likelyEntry(_ request: DecisionRequest, into binder: inout SQLiteConnection.Binder) {
        let key = request.key
        let likely = request.plan.outcome
        binder.integer(key.storedEventTime)
        binder.text(key.eventID)
        binder.text(key.kind)
        binder.text(key.recipient)
        binder.text(likely.reason.rawValue)
        if let dueAt = likely.dueAt { binder.integer(dueAt.epochMilliseconds) } else { binder.null() }
        binder.integer(request.decidedAt.epochMilliseconds)
    }

    /// Writes the likely outcome of every request in `chunk` in one statement, if the ledger holds
    /// none of their keys (nor does a key come twice): `true`. Otherwise nothing is written, and
    /// each request is decided on its own, as a redelivery needs.
    ///
    /// The savepoint takes back the entries that did go in: which ones did is not known, and a
    /// redelivery must find its prior entry, not one this batch just wrote.
    static func insertLikely(
        _ chunk: ArraySlice<DecisionRequest>,
        _ connection: SQLiteConnection
    ) throws(StoreError) -> Bool {
        guard let insert = ledgerInserts[chunk.count] else { return false }
        // Bound straight from the requests: an array of the chunk's values (seven per entry, each
        // text retained and released) cost more than the insert's own binding.
        var textBytes = 0
        for index in chunk.indices { textBytes += Self.textBytes(of: chunk[index]) }
        try connection.query("SAVEPOINT ledger_chunk")
        let inserted = try connection.change(insert, textBytes: textBytes) { binder in
            for index in chunk.indices { likelyEntry(chunk[index], into: &binder) }
        }
        if inserted != chunk.count { try connection.query("ROLLBACK TO ledger_chunk") }
        try connection.query("RELEASE ledger_chunk")
        return inserted == chunk.count
    }

    /// Decides `request`: answers a redelivery from the ledger, or counts it against its limits and
    /// records what it left behind. `written`: its likely outcome is already in the ledger, written
    /// by ``insertLikely(_:_:)`` (which found none of its chunk's keys there).
    static func decide(
        _ request: DecisionRequest,
        legacy: Bool,
        written: Bool = false,
        _ throttle: inout ThrottleCounts,
        _ digests: inout DigestBuffer,
        _ connection: SQLiteConnection
    ) throws(StoreError) -> Decision {
        let key = request.key
        // Computed where it is used, not made up front: only a redelivery, an event decided before
        // the upgrade or a rewrite of the likely outcome needs the key's values on their own.
        var keyValues: [SQLiteConnection.Value] {
            [.integer(key.storedEventTime), .text(key.eventID), .text(key.kind), .text(key.recipient)]
        }
        // Decided before the ledger was keyed by event time, this event's entry is at time 0.
        if !written && legacy && key.eventTime != nil && !request.resumesDeferral,
            let prior = try recorded(key, [.integer(0)] + keyValues.dropFirst(), connection)
        {
            return prior
        }
        // The likely outcome is written first, in the statement that also finds out whether the
        // ledger already holds the key: one search for a new pair instead of a look-up and an insert.
        var inserted = written
        if !written {
            inserted =
                try connection.change(ledgerInsert, textBytes: textBytes(of: request)) { binder in
                    likelyEntry(request, into: &binder)
                } == 1
        }
        let at = request.decidedAt.epochMilliseconds
        let likely = request.plan.outcome
        if !inserted, let prior = try recorded(key, keyValues, connection),
            !(request.resumesDeferral && prior.reason.isDeferral)
        {
            return prior
        }

        let outcome = try throttle.resolve(request.plan, connection)
        switch outcome.heldEffect {
        case .none: break
        case .digest(let window, let flushAt):
            let windowValues: [SQLiteConnection.Value] = [
                .text(window.recipient), .text(window.rule), .integer(window.windowStart.epochMilliseconds),
            ]
            try digests.append(
                window,
                eventID: key.eventID,
                kind: key.kind,
                payload: request.payload,
                addedAt: at,
                connection
            )
            try connection.query(
                """
                INSERT INTO due_work (type, due_at, recipient, rule, window_start) VALUES ('digest', ?, ?, ?, ?)
                ON CONFLICT (recipient, rule, window_start) WHERE type = 'digest' DO NOTHING
                """,
                [.integer(flushAt.epochMilliseconds)] + windowValues
            )
        case .schedule(let dueAt):
            try connection.query(
                """
                INSERT INTO due_work (type, due_at, recipient, event_time, event_id, kind, payload)
                VALUES ('deferred', ?, ?, ?, ?, ?, ?)
                ON CONFLICT (event_time, event_id, kind, recipient) WHERE type = 'deferred'
                DO UPDATE SET due_at = excluded.due_at, payload = excluded.payload, claimed_until = NULL
                """,
                [
                    .integer(dueAt.epochMilliseconds), .text(key.recipient), .integer(key.storedEventTime),
                    .text(key.eventID), .text(key.kind), .text(request.payload),
                ]
            )
        }
        if !inserted || outcome.reason != likely.reason || outcome.dueAt != likely.dueAt {
            try connection.query(
                """
                UPDATE decisions SET reason = ?, due_at = ?, decided_at = ?
                WHERE event_time = +? AND event_id = ? AND kind = ? AND recipient = ?
                """,
                [
                    .text(outcome.reason.rawValue), outcome.dueAt.map { .integer($0.epochMilliseconds) } ?? .null,
                    .integer(at),
                ] + keyValues
            )
        }
        return Decision(key: key, reason: outcome.reason, dueAt: outcome.dueAt, redelivered: false)
    }

    static func reason(_ text: String?) throws(StoreError) -> DecisionReason {
        guard let text, let reason = DecisionReason(rawValue: text) else {
            throw StoreError(code: .storeQuery, message: "decisions: unknown reason in the ledger")
        }
        return reason
    }

    public func claimDue(now: Timestamp, limit: Int, lease: Duration) async throws(StoreError) -> [DueWork] {
        let until = Timestamp(epochMilliseconds: now.epochMilliseconds + lease.milliseconds)
        return try await run { connection throws(StoreError) in
            try self.digestTransaction(connection) { () throws(StoreError) in
                var claimed: [DueWork] = []
                var digests: [(index: Int, window: ThrottleKey)] = []
                try connection.query(
                    """
                    UPDATE due_work SET claimed_until = ?1
                    WHERE id IN (SELECT id FROM due_work WHERE due_at <= ?2 AND (claimed_until IS NULL OR claimed_until <= ?2)
                                 ORDER BY due_at, id LIMIT ?3)
                    RETURNING id, type, due_at, recipient, event_id, kind, rule, window_start, payload, event_time
                    """,
                    [.integer(until.epochMilliseconds), .integer(now.epochMilliseconds), .integer(Int64(limit))]
                ) { row throws(StoreError) in
                    let recipient = row.text(3) ?? ""
                    let work: DueWork.Work
                    if row.text(1) == "digest" {
                        let window = ThrottleKey(
                            recipient: recipient,
                            rule: row.text(6) ?? "",
                            windowStart: Timestamp(epochMilliseconds: row.integer(7))
                        )
                        digests.append((claimed.count, window))
                        work = .digest(window, items: [])
                    } else {
                        let key = DecisionKey(
                            eventID: row.text(4) ?? "",
                            kind: row.text(5) ?? "",
                            recipient: recipient,
                            storedTime: row.integer(9)
                        )
                        work = .deferred(key, payload: row.text(8) ?? "")
                    }
                    claimed.append(
                        DueWork(
                            id: row.integer(0),
                            dueAt: Timestamp(epochMilliseconds: row.integer(2)),
                            work: work,
                            claimedUntil: until
                        )
                    )
                }
                if !digests.isEmpty { try self.digests.fold(connection) }
                for (index, window) in digests {
                    var items: [DigestItem] = []
                    try connection.query(
                        """
                        SELECT i.id, i.event_id, i.kind, i.payload, i.added_at
                        FROM digest_index x JOIN digest_items i ON i.id = x.id
                        WHERE x.recipient = ? AND x.rule = ? AND x.window_start = ? ORDER BY x.id
                        """,
                        [.text(window.recipient), .text(window.rule), .integer(window.windowStart.epochMilliseconds)]
                    ) { row in
                        items.append(
                            DigestItem(
                                id: row.integer(0),
                                key: DecisionKey(
                                    eventID: row.text(1) ?? "",
                                    kind: row.text(2) ?? "",
                                    recipient: window.recipient,
                                    eventTime: nil
                                ),
                                payload: row.text(3) ?? "",
                                addedAt: Timestamp(epochMilliseconds: row.integer(4))
                            )
                        )
                    }
                    claimed[index].work = .digest(window, items: items)
                }
                // RETURNING gives rows in no promised order.
                claimed.sort { ($0.dueAt, $0.id) < ($1.dueAt, $1.id) }
                return claimed
            }
        }
    }

    public func complete(_ work: [DueWork]) async throws(StoreError) {
        try await run { connection throws(StoreError) in
            try self.digestTransaction(connection) { () throws(StoreError) in
                // Items collected since the claim keep their digest (below), appended ones too.
                let completesDigest = work.contains {
                    if case .digest = $0.work { true } else { false }
                }
                if completesDigest { try self.digests.fold(connection) }
                for entry in work {
                    if case .digest(let window, let items) = entry.work {
                        let windowValues: [SQLiteConnection.Value] = [
                            .text(window.recipient), .text(window.rule), .integer(window.windowStart.epochMilliseconds),
                        ]
                        for item in items {
                            try connection.query("DELETE FROM digest_items WHERE id = ?", [.integer(item.id)])
                            try connection.query(
                                "DELETE FROM digest_index WHERE recipient = ? AND rule = ? AND window_start = ? AND id = ?",
                                windowValues + [.integer(item.id)]
                            )
                        }
                    }
                    // A digest that collected more since the claim, or a deferral deferred again, stays.
                    try connection.query(
                        """
                        DELETE FROM due_work WHERE id = ? AND claimed_until = ?
                            AND NOT EXISTS (SELECT 1 FROM digest_index i WHERE due_work.type = 'digest'
                                AND i.recipient = due_work.recipient AND i.rule = due_work.rule
                                AND i.window_start = due_work.window_start)
                        """,
                        [.integer(entry.id), .integer(entry.claimedUntil.epochMilliseconds)]
                    )
                    try connection.query(
                        "UPDATE due_work SET claimed_until = NULL WHERE id = ? AND claimed_until = ?",
                        [.integer(entry.id), .integer(entry.claimedUntil.epochMilliseconds)]
                    )
                }
            }
        }
    }

    /// How many times the connection's statements were prepared again (``SQLiteConnection/reprepares``).
    func statementReprepares() async throws(StoreError) -> Int {
        try await run { connection in connection.reprepares }
    }

    public func analyze() async throws(StoreError) {
        try await run { connection throws(StoreError) in try connection.execute("ANALYZE") }
    }

    public func nextDueAt() async throws(StoreError) -> Timestamp? {
        try await run { connection throws(StoreError) in
            var next: Timestamp?
            try connection.query("SELECT min(due_at) FROM due_work WHERE due_at IS NOT NULL") { row in
                if !row.isNull(0) { next = Timestamp(epochMilliseconds: row.integer(0)) }
            }
            return next
        }
    }

    @discardableResult
    public func purge(before: Timestamp) async throws(StoreError) -> Int {
        // Entries decided before `before`, in three parts that together are all of them (migration
        // 11): those decided at or after their event's time happened before `before` too, and are
        // a range of the key — two ranges, as time 0 is where entries without a time are, and an
        // event may have a time before 1970; the others are in `decisions_untimed_by_time`, whose
        // condition the third statement repeats word for word so that SQLite uses it.
        let timed = try await deleteInChunks(
            """
            DELETE FROM decisions WHERE (event_time, event_id, kind, recipient) IN
                (SELECT event_time, event_id, kind, recipient FROM decisions
                 WHERE event_time > 0 AND event_time < ?1 AND decided_at < ?1 LIMIT ?2)
            """,
            before: before
        )
        // Rarely any: a seek to the start of the key finds none.
        let beforeEpoch = try await deleteInChunks(
            """
            DELETE FROM decisions WHERE (event_time, event_id, kind, recipient) IN
                (SELECT event_time, event_id, kind, recipient FROM decisions
                 WHERE event_time < 0 AND decided_at < ?1 LIMIT ?2)
            """,
            before: before
        )
        let untimed = try await deleteInChunks(
            """
            DELETE FROM decisions WHERE (event_time, event_id, kind, recipient) IN
                (SELECT event_time, event_id, kind, recipient FROM decisions
                 WHERE (event_time = 0 OR event_time > decided_at) AND decided_at < ?1 LIMIT ?2)
            """,
            before: before
        )
        let purged = timed + beforeEpoch + untimed
        // Once the entries from before the ledger was keyed by event time are gone, so is the
        // look-up at time 0 that finds them.
        try await run { connection throws(StoreError) in
            try connection.query(
                "DELETE FROM decisions_legacy_horizon WHERE decided_at < ?",
                [.integer(before.epochMilliseconds)]
            )
            // A deleted user's id is kept only as long as a change from before their deletion
            // could still arrive: for the ledger's retention after the deletion was applied.
            try connection.query(
                "DELETE FROM deleted_users WHERE applied_at < ?",
                [.integer(before.epochMilliseconds)]
            )
        }
        try await run { connection throws(StoreError) in
            try self.countingTransaction(connection) { () throws(StoreError) in
                // The ended windows' counts may still be in the journal and in memory.
                try self.throttle.purgeEnded(before: before.epochMilliseconds, connection)
            }
        }
        try await purgeDeadDevices(before: before)
        return purged
    }

    /// Deletes devices whose token a provider invalidated before `before`, then the invalidations
    /// themselves. Dead tokens are a steady stream (an app reinstalled, a phone replaced), and a
    /// dead device was kept for ever, read with its user's devices at every look-up that missed
    /// the cache. An invalidation is needed only while a registration older than it can still
    /// arrive; one that arrives after the purge brings its device back, and the provider's next
    /// answer invalidates it again.
    func purgeDeadDevices(before: Timestamp) async throws(StoreError) {
        while true {
            let deleted = try await run { connection throws(StoreError) in
                try connection.transaction { () throws(StoreError) -> Int in
                    var users = Set<OpaqueID>()
                    var count = 0
                    try connection.query(
                        """
                        DELETE FROM devices WHERE (user_id, device_id) IN
                            (SELECT user_id, device_id FROM devices WHERE invalidated_at < ?1 LIMIT ?2)
                        RETURNING user_id
                        """,
                        [.integer(before.epochMilliseconds), .integer(Int64(purgeChunk))]
                    ) { row in
                        users.insert(OpaqueID(row.text(0) ?? ""))
                        count += 1
                    }
                    for userID in users { self.cache.invalidate(userID) }
                    self.noteCachedUsers()
                    try Self.refreshRecipientRecords(users.map(\.string), connection)
                    return count
                }
            }
            if deleted < purgeChunk { break }
        }
        _ = try await deleteInChunks(
            """
            DELETE FROM invalid_tokens WHERE (provider, token) IN
                (SELECT provider, token FROM invalid_tokens WHERE invalidated_at < ?1 LIMIT ?2)
            """,
            before: before
        )
    }

    /// Runs `delete` (which deletes at most `?2` rows older than `?1`) in its own transaction until
    /// it deletes fewer than ``purgeChunk``: other work gets the connection between chunks.
    func deleteInChunks(_ delete: SQLiteConnection.SQL, before: Timestamp) async throws(StoreError) -> Int {
        var total = 0
        while true {
            let deleted = try await run { connection throws(StoreError) in
                try connection.transaction { () throws(StoreError) in
                    try connection.change(delete, [.integer(before.epochMilliseconds), .integer(Int64(purgeChunk))])
                }
            }
            total += deleted
            if deleted < purgeChunk { return total }
        }
    }
}
