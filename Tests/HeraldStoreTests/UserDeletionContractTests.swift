import HeraldEvents
import HeraldPolicy
import HeraldTestSupport
import Testing

@testable import HeraldStore

@Suite("Store contract: deleting a user")
struct UserDeletionContractTests {
    @Test(
        "a deleted user's devices, profile and preferences are gone; older changes arriving later do not bring them back, a newer one is a new start",
        arguments: StoreKind.allCases
    )
    func deletion(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            try await store.apply([
                registered("ana", "phone", token: "t1", at: "2026-11-01T10:00:00Z"),
                registered("ana", "tablet", token: "t2", at: "2026-11-01T11:00:00Z", provider: .fcm),
                .profileUpdated(userID: "ana", locale: "pl", timeZone: "Europe/Warsaw", at: at("2026-11-01T10:00:00Z")),
                .preferencesUpdated(
                    userID: "ana",
                    preferences: Preferences(categories: ["marketing": true]),
                    at: at("2026-11-01T10:00:00Z")
                ),
                registered("ben", "pixel", token: "t3", at: "2026-11-01T10:00:00Z", provider: .fcm),
                // Applied before the deletion that is older than it: it stays.
                registered("cy", "phone", token: "t4", at: "2026-11-01T13:00:00Z"),
            ])
            try await store.apply([
                .userDeleted(userID: "ana", at: at("2026-11-01T12:00:00Z")),
                .userDeleted(userID: "cy", at: at("2026-11-01T12:00:00Z")),
            ])
            var found = try await store.recipients(["ana", "ben", "cy"])
            #expect(found["ana"] == nil)
            #expect(
                try await store.deletions(["ana", "ben", "cy", "ana"])
                    == ["ana": at("2026-11-01T12:00:00Z"), "cy": at("2026-11-01T12:00:00Z")]
            )
            #expect(found["ben"]?.devices.map(\.token) == ["t3"])
            #expect(found["cy"]?.devices.map(\.token) == ["t4"])

            // Late: dated before the deletion, or at the same moment.
            try await store.apply([
                registered("ana", "watch", token: "t5", at: "2026-11-01T11:30:00Z"),
                registered("ana", "phone", token: "t1", at: "2026-11-01T12:00:00Z"),
                .profileUpdated(userID: "ana", locale: "en", timeZone: nil, at: at("2026-11-01T11:59:59Z")),
                .preferencesUpdated(userID: "ana", preferences: Preferences(), at: at("2026-11-01T11:00:00Z")),
            ])
            #expect(try await store.recipients(["ana"]).isEmpty)
            // The deleted phone's token is free: another user may register it.
            try await store.apply([registered("ben", "ipad", token: "t1", at: "2026-11-01T11:00:00Z")])
            #expect(try await store.recipients(["ben"])["ben"]?.devices.map(\.token) == ["t3", "t1"])

