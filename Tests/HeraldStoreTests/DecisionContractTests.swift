import HeraldEvents
import HeraldPolicy
import HeraldTestSupport
import Testing

@testable import HeraldStore

/// A request for `event` to `recipient`, planned by `policy` at `now`.
func request(
    _ event: String,
    policy: Policy = .defaults,
    kind: String = "message.received",
    category: String = "messages",
    recipient: String = "ana",
    preferences: Preferences = Preferences(),
    devices: Int = 1,
    expiresAt: Timestamp? = nil,
    now: Timestamp,
    eventTime: Timestamp? = nil,
    resuming: Bool = false
) -> DecisionRequest {
    let input = Policy.Input(
        kind: kind,
        category: category,
        recipient: recipient,
        deviceCount: devices,
        preferences: preferences,
        expiresAt: expiresAt
    )
    return DecisionRequest(
        key: DecisionKey(eventID: event, kind: kind, recipient: recipient, eventTime: eventTime),
        plan: policy.plan(input, now: now),
        decidedAt: now,
        payload: #"{"id":"\#(event)"}"#,
        resumesDeferral: resuming
    )
}

/// Messages: 2 per minute, then a digest. Small numbers keep the tests readable.
let tightMessages = Policy(categories: [
    "messages": CategoryPolicy(
        throttle: [ThrottleRule(name: "messages", limit: 2, window: .seconds(60), overLimit: .digest)]
    ),
    "marketing": CategoryPolicy(
        enabledByDefault: false,
        quietHours: .drop,
        throttle: [ThrottleRule(name: "marketing", limit: 3, window: .seconds(7 * 86_400), overLimit: .drop)]
    ),
    "transactional": CategoryPolicy(
        throttle: [ThrottleRule(name: "receipts", limit: 1, window: .seconds(60), overLimit: .defer, kind: "receipt")]
    ),
])

@Suite("Store contract: decisions")
struct DecisionContractTests {
    let noon = at("2026-11-21T12:00:00Z")

    @Test("a request made without its event keeps none: its payload is empty and it resumes nothing")
    func requestWithoutPayload() {
        // A category without throttles: the default policy's messages are throttled, and may digest.
        let planned = request("e-plain", policy: tightMessages, category: "other", now: noon)
        #expect(!planned.plan.mayLeaveWorkDue)
        let bare = DecisionRequest(key: planned.key, plan: planned.plan, decidedAt: noon)
        #expect(bare.payload == "")
        #expect(!bare.resumesDeferral)
        #expect(planned.payload == #"{"id":"e-plain"}"#)
    }

    @Test("only a deferral or a throttle limit may leave work due, and so needs the event kept")
    func whichPlansMayLeaveWorkDue() {
        let night = Preferences(quietHours: QuietHours(start: "22:00", end: "08:00", timeZone: "Europe/Oslo"))
        let late = at("2026-11-21T22:30:00Z")  // 23:30 in Oslo
        // Deferred to the end of quiet hours, with no throttle of its own.
        let deferred = request(
            "e-quiet",
            policy: tightMessages,
            category: "transactional",
            preferences: night,
            now: late
        ).plan
        #expect(deferred.outcome.dueAt != nil && deferred.limits.isEmpty)
        #expect(deferred.mayLeaveWorkDue)
        // Sent now, but counted against a window that may digest what comes after it.
        let limited = request("e-limited", policy: tightMessages, now: noon).plan
        #expect(limited.outcome.dueAt == nil && !limited.limits.isEmpty)
        #expect(limited.mayLeaveWorkDue)
        // Sent now in a category without throttles: final once decided.
        #expect(!request("e-free", policy: tightMessages, category: "other", now: noon).plan.mayLeaveWorkDue)
        // Suppressed: final too.
        let off = Preferences(pushEnabled: false)
        #expect(!request("e-off", policy: tightMessages, preferences: off, now: noon).plan.mayLeaveWorkDue)
    }

    @Test("every reason the store records, each with what it leaves behind", arguments: StoreKind.allCases)
    func reasons(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let night = Preferences(
                categories: ["marketing": true],
                quietHours: QuietHours(start: "22:00", end: "08:00", timeZone: "Europe/Oslo")
            )
            let late = at("2026-11-21T22:30:00Z")  // 23:30 in Oslo
            let decisions = try await store.decide([
                request("e1", policy: tightMessages, now: noon),
                request("e2", policy: tightMessages, preferences: Preferences(pushEnabled: false), now: noon),
                request("e3", policy: tightMessages, category: "marketing", preferences: night, now: late),
                request("e4", policy: tightMessages, category: "transactional", preferences: night, now: late),
                request("e5", policy: tightMessages, devices: 0, now: noon),
                request("e6", policy: tightMessages, expiresAt: noon, now: noon),
                request("e7", policy: tightMessages, now: noon),
                request("e8", policy: tightMessages, now: noon),
                request("e9", policy: tightMessages, kind: "receipt", category: "transactional", now: noon),
                request("e10", policy: tightMessages, kind: "receipt", category: "transactional", now: noon),
                request("e1", policy: tightMessages, now: noon),
            ])
            #expect(
                decisions.map(\.label) == [
                    .sent, .suppressedPreference, .suppressedQuietHours, .deferredQuietHours, .noDevices, .expired,
                    .sent, .throttledDigested, .sent, .deferredThrottle, .duplicate,
                ]
            )
            #expect(decisions[3].dueAt == at("2026-11-22T07:00:00Z"))
            // The digest goes out Policy.digestGrace (30 s) after the window; the throttled receipt at its end.
            #expect(decisions[7].dueAt == at("2026-11-21T12:01:30Z"))
            #expect(decisions[9].dueAt == at("2026-11-21T12:01:00Z"))
            #expect(decisions[10].reason == .sent && decisions[10].redelivered)

