import HeraldEvents
import HeraldPolicy
import PostgresNIO

extension PostgresStore {
    public func decide(_ requests: [DecisionRequest]) async throws(StoreError) -> [Decision] {
        guard !requests.isEmpty else { return [] }
        let batch = Self.encode(requests)
        return try await storeCall("decide") { [self] in
            var decisions: [Decision?] = Array(repeating: nil, count: requests.count)
            let rows = try await client.query("SELECT * FROM herald_decide(\(batch)::jsonb)", logger: logger)
            for try await (index, reasonText, due, redelivered) in rows.decode((Int, String, Int64?, Bool).self) {
                guard requests.indices.contains(index), let reason = DecisionReason(rawValue: reasonText) else {
                    throw StoreError(code: .storeQuery, message: "decide: unexpected row from herald_decide")
                }
                decisions[index] = Decision(
                    key: requests[index].key,
                    reason: reason,
                    dueAt: due.map(Timestamp.init(epochMilliseconds:)),
                    redelivered: redelivered
                )
            }
            try await readRecordedTimes(of: requests, into: &decisions)
            return try decisions.map { decision throws(StoreError) in
                guard let decision else {
                    throw StoreError(code: .storeQuery, message: "decide: herald_decide left a request undecided")
                }
                return decision
            }
        }
    }

    /// Sets each redelivery's ``Decision/recordedAt`` from its ledger entry: a second round trip, for
    /// a batch that has redeliveries only. (Returned by `herald_decide` itself, it would need the
    /// function written out again in a migration; returned by a wrapper function, its per-row loop
    /// ran for every decision, and batches of redeliveries went about a fifth slower than through
    /// `herald_decide`.) The entry is the one `herald_decide`
    /// answered with: at the event's time, or at 0 for one decided before the ledger was keyed by
    /// event time, which it looks for first (migration 5). It may have been decided again since (a
    /// deferral that came due), and then says when that was.
    private func readRecordedTimes(of requests: [DecisionRequest], into decisions: inout [Decision?]) async throws {
        let redelivered = decisions.indices.filter { decisions[$0]?.redelivered == true }
        guard !redelivered.isEmpty else { return }
        var keys = JSONStreamWriter(capacity: redelivered.count * 100)
        keys.beginArray()
        for index in redelivered {
            let key = requests[index].key
            keys.element()
            keys.beginObject()
            keys.member("i", integer: Int64(index))
            keys.member("t", integer: key.storedEventTime)
            keys.member("e", key.eventID)
            keys.member("k", key.kind)
            keys.member("r", key.recipient)
            keys.endObject()
        }
        keys.endArray()
        let text = keys.withBytes { String(decoding: $0, as: UTF8.self) }
        let rows = try await client.query(
            """
            SELECT x.i, (SELECT l.decided_at FROM decisions l
                WHERE l.event_time IN (0, x.t) AND l.event_id = x.e AND l.kind = x.k AND l.recipient = x.r
                ORDER BY l.event_time LIMIT 1)
            FROM jsonb_to_recordset(\(text)::jsonb) AS x(i integer, t bigint, e text, k text, r text)
            """,
            logger: logger
        )
        for try await (index, time) in rows.decode((Int, Int64?).self) where decisions.indices.contains(index) {
            decisions[index]?.recordedAt = time.map(Timestamp.init(epochMilliseconds:))
        }
    }

    /// The batch in `herald_decide`'s shape: each request with its plan's outcome and limits.
    static func encode(_ requests: [DecisionRequest]) -> String {
        var json = JSONStreamWriter(capacity: requests.count * 300)
        func outcome(_ outcome: PolicyOutcome) {
            json.member("reason", outcome.reason.rawValue)
            json.key("due")
            if let due = outcome.dueAt { json.integer(due.epochMilliseconds) } else { json.null() }
            switch outcome.heldEffect {
            case .none: json.member("fx", "none")
            case .digest: json.member("fx", "digest")
            case .schedule: json.member("fx", "schedule")
            }
        }
        json.beginArray()
        for (index, request) in requests.enumerated() {
            json.element()
            json.beginObject()
            json.member("i", integer: Int64(index))
            json.member("t", integer: request.key.storedEventTime)
            json.member("e", request.key.eventID)
            json.member("k", request.key.kind)
            json.member("r", request.key.recipient)
            json.member("at", integer: request.decidedAt.epochMilliseconds)
            json.member("p", request.payload)
            json.key("res")
            json.bool(request.resumesDeferral)
            outcome(request.plan.outcome)
            json.key("limits")
            json.beginArray()
            for limit in request.plan.limits {
                json.element()
                json.beginObject()
                json.member("rule", limit.key.rule)
                json.member("ws", integer: limit.key.windowStart.epochMilliseconds)
                json.member("we", integer: limit.windowEnd.epochMilliseconds)
                json.member("n", integer: Int64(limit.limit))
                outcome(limit.overLimit)
                json.endObject()
            }
            json.endArray()
            json.endObject()
        }
        json.endArray()
        return String(decoding: json.bytes, as: UTF8.self)
    }