            // After the deletion: a new start, with nothing of before.
            try await store.apply([registered("ana", "new-phone", token: "t6", at: "2026-11-01T12:00:01Z")])
            // The deletion again (a redelivery) leaves the new start alone.
            try await store.apply([.userDeleted(userID: "ana", at: at("2026-11-01T12:00:00Z"))])
            found = try await store.recipients(["ana"])
            let ana = try #require(found["ana"])
            #expect(ana.devices.map(\.token) == ["t6"])
            #expect(ana.locale == nil && ana.timeZone == nil)
            #expect(ana.preferences == Preferences())
        }
    }

    @Test(
        "the notifications waiting for a deleted user (deferred, in a digest) are dropped; other users' stay",
        arguments: StoreKind.allCases
    )
    func waitingNotifications(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let noon = at("2026-11-21T12:00:00Z")
            let night = Preferences(quietHours: QuietHours(start: "22:00", end: "08:00", timeZone: "Europe/Oslo"))
            let late = at("2026-11-21T22:30:00Z")  // 23:30 in Oslo: deferred to 08:00
            var requests: [DecisionRequest] = []
            for user in ["ana", "ben"] {
                // Three messages at noon, a limit of two: the third waits in a digest.
                requests += (1...3).map { request("\(user)-m\($0)", policy: tightMessages, recipient: user, now: noon) }
            }
            _ = try await store.decide(requests)
            let deferred = try await store.decide(
                ["ana", "ben"].map {
                    request(
                        "\($0)-receipt",
                        policy: tightMessages,
                        category: "transactional",
                        recipient: $0,
                        preferences: night,
                        now: late,
                        eventTime: late
                    )
                }
            )
            #expect(deferred.map(\.label) == [.deferredQuietHours, .deferredQuietHours])

            try await store.apply([.userDeleted(userID: "ana", at: at("2026-11-21T23:00:00Z"))])
            let due = try await store.claimDue(now: at("2026-11-22T08:00:00Z"), limit: 10, lease: .seconds(60))
            let recipients = due.map(\.recipient)
            #expect(recipients.sorted() == ["ben", "ben"], "\(due)")
        }
    }

    @Test(
        "a deletion drops only what waited from before it, also once a digest was completed or a deferral deferred again; later deferrals and digest items stay",
        arguments: StoreKind.allCases
    )
    func waitingAroundTheDeletion(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let noon = at("2026-11-21T12:00:00Z")
            let night = Preferences(quietHours: QuietHours(start: "22:00", end: "08:00", timeZone: "Europe/Oslo"))
            func deferral(_ event: String, _ user: String, _ time: Timestamp, now: Timestamp? = nil) -> DecisionRequest
            {
                request(
                    event,
                    policy: tightMessages,
                    category: "transactional",
                    recipient: user,
                    preferences: night,
                    now: now ?? time,
                    eventTime: time,
                    resuming: now != nil
                )
            }
            let users = (0..<60).map { "user-\($0)" }
            // Each user: a deferral (23:10 in Oslo) and a digest of one message (the limit is two).
            var requests: [DecisionRequest] = []
            for user in users {
                requests.append(deferral("\(user)-late", user, at("2026-11-21T22:10:00Z")))
                requests += (1...3).map { request("\(user)-m\($0)", policy: tightMessages, recipient: user, now: noon) }
            }
            _ = try await store.decide(requests)
            // user-0's digest is handed out and done before the deletion.
            let digests = try await store.claimDue(now: at("2026-11-21T13:00:00Z"), limit: 1000, lease: .seconds(60))
            let first = digests.filter { $0.recipient == "user-0" }
            #expect(first.count == 1, "user-0's digest came due: \(digests.count) claimed")
            try await store.complete(first)
            // user-1's deferral is decided again while still in quiet hours: deferred again, the same work.
            _ = try await store.decide([
                deferral("user-1-late", "user-1", at("2026-11-21T22:10:00Z"), now: at("2026-11-21T22:20:00Z"))
            ])
            // After the deletion's time: user-2's deferral and user-3's digest items.
            _ = try await store.decide(
                [deferral("user-2-later", "user-2", at("2026-11-21T23:30:00Z"))]
                    + (4...5).map {
                        request(
                            "user-3-m\($0)",
                            policy: tightMessages,
                            recipient: "user-3",
                            now: at("2026-11-21T12:00:30Z")
                        )
                    }
            )

            // The first twenty users; user-3 at 12:00:10, between its digest's items.
            try await store.apply(
                users.prefix(20).map { user in
                    .userDeleted(
                        userID: user,
                        at: at(user == "user-3" ? "2026-11-21T12:00:10Z" : "2026-11-21T23:00:00Z")
                    )
                }
            )

            let due = try await store.claimDue(now: at("2026-11-23T08:00:00Z"), limit: 1000, lease: .seconds(60))
            var waiting: [String: Int] = [:]
            for work in due { waiting[work.recipient, default: 0] += 1 }
            var expected = Dictionary(uniqueKeysWithValues: users.dropFirst(20).map { ($0, 2) })
            expected["user-2"] = 1  // the later deferral
            expected["user-3"] = 2  // its deferral (after 12:00:10) and the digest with the later items
            #expect(waiting == expected)
            let digest = due.compactMap { work -> [DigestItem]? in
                guard case .digest(let window, let items) = work.work, window.recipient == "user-3" else { return nil }
                return items
            }
            #expect(digest.map { $0.map(\.key.eventID) } == [["user-3-m4", "user-3-m5"]])
        }
    }

    @Test(
        "a deletion is remembered for the retention from when it was applied, not from its date",
        arguments: StoreKind.allCases
    )
    func purge(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            // Dated long ago, as a directory rebuilt from the compacted topic applies it.
            try await store.apply([.userDeleted(userID: "ana", at: at("2025-11-01T12:00:00Z"))])
            let applied = WallClock().now()
            // A purge of everything applied before a moment ago keeps it.
            try await store.purge(before: Timestamp(epochMilliseconds: applied.epochMilliseconds - 60_000))
            try await store.apply([registered("ana", "phone", token: "t1", at: "2025-11-01T11:00:00Z")])
            #expect(try await store.recipients(["ana"]).isEmpty)
            #expect(try await store.deletions(["ana"]) == ["ana": at("2025-11-01T12:00:00Z")])
            try await store.purge(before: Timestamp(epochMilliseconds: applied.epochMilliseconds + 60_000))
            #expect(try await store.deletions(["ana"]).isEmpty)
            // Forgotten: a change from before the deletion that arrives now is taken as it comes.
            try await store.apply([registered("ana", "phone", token: "t1", at: "2025-11-01T11:00:00Z")])
            #expect(try await store.recipients(["ana"])["ana"]?.devices.map(\.token) == ["t1"])
        }
    }
}

extension DueWork {
    /// Whom the work waits for: a deferral's recipient, or a digest window's.
    var recipient: String {
        switch work {
        case .deferred(let key, _): key.recipient
        case .digest(let window, _): window.recipient
        }
    }
}