            // Due work: the throttled receipt at 12:01, the digest at 12:01:30, the quiet-hours deferral at 07:00.
            #expect(try await store.claimDue(now: at("2026-11-21T12:00:59Z"), limit: 10, lease: .seconds(60)).isEmpty)
            let due = try await store.claimDue(now: at("2026-11-22T07:00:00Z"), limit: 10, lease: .seconds(60))
            #expect(due.count == 3)
            #expect(
                due.map(\.dueAt) == [
                    at("2026-11-21T12:01:00Z"), at("2026-11-21T12:01:30Z"), at("2026-11-22T07:00:00Z"),
                ]
            )
            let digest = due.compactMap { work -> [DigestItem]? in
                if case .digest(_, let items) = work.work { items } else { nil }
            }
            #expect(digest.count == 1)
            #expect(digest.first?.map(\.key.eventID) == ["e8"])
            #expect(digest.first?.first?.payload == #"{"id":"e8"}"#)
            let deferred = due.compactMap { work -> DecisionKey? in
                if case .deferred(let key, _) = work.work { key } else { nil }
            }
            #expect(Set(deferred.map(\.eventID)) == ["e4", "e10"])
        }
    }

    @Test(
        "a notification a later limit holds back counts against none of the limits before it",
        arguments: StoreKind.allCases
    )
    func heldBackByLaterLimit(_ kind: StoreKind) async throws {
        let twoLimits = Policy(categories: [
            "messages": CategoryPolicy(throttle: [
                ThrottleRule(name: "hourly", limit: 2, window: .seconds(3600), overLimit: .drop),
                ThrottleRule(name: "burst", limit: 1, window: .seconds(60), overLimit: .drop),
            ])
        ])
        try await withStore(kind) { store in
            let first = try await store.decide([
                request("m1", policy: twoLimits, now: noon),
                request("m2", policy: twoLimits, now: noon),
            ])
            #expect(first.map(\.label) == [.sent, .throttledDropped])
            // m2 was dropped by the burst limit, so the hourly window holds one: the next minute
            // has room for one more, and then the hour is full.
            let second = try await store.decide([
                request("m3", policy: twoLimits, now: at("2026-11-21T12:01:05Z")),
                request("m4", policy: twoLimits, now: at("2026-11-21T12:02:10Z")),
            ])
            #expect(second.map(\.label) == [.sent, .throttledDropped])
        }
    }

    @Test("the same events decided again give identical decisions and count once", arguments: StoreKind.allCases)
    func redelivery(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let optedIn = Preferences(categories: ["marketing": true])
            func batch(_ events: [String]) -> [DecisionRequest] {
                events.map {
                    request($0, policy: tightMessages, category: "marketing", preferences: optedIn, now: noon)
                }
            }
            let first = try await store.decide(batch(["m1", "m2"]))
            // A crash before the offsets were committed: the same events come again.
            let again = try await store.decide(batch(["m1", "m2"]))
            #expect(first.map(\.reason) == [.sent, .sent])
            #expect(again.map(\.reason) == first.map(\.reason))
            #expect(again.allSatisfy(\.redelivered) && !first.contains(where: \.redelivered))
            // The limit is 3: had the redelivery counted, m3 would be dropped.
            #expect(try await store.decide(batch(["m3", "m4"])).map(\.reason) == [.sent, .throttledDropped])
            #expect(try await store.decide(batch(["m4"])).map(\.label) == [.duplicate])
            #expect(try await store.decide(batch(["m4"])).map(\.reason) == [.throttledDropped])
        }
    }

    @Test(
        "digests: collected over the limit, due just after the window's end, handed out once",
        arguments: StoreKind.allCases
    )
    func digests(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            #expect(try await store.nextDueAt() == nil)
            let events = (1...6).map { request("d\($0)", policy: tightMessages, now: noon) }
            let decided = try await store.decide(events)
            #expect(decided.map(\.reason) == [.sent, .sent] + Array(repeating: .throttledDigested, count: 4))
            // Another recipient's window is separate.
            #expect(
                try await store.decide([request("b1", policy: tightMessages, recipient: "ben", now: noon)])[0].reason
                    == .sent
            )

            // The window ends at 12:01; its digest is due Policy.digestGrace (30 s) later.
            let flushAt = at("2026-11-21T12:01:30Z")
            // Replay steps its clock to the next due time.
            #expect(try await store.nextDueAt() == flushAt)
            #expect(try await store.claimDue(now: at("2026-11-21T12:01:29Z"), limit: 10, lease: .seconds(30)).isEmpty)
            let claimed = try await store.claimDue(now: flushAt, limit: 10, lease: .seconds(30))
            #expect(claimed.count == 1)
            guard case .digest(let window, let items)? = claimed.first?.work else {
                Issue.record("expected one digest, got \(claimed)")
                return
            }
            #expect(window.recipient == "ana" && window.rule == "messages")
            #expect(items.map(\.key.eventID) == ["d3", "d4", "d5", "d6"])
            // Claimed: nobody else gets it while the lease lasts.
            #expect(try await store.claimDue(now: flushAt, limit: 10, lease: .seconds(30)).isEmpty)
            try await store.complete(claimed)
            #expect(try await store.nextDueAt() == nil)
            // Done: not handed out again, even after the lease would have run out.
            #expect(try await store.claimDue(now: at("2026-11-21T13:00:00Z"), limit: 10, lease: .seconds(30)).isEmpty)
        }
    }

    /// Three messages to ana at noon, one over the limit: their digest, claimed when it comes due
    /// (at the window's end, plus Policy.digestGrace).
    private func claimedDigest(
        _ store: any StateStore,
        ids prefix: String
    ) async throws -> (flushAt: Timestamp, claimed: [DueWork]) {
        _ = try await store.decide((1...3).map { request("\(prefix)\($0)", policy: tightMessages, now: noon) })
        let flushAt = at("2026-11-21T12:01:30Z")
        let claimed = try await store.claimDue(now: flushAt, limit: 10, lease: .seconds(30))
        #expect(claimed.count == 1)
        return (flushAt, claimed)
    }

    @Test(
        "a digest that collects more while it is claimed stays, and comes due again with only what came since",
        arguments: StoreKind.allCases
    )
    func digestGrowsWhileClaimed(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let (flushAt, claimed) = try await claimedDigest(store, ids: "g")
            // A worker whose clock is behind adds to the same window meanwhile.
            let late = try await store.decide([
                request("g4", policy: tightMessages, now: at("2026-11-21T12:00:59Z"))
            ])
            #expect(late.map(\.reason) == [.throttledDigested])
            try await store.complete(claimed)
            #expect(try await store.nextDueAt() == flushAt)
            let again = try await store.claimDue(now: flushAt, limit: 10, lease: .seconds(30))
            guard case .digest(_, let items)? = again.first?.work, again.count == 1 else {
                Issue.record("expected the digest again, got \(again)")
                return
            }
            #expect(items.map(\.key.eventID) == ["g4"])
            try await store.complete(again)
            #expect(try await store.nextDueAt() == nil)
        }
    }

    @Test("a claim whose holder crashed comes back when its lease runs out", arguments: StoreKind.allCases)
    func leaseExpiry(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let (_, first) = try await claimedDigest(store, ids: "x")
            #expect(try await store.claimDue(now: at("2026-11-21T12:01:59Z"), limit: 10, lease: .seconds(30)).isEmpty)
            let retaken = try await store.claimDue(now: at("2026-11-21T12:02:00Z"), limit: 10, lease: .seconds(30))
            #expect(retaken.map(\.id) == first.map(\.id))
            // The crashed holder's late completion does not remove the new claim's work.
            try await store.complete(first)
            #expect(
                try await store.claimDue(now: at("2026-11-21T12:03:00Z"), limit: 10, lease: .seconds(30)).count == 1
            )
        }
    }

    @Test(
        "a redelivery tells when it was first decided (the ledger's time), throttled too, inside a batch's 64-entry inserts and alone",
        arguments: StoreKind.allCases
    )
    func redeliveryTime(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let later = at("2026-11-21T12:30:00Z")
            func messages(_ numbers: ClosedRange<Int>, at now: Timestamp) -> [DecisionRequest] {
                numbers.map { request("m\($0)", policy: tightMessages, now: now, eventTime: noon) }
            }
            // The minute's limit is 2: the third is digested.
            let first = try await store.decide(messages(1...3, at: noon))
            #expect(first.map(\.label) == [.sent, .sent, .throttledDigested])
            #expect(first.allSatisfy { $0.recordedAt == nil })
            // Redelivered half an hour later among new ones: SQLite's first 64-entry insert meets
            // them, is taken back, and each is decided on its own.
            let again = try await store.decide(messages(1...70, at: later))
            #expect(again.prefix(3).map(\.label) == [.duplicate, .duplicate, .duplicate])
            #expect(again.prefix(3).map(\.reason) == first.map(\.reason))
            #expect(again.prefix(3).map(\.recordedAt) == [noon, noon, noon])
            #expect(again.dropFirst(3).allSatisfy { !$0.redelivered && $0.recordedAt == nil })
            let alone = try await store.decide(messages(70...70, at: at("2026-11-21T13:00:00Z")))
            #expect(alone.map(\.label) == [.duplicate])
            #expect(alone.map(\.recordedAt) == [later])
        }
    }

    @Test(
        "an event is its id and its own time: redelivered it is a duplicate, the same id at another time is decided anew, one without a time is told by its id",
        arguments: StoreKind.allCases
    )
    func eventTimeIdentity(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let first = at("2026-11-21T11:59:00Z")
            let second = at("2026-11-21T11:59:01Z")
            func decide(_ event: String, _ time: Timestamp?) async throws -> Decision {
                try await store.decide([request(event, category: "transactional", now: noon, eventTime: time)])[0]
            }
            #expect(try await decide("t1", first).label == .sent)
            let redelivered = try await decide("t1", first)
            #expect(redelivered.label == .duplicate && redelivered.key.eventTime == first)
            let republished = try await decide("t1", second)
            #expect(republished.label == .sent && !republished.redelivered)
            #expect(try await decide("n1", nil).label == .sent)
            #expect(try await decide("n1", nil).label == .duplicate)
            #expect(try await decide("n1", first).label == .sent, "a time makes it another event")

            // A deferral keeps its event's time: it comes due with it and resumes its own entry.
            let night = Preferences(quietHours: QuietHours(start: "22:00", end: "08:00", timeZone: "Europe/Oslo"))
            let late = at("2026-11-21T22:30:00Z")
            let deferral = request(
                "q1",
                category: "transactional",
                preferences: night,
                now: late,
                eventTime: late
            )
            #expect(try await store.decide([deferral]).map(\.label) == [.deferredQuietHours])
            let morning = at("2026-11-22T07:00:00Z")
            let due = try await store.claimDue(now: morning, limit: 10, lease: .seconds(60))
            guard case .deferred(let key, _)? = due.first?.work else {
                Issue.record("expected the deferral, got \(due)")
                return
            }
            #expect(key == deferral.key)
            var resumed = request("q1", category: "transactional", preferences: night, now: morning, resuming: true)
            resumed.key = key
            #expect(try await store.decide([resumed]).map(\.label) == [.sent])
            let again = try await decide("q1", late)
            #expect(again.label == .duplicate, "the resumed entry answers a redelivery")
            #expect(again.recordedAt == morning, "decided (and counted) when it resumed")
        }
    }

    @Test("SQLite: entries decided before the ledger was keyed by event time still answer redeliveries until purged")
    func legacyLedgerSQLite() async throws {
        let connection = try SQLiteConnection(path: ":memory:")
        try SQLiteStore.migrate(connection, to: 9)
        try connection.execute(
            """
            INSERT INTO decisions VALUES ('old-1', 'message.received', 'ana', 'sent', NULL, \(noon.epochMilliseconds));
            INSERT INTO due_work (type, due_at, recipient, event_id, kind, payload)
                VALUES ('deferred', \(noon.epochMilliseconds), 'ana', 'old-2', 'message.received', '{"id":"old-2"}');
            INSERT INTO decisions VALUES ('old-2', 'message.received', 'ana', 'deferred.quiet_hours', \(noon.epochMilliseconds), 0);
            """
        )
        let store = try SQLiteStore(connection: connection)
        try await legacyLedger(store) { count in
            try connection.query("SELECT count(*) FROM decisions_legacy_horizon") { count = Int($0.integer(0)) }
        }
    }

    @Test(
        "PostgreSQL: entries decided before the ledger was keyed by event time still answer redeliveries until purged"
    )
    func legacyLedgerPostgres() async throws {
        try await withPostgresStore { store in
            // What migration 5 leaves of a version 4 ledger: entries at time 0, and their horizon.
            try await insertLedgerAtTimeZero(store)
            try await store.client.query(
                "INSERT INTO decisions_legacy_horizon VALUES (\(noon.epochMilliseconds))"
            )
            try await legacyLedger(store) { try await horizonRows(store, &$0) }
        }
    }

    /// `old-1` decided at noon and `old-2` deferred until noon, both at time 0 (and `timed`, at
    /// its time, if asked for), as ``legacyLedger(_:horizonRows:)`` expects them.
    private func insertLedgerAtTimeZero(_ store: PostgresStore, timed: Bool = false) async throws {
        let noon = noon.epochMilliseconds
        try await store.client.query(
            """
            INSERT INTO decisions (event_time, event_id, kind, recipient, reason, due_at, decided_at) VALUES
                (0, 'old-1', 'message.received', 'ana', 'sent', NULL, \(noon)),
                (0, 'old-2', 'message.received', 'ana', 'deferred.quiet_hours', \(noon), 0)
            """
        )
        if timed {
            try await store.client.query(
                """
                INSERT INTO decisions (event_time, event_id, kind, recipient, reason, due_at, decided_at)
                VALUES (\(noon), 'timed', 'message.received', 'ana', 'sent', NULL, \(noon))
                """
            )
        }
        try await store.client.query(
            """
            INSERT INTO due_work (type, due_at, recipient, event_time, event_id, kind, payload)
            VALUES ('deferred', \(noon), 'ana', 0, 'old-2', 'message.received', '{"id":"old-2"}')
            """
        )
    }

    private func horizonRows(_ store: PostgresStore, _ count: inout Int) async throws {
        for try await (rows, ) in try await store.client.query(
            "SELECT count(*) FROM decisions_legacy_horizon"
        ).decode((Int64,).self) {
            count = Int(rows)
        }
    }

    @Test(
        "SQLite: entries of events without a time, decided at time 0, answer redeliveries keyed by their record's time until purged"
    )
    func untimedLedgerSQLite() async throws {
        let connection = try SQLiteConnection(path: ":memory:")
        try SQLiteStore.migrate(connection, to: 14)
        try connection.execute(
            """
            INSERT INTO decisions VALUES (0, 'old-1', 'message.received', 'ana', 'sent', NULL, \(noon.epochMilliseconds));
            INSERT INTO decisions VALUES (\(noon.epochMilliseconds), 'timed', 'message.received', 'ana', 'sent', NULL, \(noon.epochMilliseconds));
            INSERT INTO due_work (type, due_at, recipient, event_time, event_id, kind, payload)
                VALUES ('deferred', \(noon.epochMilliseconds), 'ana', 0, 'old-2', 'message.received', '{"id":"old-2"}');
            INSERT INTO decisions VALUES (0, 'old-2', 'message.received', 'ana', 'deferred.quiet_hours', \(noon.epochMilliseconds), 0);
            """
        )
        let store = try SQLiteStore(connection: connection)
        try await legacyLedger(store) { count in
            try connection.query("SELECT count(*) FROM decisions_legacy_horizon") { count = Int($0.integer(0)) }
        }

        // A ledger with no entry at time 0 gets no horizon, and so no look-up at time 0.
        let timedOnly = try SQLiteConnection(path: ":memory:")
        try SQLiteStore.migrate(timedOnly, to: 14)
        try timedOnly.execute(
            "INSERT INTO decisions VALUES (\(noon.epochMilliseconds), 'timed', 'message.received', 'ana', 'sent', NULL, \(noon.epochMilliseconds));"
        )
        _ = try SQLiteStore(connection: timedOnly)
        var horizons = -1
        try timedOnly.query("SELECT count(*) FROM decisions_legacy_horizon") { horizons = Int($0.integer(0)) }
        #expect(horizons == 0)
    }

    @Test(
        "PostgreSQL: entries of events without a time, decided at time 0, answer redeliveries keyed by their record's time until purged"
    )
    func untimedLedgerPostgres() async throws {
        try await withPostgresStore { store in
            // A version 9 ledger with entries of events without a time at time 0 and one with a
            // time; migration 10 then runs again.
            try await insertLedgerAtTimeZero(store, timed: true)
            var before = -1
            try await horizonRows(store, &before)
            #expect(before == 0, "the rows above came after the migration")
            try await store.client.query("UPDATE herald_schema_version SET version = 9")
            try await store.migrate()
            #expect(try await store.schemaVersion() == PostgresSchema.migrations.count)
            try await legacyLedger(store) { try await horizonRows(store, &$0) }
        }
    }

    /// An entry `old-1` decided at noon before the upgrade, and `old-2` deferred until noon.
    private func legacyLedger(
        _ store: any StateStore,
        horizonRows: (inout Int) async throws -> Void
    ) async throws {
        let eventTime = at("2026-11-21T11:59:00Z")
        let redelivered = try await store.decide([request("old-1", now: noon, eventTime: eventTime)])
        #expect(redelivered.map(\.label) == [.duplicate], "the entry at time 0 answers")
        #expect(redelivered.map(\.recordedAt) == [noon], "with its own time")
        // The deferral from before the upgrade comes due with no time, and resumes its entry.
        let due = try await store.claimDue(now: noon, limit: 10, lease: .seconds(60))
        guard case .deferred(let key, _)? = due.first?.work else {
            Issue.record("expected the deferral, got \(due)")
            return
        }
        #expect(key.eventID == "old-2" && key.eventTime == nil)
        var resumed = request("old-2", now: noon, resuming: true)
        resumed.key = key
        #expect(try await store.decide([resumed]).map(\.label) == [.sent])
        #expect(
            try await store.decide([request("old-2", now: noon, eventTime: eventTime)]).map(\.label) == [.duplicate]
        )

        var count = 0
        try await horizonRows(&count)
        #expect(count == 1)
        // A purge that leaves nothing from before the upgrade ends the look-up at time 0.
        _ = try await store.purge(before: Timestamp(epochMilliseconds: noon.epochMilliseconds + 1))
        try await horizonRows(&count)
        #expect(count == 0)
        let after = Timestamp(epochMilliseconds: noon.epochMilliseconds + 60_000)
        #expect(try await store.decide([request("old-1", now: after, eventTime: eventTime)]).map(\.label) == [.sent])
    }

    @Test(
        "a large batch decides as its requests one at a time do: redeliveries and a key twice among new ones, limits, digests and deferrals",
        arguments: StoreKind.allCases
    )
    func largeBatchAsOneAtATime(_ kind: StoreKind) async throws {
        let optedIn = Preferences(categories: ["marketing": true])
        func mixed(_ index: Int) -> DecisionRequest {
            let recipient = "r\(index % 7)"
            return switch index % 3 {
            case 0: request("e\(index)", policy: tightMessages, recipient: recipient, now: noon, eventTime: noon)
            case 1:
                request(
                    "e\(index)",
                    policy: tightMessages,
                    kind: "promo",
                    category: "marketing",
                    recipient: recipient,
                    preferences: optedIn,
                    now: noon
                )
            default:
                request(
                    "e\(index)",
                    policy: tightMessages,
                    kind: "receipt",
                    category: "transactional",
                    recipient: recipient,
                    now: noon,
                    eventTime: noon
                )
            }
        }
        // Decided in an earlier batch, so redelivered inside the large one's 64-entry inserts.
        let earlier = [3, 20, 70, 100, 131].map(mixed)
        // 150 requests (64 + 64 + 16 + 4 + 2 single), with e5 again at 40 and e130 again at 147.
        var batch = (0..<150).map(mixed)
        batch[40] = mixed(5)
        batch[147] = mixed(130)

        func decided(oneAtATime: Bool) async throws -> (first: [Decision], again: [Decision], due: [DueWork.Work]) {
            try await withStore(kind) { store in
                _ = try await store.decide(earlier)
                var first: [Decision] = []
                if oneAtATime {
                    for request in batch { first += try await store.decide([request]) }
                } else {
                    first = try await store.decide(batch)
                }
                let again = try await store.decide(batch)
                let due = try await store.claimDue(now: at("2026-12-31T00:00:00Z"), limit: 1000, lease: .seconds(60))
                return (first, again, due.map(\.work))
            }
        }
        let together = try await decided(oneAtATime: false)
        let alone = try await decided(oneAtATime: true)
        #expect(together.first == alone.first)
        #expect(together.again == alone.again)
        #expect(Set(together.due) == Set(alone.due))
        // The batch must have met every case, or the comparison above proves less than it says.
        let labels = Set(together.first.map(\.label))
        #expect(labels.isSuperset(of: [.sent, .duplicate, .throttledDigested, .throttledDropped, .deferredThrottle]))
        #expect(together.first[40].redelivered && together.first[147].redelivered && !together.first[5].redelivered)
        #expect(together.again.allSatisfy { $0.redelivered })
        #expect(together.first.map(\.reason) == together.again.map(\.reason))
    }

    @Test(
        "a deferral comes due, is decided again, and is sent; deferred again, it stays",
        arguments: StoreKind.allCases
    )
    func deferral(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let night = Preferences(quietHours: QuietHours(start: "22:00", end: "08:00", timeZone: "Europe/Oslo"))
            let late = at("2026-11-21T22:30:00Z")
            let first = try await store.decide([
                request("q1", policy: tightMessages, category: "transactional", preferences: night, now: late)
            ])
            #expect(first[0].reason == .deferredQuietHours)
            let morning = at("2026-11-22T07:00:00Z")
            let due = try await store.claimDue(now: morning, limit: 10, lease: .seconds(60))
            guard case .deferred(let key, let payload)? = due.first?.work else {
                Issue.record("expected the deferral, got \(due)")
                return
            }
            #expect(key.eventID == "q1" && payload == #"{"id":"q1"}"#)
            // Without resuming, it is a redelivery; resuming, it is decided at the due time.
            let redelivered = try await store.decide([
                request("q1", policy: tightMessages, category: "transactional", preferences: night, now: morning)
            ])
            #expect(redelivered[0].label == .duplicate && redelivered[0].reason == .deferredQuietHours)
            let resumed = try await store.decide([
                request(
                    "q1",
                    policy: tightMessages,
                    category: "transactional",
                    preferences: night,
                    now: morning,
                    resuming: true
                )
            ])
            #expect(resumed[0].reason == .sent && !resumed[0].redelivered)
            try await store.complete(due)
            #expect(try await store.claimDue(now: at("2026-11-23T00:00:00Z"), limit: 10, lease: .seconds(60)).isEmpty)

            // A receipt deferred by its throttle, resumed while the next window is also full, is
            // deferred again: completing the first claim leaves the new deferral in place.
            _ = try await store.decide([
                request("r1", policy: tightMessages, kind: "receipt", category: "transactional", now: noon),
                request("r2", policy: tightMessages, kind: "receipt", category: "transactional", now: noon),
            ])
            let nextWindow = at("2026-11-21T12:01:00Z")
            let receipt = try await store.claimDue(now: nextWindow, limit: 10, lease: .seconds(5))
            #expect(receipt.count == 1)
            _ = try await store.decide([
                request("r3", policy: tightMessages, kind: "receipt", category: "transactional", now: nextWindow)
            ])
            let again = try await store.decide([
                request(
                    "r2",
                    policy: tightMessages,
                    kind: "receipt",
                    category: "transactional",
                    now: nextWindow,
                    resuming: true
                )
            ])
            #expect(again[0].reason == .deferredThrottle && again[0].dueAt == at("2026-11-21T12:02:00Z"))
            try await store.complete(receipt)
            let later = try await store.claimDue(now: at("2026-11-21T12:02:00Z"), limit: 10, lease: .seconds(5))
            #expect(later.count == 1 && later.first?.dueAt == at("2026-11-21T12:02:00Z"))
        }
    }

    @Test(
        "4 concurrent deciders hammering one user's messages limit admit exactly the limit",
        arguments: StoreKind.allCases
    )
    func concurrentLimit(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let decided = try await withThrowingTaskGroup(of: [Decision].self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        var all: [Decision] = []
                        for batch in 0..<10 {
                            // Seed 004's default: 100 messages per hour, then a digest.
                            let requests = (0..<10).map { request("w\(worker)-\(batch)-\($0)", now: self.noon) }
                            all += try await store.decide(requests)
                        }
                        return all
                    }
                }
                var all: [Decision] = []
                for try await decisions in group { all += decisions }
                return all
            }
            #expect(decided.count == 400)
            #expect(decided.filter { $0.reason == .sent }.count == 100)
            #expect(decided.filter { $0.reason == .throttledDigested }.count == 300)
            // Due at 13:00:30: the hour's end plus Policy.digestGrace.
            let digest = try await store.claimDue(now: at("2026-11-21T13:00:30Z"), limit: 10, lease: .seconds(60))
            guard case .digest(_, let items)? = digest.first?.work else {
                Issue.record("expected one digest, got \(digest.count) due")
                return
            }
            #expect(items.count == 300)
        }
    }

    @Test("concurrent claimers each get different due work; together they get all of it", arguments: StoreKind.allCases)
    func concurrentClaims(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let night = Preferences(quietHours: QuietHours(start: "22:00", end: "08:00", timeZone: "Europe/Oslo"))
            let late = at("2026-11-21T22:30:00Z")
            let deferred = try await store.decide(
                (0..<120).map {
                    request("c\($0)", category: "transactional", recipient: "user-\($0)", preferences: night, now: late)
                }
            )
            #expect(deferred.allSatisfy { $0.reason == .deferredQuietHours })
            let morning = at("2026-11-22T07:00:00Z")
            let claims = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        var mine: [String] = []
                        while true {
                            let batch = try await store.claimDue(now: morning, limit: 7, lease: .seconds(60))
                            if batch.isEmpty { return mine }
                            for work in batch {
                                if case .deferred(let key, _) = work.work { mine.append(key.eventID) }
                            }
                            try await store.complete(batch)
                        }
                    }
                }
                var all: [String] = []
                for try await mine in group { all += mine }
                return all
            }
            #expect(claims.count == 120)
            #expect(Set(claims).count == 120)
        }
    }

    @Test("purge forgets old ledger entries and ended windows", arguments: StoreKind.allCases)
    func purge(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            _ = try await store.decide([request("p1", policy: tightMessages, now: noon)])
            try await store.purge(before: at("2026-11-21T11:00:00Z"))
            #expect(try await store.decide([request("p1", policy: tightMessages, now: noon)])[0].redelivered)
            try await store.purge(before: at("2026-11-21T13:00:00Z"))
            #expect(!(try await store.decide([request("p1", policy: tightMessages, now: noon)])[0].redelivered))
        }
    }

    @Test(
        "purge goes by decision time, whether the event has a time, had it before or after, or is old but newly decided",
        arguments: StoreKind.allCases
    )
    func purgeByDecisionTime(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let receipt: (String, Timestamp, Timestamp?) -> DecisionRequest = { event, now, time in
                request(event, kind: "receipt", category: "transactional", now: now, eventTime: time)
            }
            let late = at("2026-11-21T13:00:00Z")
            let requests = [
                receipt("timed", noon, at("2026-11-21T11:00:00Z")),
                receipt("untimed", noon, nil),
                // A producer's clock ahead of ours: the event's time is after its decision's.
                receipt("ahead", noon, at("2026-11-21T14:00:00Z")),
                // An event time before 1970 (a negative number of milliseconds).
                receipt("pre-epoch", noon, at("1969-07-20T20:17:00Z")),
                // An old event decided after the purge's horizon (a replay, a lagging consumer).
                receipt("old-but-new", late, at("2026-11-21T10:00:00Z")),
                receipt("untimed-new", late, nil),
            ]
            for request in requests { _ = try await store.decide([request]) }
            #expect(try await store.purge(before: at("2026-11-21T12:30:00Z")) == 4)
            let again = try await store.decide(requests)
            #expect(again.map(\.redelivered) == [false, false, false, false, true, true])
        }
    }

    @Test("purge deletes a backlog of several chunks, and only what is old enough", arguments: StoreKind.allCases)
    func purgeBacklog(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let backlog = 2 * purgeChunk + 1
            let transactional: (String, Timestamp) -> DecisionRequest = { event, now in
                request(event, kind: "receipt", category: "transactional", now: now)
            }
            for start in stride(from: 0, to: backlog, by: 500) {
                _ = try await store.decide((start..<min(start + 500, backlog)).map { transactional("old-\($0)", noon) })
            }
            let later = at("2026-11-21T12:00:01Z")
            _ = try await store.decide([transactional("new", later)])
            #expect(try await store.purge(before: later) == backlog)
            #expect(try await store.purge(before: later) == 0)
            let again = try await store.decide([transactional("old-\(backlog - 1)", noon), transactional("new", later)])
            #expect(again.map(\.redelivered) == [false, true])
        }
    }
}

