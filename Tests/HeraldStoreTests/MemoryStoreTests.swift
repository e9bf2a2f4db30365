import HeraldEvents
import HeraldPolicy
import HeraldTestSupport
import Testing

@testable import HeraldStore

/// Replay decides with ``MemoryStore`` and the worker with SQLite or PostgreSQL, and a replay must
/// come out as the worker would have. Besides the contract suites (which run against every store),
/// these drive the memory store and SQLite through the same random sequences and compare every
/// answer.
@Suite("Memory store against SQLite")
struct MemoryStoreTests {
    typealias Generator = RecipientRecordTests.Generator

    @Test("after any sequence of directory changes, both stores give the same recipients", arguments: [1, 2, 3, 4])
    func sameDirectory(seed: UInt64) async throws {
        let sqlite = try SQLiteStore(path: ":memory:", directoryCache: 0)
        let memory = MemoryStore()
        var random = Generator(seed: seed)
        let everyone = (0..<6).map { "user-\($0)" }
        var devices = 0
        var invalidated = 0
        for _ in 0..<80 {
            let batch = (0..<(1 + random.next(below: 5))).map { _ in RecipientRecordTests().change(&random) }
            invalidated += batch.filter { if case .tokenInvalidated = $0 { true } else { false } }.count
            try await sqlite.apply(batch)
            try await memory.apply(batch)
            let expected = try await sqlite.recipients(everyone)
            let found = try await memory.recipients(everyone)
            #expect(found == expected, "after \(batch)")
            devices += expected.values.reduce(0) { $0 + $1.devices.count }
        }
        #expect(devices > 0 && invalidated > 0, "the changes registered devices and invalidated tokens")
    }

    /// What a claim hands out, without the store's ids (SQLite reuses a deleted row's id).
    struct Claimed: Equatable {
        var dueAt: Timestamp
        var work: String

        init(_ work: DueWork) {
            dueAt = work.dueAt
            switch work.work {
            case .deferred(let key, let payload): self.work = "deferred \(key) \(payload)"
            case .digest(let window, let items):
                self.work =
                    "digest \(window) " + items.map { "\($0.key) \($0.payload) \($0.addedAt)" }.joined(separator: ",")
            }
        }
    }