    public func claimDue(now: Timestamp, limit: Int, lease: Duration) async throws(StoreError) -> [DueWork] {
        let nowMilliseconds = now.epochMilliseconds
        let until = now.epochMilliseconds + lease.milliseconds
        // A claim cut off by its deadline may still commit, and then holds its rows for the lease
        // with no one working on them: give up on a claim only after as long as the lease.
        return try await storeCall("claim due work", timeout: max(callTimeout, lease)) { [self] in
            // SKIP LOCKED: concurrent claimers each take different rows instead of waiting on each other.
            let rows = try await client.query(
                """
                WITH claimed AS (
                    UPDATE due_work w SET claimed_until = \(until)
                    FROM (SELECT id FROM due_work
                          WHERE due_at <= \(nowMilliseconds) AND (claimed_until IS NULL OR claimed_until <= \(nowMilliseconds))
                          ORDER BY due_at, id LIMIT \(limit) FOR UPDATE SKIP LOCKED) c
                    WHERE w.id = c.id
                    RETURNING w.id, w.type, w.due_at, w.recipient, w.event_id, w.kind, w.rule, w.window_start, w.payload,
                        w.event_time)
                SELECT c.id, c.type, c.due_at, c.recipient, c.event_id, c.kind, c.rule, c.window_start, c.payload,
                    i.id, i.event_id, i.kind, i.payload, i.added_at, c.event_time
                FROM claimed c LEFT JOIN digest_items i ON c.type = 'digest' AND i.recipient = c.recipient
                    AND i.rule = c.rule AND i.window_start = c.window_start
                ORDER BY c.due_at, c.id, i.id
                """,
                logger: logger
            )
            var claimed: [DueWork] = []
            for try await row in rows {
                let (id, type, dueAt, recipient, eventID, kind, rule, windowStart, payload) = try row.decode(
                    (Int64, String, Int64, String, String?, String?, String?, Int64?, String?).self
                )
                if type == "digest" {
                    let (_, _, _, _, _, _, _, _, _, itemID, itemEvent, itemKind, itemPayload, addedAt) =
                        try row.decode(
                            (
                                Int64, String, Int64, String, String?, String?, String?, Int64?, String?, Int64?,
                                String?, String?, String?, Int64?
                            ).self
                        )
                    let window = ThrottleKey(
                        recipient: recipient,
                        rule: rule ?? "",
                        windowStart: Timestamp(epochMilliseconds: windowStart ?? 0)
                    )
                    if claimed.last?.id != id {
                        claimed.append(
                            DueWork(
                                id: id,
                                dueAt: Timestamp(epochMilliseconds: dueAt),
                                work: .digest(window, items: []),
                                claimedUntil: Timestamp(epochMilliseconds: until)
                            )
                        )
                    }
                    if let itemID, case .digest(let window, var items) = claimed[claimed.count - 1].work {
                        items.append(
                            DigestItem(
                                id: itemID,
                                key: DecisionKey(
                                    eventID: itemEvent ?? "",
                                    kind: itemKind ?? "",
                                    recipient: recipient,
                                    eventTime: nil
                                ),
                                payload: itemPayload ?? "",
                                addedAt: Timestamp(epochMilliseconds: addedAt ?? 0)
                            )
                        )
                        claimed[claimed.count - 1].work = .digest(window, items: items)
                    }
                } else {
                    let (_, _, _, _, _, _, _, _, _, _, _, _, _, _, eventTime) = try row.decode(
                        (
                            Int64, String, Int64, String, String?, String?, String?, Int64?, String?, Int64?, String?,
                            String?, String?, Int64?, Int64
                        ).self
                    )
                    claimed.append(
                        DueWork(
                            id: id,
                            dueAt: Timestamp(epochMilliseconds: dueAt),
                            work: .deferred(
                                DecisionKey(
                                    eventID: eventID ?? "",
                                    kind: kind ?? "",
                                    recipient: recipient,
                                    storedTime: eventTime
                                ),
                                payload: payload ?? ""
                            ),
                            claimedUntil: Timestamp(epochMilliseconds: until)
                        )
                    )
                }
            }
            return claimed
        }
    }