@Suite("PostgreSQL store")
struct PostgresStoreTests {
    @Test("migrations: workers starting at once migrate once and agree on the version")
    func concurrentMigrations() async throws {
        try await withPostgresStore { store in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<4 { group.addTask { try await store.migrate() } }
                try await group.waitForAll()
            }
            #expect(try await store.schemaVersion() == PostgresSchema.migrations.count)
        }
    }

    @Test(
        "migrations: a schema a newer Herald migrated is run on only if that Herald allows this one, and is left as it is"
    )
    func newerSchema() async throws {
        try await withPostgresStore { store in
            let known = PostgresSchema.migrations.count
            func stored() async throws -> (version: Int, compatibleFrom: Int?) {
                var row: (Int, Int?) = (-1, -1)
                for try await found in try await store.client.query(
                    "SELECT version, compatible_from FROM herald_schema_version"
                ).decode((Int, Int?).self) {
                    row = found
                }
                return row
            }
            #expect(try await stored() == (known, PostgresSchema.compatibleFrom))
            // A database a Herald before `compatible_from` migrated: the column is added, the
            // version left as it is.
            try await store.client.query("ALTER TABLE herald_schema_version DROP COLUMN compatible_from")
            try await store.migrate()
            #expect(try await stored() == (known, nil))
            // Migrated by a Herald that knows one more migration and allows no older worker, or
            // did not say (a Herald before `compatible_from` was kept).
            for (allowed, says) in [(known + 1, "version \(known + 1) or later"), (nil, "no older worker")] {
                try await store.client.query(
                    "UPDATE herald_schema_version SET version = \(known + 1), compatible_from = \(allowed)"
                )
                do throws(StoreError) {
                    try await store.migrate()
                    Issue.record("a schema at version \(known + 1) allowing \(String(describing: allowed)) was run on")
                } catch {
                    #expect(error.code == .storeMigration)
                    #expect(error.message.contains("schema version \(known + 1)"), "\(error.message)")
                    #expect(error.message.contains("up to \(known)"), "\(error.message)")
                    #expect(error.message.contains(says), "\(error.message)")
                }
                #expect(try await stored() == (known + 1, allowed))
            }
            // A newer Herald that allows this one: it runs, and leaves the version as it found it.
            try await store.client.query("UPDATE herald_schema_version SET compatible_from = \(known)")
            try await store.migrate()
            #expect(try await stored() == (known + 1, known))
            #expect(try await store.schemaVersion() == known + 1)
        }
    }

    @Test("a PostgreSQL URL is read, and a bad one is refused without repeating it")
    func configuration() throws {
        let configuration = try PostgresStore.Configuration(
            url: "postgres://herald:s3cret@db.internal:6543/state?sslmode=require"
        )
        #expect(configuration.host == "db.internal" && configuration.port == 6543)
        #expect(configuration.username == "herald" && configuration.password == "s3cret")
        #expect(configuration.database == "state" && configuration.tlsMode == .require)
        do {
            _ = try PostgresStore.Configuration(url: "postgres://herald:s3cret@db.internal:6543/")
            Issue.record("a URL without a database was accepted")
        } catch {
            #expect(error.code == .storeOpen)
            #expect(!error.message.contains("s3cret"))
        }
    }
}