    @Test(
        "any sequence of decisions, redeliveries, claims and completions gets the same answers from both stores",
        arguments: [1, 2, 3, 4]
    )
    func sameDecisions(seed: UInt64) async throws {
        let sqlite = try SQLiteStore(path: ":memory:")
        // Half the runs with room reserved in the ledger, as replay reserves it from the log's size.
        let memory = seed.isMultiple(of: 2) ? MemoryStore(expectedDecisions: 4_096) : MemoryStore()
        var random = Generator(seed: seed)
        let night = Preferences(quietHours: QuietHours(start: "22:00", end: "08:00", timeZone: "Europe/Oslo"))
        var now = at("2026-11-21T20:00:00Z")
        var sent: [DecisionRequest] = []
        var reasons = Set<DecisionReason>()
        var claims = 0
        var held: [(sqlite: DueWork, memory: DueWork)] = []
        for step in 0..<200 {
            now = Timestamp(epochMilliseconds: now.epochMilliseconds + Int64(random.next(below: 50)) * 1_000)
            // Now and then a batch decided by a worker whose clock is behind: its items join a
            // digest already claimed, or a window already counted.
            let decidedAt =
                random.next(below: 4) == 0 ? Timestamp(epochMilliseconds: now.epochMilliseconds - 60_000) : now
            var batch: [DecisionRequest] = []
            for index in 0..<(1 + random.next(below: 6)) {
                if !sent.isEmpty && random.next(below: 5) == 0 {
                    // A redelivery, as it was first sent.
                    batch.append(sent[random.next(below: sent.count)])
                    continue
                }
                let category = ["messages", "messages", "transactional", "marketing"][random.next(below: 4)]
                batch.append(
                    request(
                        "event-\(step)-\(index)",
                        policy: tightMessages,
                        kind: category == "transactional" ? "receipt" : "message.received",
                        category: category,
                        recipient: "user-\(random.next(below: 2))",
                        preferences: random.next(below: 3) == 0
                            ? night : Preferences(categories: ["marketing": random.next(below: 2) == 0]),
                        now: decidedAt,
                        eventTime: random.next(below: 4) == 0 ? nil : decidedAt
                    )
                )
            }
            sent += batch
            let expected = try await sqlite.decide(batch)
            #expect(try await memory.decide(batch) == expected)
            reasons.formUnion(expected.map(\.label))
            #expect(try await memory.nextDueAt() == sqlite.nextDueAt())

            // Claims are completed a few steps later, or left to run out: digests collect more
            // meanwhile, and deferrals are decided again.
            if !held.isEmpty && random.next(below: 3) == 0 {
                try await sqlite.complete(held.map(\.sqlite))
                try await memory.complete(held.map(\.memory))
                held.removeAll()
            }
            guard random.next(below: 3) == 0 else { continue }
            let lease = Duration.seconds(Int64(random.next(below: 300)))
            let limit = 1 + random.next(below: 4)
            let fromSQLite = try await sqlite.claimDue(now: now, limit: limit, lease: lease)
            let fromMemory = try await memory.claimDue(now: now, limit: limit, lease: lease)
            #expect(fromMemory.map(Claimed.init) == fromSQLite.map(Claimed.init))
            claims += fromSQLite.count
            var resumed: [DecisionRequest] = []
            for work in fromSQLite {
                guard case .deferred(let key, _) = work.work else { continue }
                var again = request(
                    key.eventID,
                    policy: tightMessages,
                    kind: key.kind,
                    category: key.kind == "receipt" ? "transactional" : "messages",
                    recipient: key.recipient,
                    now: now,
                    resuming: true
                )
                again.key = key
                resumed.append(again)
            }
            if !resumed.isEmpty { #expect(try await memory.decide(resumed) == sqlite.decide(resumed)) }
            if random.next(below: 4) != 0 { held += zip(fromSQLite, fromMemory).map { ($0, $1) } }
        }
        #expect(claims > 0)
        for reason in [
            DecisionReason.sent, .duplicate, .deferredQuietHours, .deferredThrottle, .throttledDigested,
            .throttledDropped,
        ] {
            #expect(reasons.contains(reason), "the sequence decided \(reason.rawValue)")
        }
        let purgedSQLite = try await sqlite.purge(before: Timestamp(epochMilliseconds: now.epochMilliseconds - 600_000))
        let purgedMemory = try await memory.purge(before: Timestamp(epochMilliseconds: now.epochMilliseconds - 600_000))
        #expect(purgedMemory == purgedSQLite && purgedSQLite > 0)
        // What the purge left answers the same.
        #expect(try await memory.decide(sent) == sqlite.decide(sent))
    }
}

@Suite("Memory store at a replay's scale")
struct MemoryStoreScaleTests {
    /// Replay feeds a week of directory changes through the memory store, deletions among them,
    /// while the week's deferrals wait. Each deletion used to look at every waiting notification:
    /// 10,000 deletions among 100,000 deferrals took 105 s (a debug build), against 0.12 s now.
    @Test("deleting 5,000 users among 50,000 waiting deferrals takes a fraction of a second, not a scan per user")
    func deletionsAmongManyDeferrals() async throws {
        let store = MemoryStore()
        let night = Preferences(quietHours: QuietHours(start: "22:00", end: "08:00", timeZone: "Europe/Oslo"))
        let late = at("2026-11-21T22:10:00Z")
        for chunk in stride(from: 0, to: 50_000, by: 1000) {
            let requests = (chunk..<chunk + 1000).map { user in
                request(
                    "receipt-\(user)",
                    policy: tightMessages,
                    category: "transactional",
                    recipient: "user-\(user)",
                    preferences: night,
                    now: late,
                    eventTime: late
                )
            }
            #expect(try await store.decide(requests).allSatisfy { $0.label == .deferredQuietHours })
        }
        let started = ContinuousClock.now
        for chunk in stride(from: 0, to: 5_000, by: 1000) {
            try await store.apply(
                (chunk..<chunk + 1000).map { .userDeleted(userID: "user-\($0)", at: at("2026-11-21T23:00:00Z")) }
            )
        }
        let took = ContinuousClock.now - started
        // 0.08 s in a debug build; the scan per deletion took 26.6 s.
        #expect(took < .seconds(5), "5,000 deletions took \(took)")
        // The purge drops the index's done work and keeps what waits: later deletions still find it.
        try await store.purge(before: late)
        try await store.apply(
            (5_000..<6_000).map { .userDeleted(userID: "user-\($0)", at: at("2026-11-21T23:00:00Z")) }
        )

        let due = try await store.claimDue(now: at("2026-11-22T08:00:00Z"), limit: 100_000, lease: .seconds(60))
        #expect(due.count == 44_000)
        let deleted = due.filter { work in
            guard let number = Int(work.recipient.dropFirst(5)) else { return true }
            return number < 6_000
        }
        #expect(deleted.isEmpty, "\(deleted.count) deleted users' deferrals came due")
    }
}