    public func complete(_ work: [DueWork]) async throws(StoreError) {
        guard !work.isEmpty else { return }
        let ids = work.map(\.id)
        let claims = work.map(\.claimedUntil.epochMilliseconds)
        let itemIDs = work.flatMap { entry -> [Int64] in
            guard case .digest(_, let items) = entry.work else { return [] }
            return items.map(\.id)
        }
        try await storeCall("complete due work") { [self] in
            // One statement (every data-modifying WITH part runs, and all see the same snapshot, hence
            // the item ids excluded by hand): the items handed out go; a digest that collected more since the claim, or
            // a deferral deferred again (its claim was cleared), stays.
            try await client.query(
                """
                WITH done_items AS (DELETE FROM digest_items WHERE id = ANY(\(itemIDs)::bigint[]) RETURNING id),
                claims AS (SELECT * FROM unnest(\(ids)::bigint[], \(claims)::bigint[]) AS c(id, claimed_until)),
                finished AS (
                    DELETE FROM due_work w USING claims c
                    WHERE w.id = c.id AND w.claimed_until = c.claimed_until AND NOT EXISTS (
                        SELECT 1 FROM digest_items i WHERE w.type = 'digest' AND i.recipient = w.recipient
                            AND i.rule = w.rule AND i.window_start = w.window_start
                            AND i.id <> ALL(\(itemIDs)::bigint[]))
                    RETURNING w.id)
                UPDATE due_work w SET claimed_until = NULL FROM claims c
                WHERE w.id = c.id AND w.claimed_until = c.claimed_until AND w.id NOT IN (SELECT id FROM finished)
                """,
                logger: logger
            )
        }
    }

    public func analyze() async throws(StoreError) {
        try await storeCall("analyze", timeout: .seconds(300)) { [self] in
            try await client.query("ANALYZE", logger: logger)
        }
    }

    public func nextDueAt() async throws(StoreError) -> Timestamp? {
        try await storeCall("next due") { [self] in
            var next: Timestamp?
            for try await (dueAt, ) in try await client.query("SELECT min(due_at) FROM due_work", logger: logger)
                .decode((Int64?,).self)
            {
                next = dueAt.map { Timestamp(epochMilliseconds: $0) }
            }
            return next
        }
    }

    @discardableResult
    public func purge(before: Timestamp) async throws(StoreError) -> Int {
        let purged = try await deleteInChunks("purge decisions", from: "decisions", olderThan: "decided_at", before)
        _ = try await deleteInChunks(
            "purge throttle windows",
            from: "throttle_windows",
            olderThan: "window_end",
            before
        )
        // Once the entries from before the ledger was keyed by event time are gone, so is the
        // look-up at time 0 that finds them.
        _ = try await deleteInChunks(
            "purge the ledger's legacy horizon",
            from: "decisions_legacy_horizon",
            olderThan: "decided_at",
            before
        )
        // A deleted user's id is kept only as long as a change from before their deletion could
        // still arrive: for the ledger's retention after the deletion was applied.
        _ = try await deleteInChunks("purge deleted users", from: "deleted_users", olderThan: "applied_at", before)
        // Devices whose token died before `before`, then the invalidations (see
        // SQLiteStore.purgeDeadDevices): in that order, as a device is dead only while its
        // invalidation is there to say so.
        _ = try await deleteInChunks(
            "purge dead devices",
            from: "devices",
            chosenBy: """
                SELECT d.ctid FROM invalid_tokens i JOIN devices d ON d.provider = i.provider AND d.token = i.token
                WHERE i.invalidated_at < $1 AND i.invalidated_at >= d.registered_at LIMIT $2 FOR UPDATE OF d SKIP LOCKED
                """,
            before
        )
        _ = try await deleteInChunks(
            "purge invalid tokens",
            from: "invalid_tokens",
            olderThan: "invalidated_at",
            before
        )
        return purged
    }

    /// Deletes the rows of `table` whose `column` is before `before`, at most ``purgeChunk`` per
    /// statement, until none is left. Rows another transaction holds (another worker's purge) are
    /// skipped, not waited for.
    func deleteInChunks(
        _ operation: String,
        from table: String,
        olderThan column: String,
        _ before: Timestamp
    ) async throws(StoreError) -> Int {
        try await deleteInChunks(
            operation,
            from: table,
            chosenBy: "SELECT ctid FROM \(table) WHERE \(column) < $1 LIMIT $2 FOR UPDATE SKIP LOCKED",
            before
        )
    }

    /// Deletes the rows of `table` that `choice` selects (their `ctid`, at most `$2` of them, given
    /// `before` as `$1`), one statement after another until one deletes fewer than ``purgeChunk``.
    func deleteInChunks(
        _ operation: String,
        from table: String,
        chosenBy choice: String,
        _ before: Timestamp
    ) async throws(StoreError) -> Int {
        var total = 0
        while true {
            let deleted = try await storeCall(operation, timeout: .seconds(300)) { [self] in
                var binds = PostgresBindings()
                binds.append(before.epochMilliseconds)
                binds.append(Int64(purgeChunk))
                // `table` and `choice` are this file's constants, never input.
                let query = PostgresQuery(
                    unsafeSQL: """
                        WITH doomed AS (\(choice)),
                            gone AS (DELETE FROM \(table) WHERE ctid = ANY (ARRAY(SELECT ctid FROM doomed)) RETURNING 1)
                        SELECT count(*) FROM gone
                        """,
                    binds: binds
                )
                var count = 0
                for try await (rows, ) in try await client.query(query, logger: logger).decode((Int64,).self) {
                    count = Int(rows)
                }
                return count
            }
            total += deleted
            if deleted < purgeChunk { return total }
        }
    }
}