extension DecisionContractTests {
    /// Random letters and digits: text that does not compress, as an index entry would hold it.
    static func incompressible(_ count: Int, seed: UInt64) -> String {
        var random = SeededRandom(seed: seed)
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        return String(decoding: (0..<count).map { _ in alphabet[random.next(below: alphabet.count)] }, as: UTF8.self)
    }

    @Test(
        "the longest event id and recipient the worker accepts are decided, throttled and deferred by every store",
        arguments: StoreKind.allCases
    )
    func longestKeys(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = Self.incompressible(CloudEventLimits.id, seed: 1)
            let recipient = Self.incompressible(CloudEventLimits.recipient, seed: 2)
            let night = Preferences(quietHours: QuietHours(start: "22:00", end: "08:00", timeZone: "Europe/Oslo"))
            let late = at("2026-11-21T22:30:00Z")
            let decisions = try await store.decide([
                request(id, policy: tightMessages, recipient: recipient, now: noon, eventTime: noon),
                request(id + "b", policy: tightMessages, recipient: recipient, now: noon, eventTime: noon),
                request(id + "c", policy: tightMessages, recipient: recipient, now: noon, eventTime: noon),
                request(
                    id + "d",
                    policy: tightMessages,
                    category: "transactional",
                    recipient: recipient,
                    preferences: night,
                    now: late,
                    eventTime: late
                ),
            ])
            #expect(decisions.map(\.label) == [.sent, .sent, .throttledDigested, .deferredQuietHours])
        }
    }
}

/// The longest values the worker lets reach the store (checked against the worker's own limits in
/// the worker's tests): an event id, and a user id as the directory and the renderer bound it.
enum CloudEventLimits {
    static let id = EventDecoder.maximumIDBytes
    static let recipient = DirectoryEvent.maximumValueBytes
}

extension DecisionContractTests {
    @Test(
        "an event whose data holds U+0000 is kept, as the JSON text the worker writes (escaped), by every store",
        arguments: StoreKind.allCases
    )
    func escapedNulInPayload(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let night = Preferences(quietHours: QuietHours(start: "22:00", end: "08:00", timeZone: "Europe/Oslo"))
            let late = at("2026-11-21T22:30:00Z")
            let planned = request("nul-1", category: "transactional", preferences: night, now: late, eventTime: late)
            // PostgreSQL's jsonb and text refuse a U+0000 character, not the six characters of its escape.
            let deferred = DecisionRequest(
                key: planned.key,
                plan: planned.plan,
                decidedAt: late,
                payload: #"{"id":"nul-1","data":{"preview":"a\u0000b"}}"#
            )
            let decisions = try await store.decide([deferred])
            #expect(decisions.map(\.label) == [.deferredQuietHours])
        }
    }
}

extension DecisionContractTests {
    @Test("a call refused for what it holds is store.rejected (PostgreSQL's too-large key, a SQLite constraint)")
    func refusedCalls() async throws {
        try await withStore(.postgres) { store async throws in
            // Longer than the worker lets through: PostgreSQL's index entries hold at most 2,704 bytes.
            let long = Self.incompressible(3000, seed: 3)
            let error = await #expect(throws: StoreError.self) {
                try await store.decide([request(long, recipient: long, now: noon, eventTime: noon)])
            }
            #expect(error?.code == .storeRejected)
            #expect(try await store.decide([request("e1", now: noon)]).map(\.label) == [.sent])
        }
        let sqlite = try SQLiteStore(path: ":memory:")
        try await sqlite.run { connection throws(StoreError) in
            try connection.execute(
                """
                CREATE TRIGGER refuse BEFORE INSERT ON decisions WHEN NEW.event_id = 'refused'
                BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;
                """
            )
        }
        let error = await #expect(throws: StoreError.self) {
            try await sqlite.decide([request("refused", now: noon, eventTime: noon)])
        }
        #expect(error?.code == .storeRejected)
        #expect(try await sqlite.decide([request("e1", now: noon)]).map(\.label) == [.sent])
    }
}
