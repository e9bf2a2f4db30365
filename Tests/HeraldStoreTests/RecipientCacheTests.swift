import Foundation
import HeraldPolicy
import Testing

@testable import HeraldStore

@Suite("SQLite's directory cache")
struct RecipientCacheTests {
    @Test("a cached user sees its own store's changes: a token moving away, an invalidation, new preferences")
    func ownChanges() async throws {
        let store = try SQLiteStore(path: ":memory:", directoryCache: 100)
        try await store.apply([registered("ana", "phone", token: "shared", at: "2026-11-01T10:00:00Z")])
        #expect(try await store.recipients(["ana", "nobody"])["ana"]?.devices.map(\.token) == ["shared"])

        try await store.apply([registered("ben", "phone", token: "shared", at: "2026-11-02T10:00:00Z")])
        #expect(try await store.recipients(["ana"])["ana"]?.devices.isEmpty ?? true, "the token moved to ben")

        try await store.apply([registered("ana", "tablet", token: "t2", at: "2026-11-02T11:00:00Z")])
        #expect(try await store.recipients(["ana"])["ana"]?.devices.map(\.token) == ["t2"])
        try await store.apply([.tokenInvalidated(provider: .apns, token: "t2", at: at("2026-11-03T10:00:00Z"))])
        #expect(try await store.recipients(["ana"])["ana"]?.devices.isEmpty ?? true, "invalidated by token alone")

        // A user first looked up while unknown is found once they register.
        try await store.apply([registered("nobody", "phone", token: "t3", at: "2026-11-03T10:00:00Z")])
        #expect(try await store.recipients(["nobody"])["nobody"]?.devices.map(\.token) == ["t3"])

        try await store.apply([
            .preferencesUpdated(
                userID: "nobody",
                preferences: Preferences(pushEnabled: false),
                at: at("2026-11-04T10:00:00Z")
            )
        ])
        #expect(try await store.recipients(["nobody"])["nobody"]?.preferences.pushEnabled == false)
    }

    @Test(
        "in order, cached and uncached users, some repeated, are each answered in their place, with and without a cache",
        arguments: [100, 0]
    )
    func inOrderMixed(capacity: Int) async throws {
        let store = try SQLiteStore(path: ":memory:", directoryCache: capacity)
        try await store.apply([
            registered("ana", "phone", token: "t1", at: "2026-11-01T10:00:00Z"),
            registered("ben", "phone", token: "t2", at: "2026-11-01T10:00:00Z"),
            registered("cy", "phone", token: "t3", at: "2026-11-01T10:00:00Z"),
        ])
        #expect(try await store.recipients(inOrder: ["ana"]).map { $0?.userID } == ["ana"])
        let ids = ["cy", "ana", "cy", "nobody", "ben", "nobody", "ana"]
        let answer = try await store.recipients(inOrder: ids)
        #expect(answer.map { $0?.userID } == ["cy", "ana", "cy", nil, "ben", nil, "ana"])
        #expect(answer.map { $0?.devices.first?.token } == ["t3", "t1", "t3", nil, "t2", nil, "t1"])
        // The users read this time were cached (or not) like any other: a change still shows.
        try await store.apply([.deviceUnregistered(userID: "cy", deviceID: "phone", at: at("2026-11-02T10:00:00Z"))])
        #expect(try await store.recipients(inOrder: ["cy"]).first??.devices.isEmpty ?? true)
    }

    @Test(
        "the cache's statistics count each user looked up as a hit or a miss, and the users it holds; without a cache, every look-up misses"
    )
    func statistics() async throws {
        let store = try SQLiteStore(path: ":memory:", directoryCache: 2)
        try await store.apply([
            registered("ana", "phone", token: "t1", at: "2026-11-01T10:00:00Z"),
            registered("ben", "phone", token: "t2", at: "2026-11-01T10:00:00Z"),
            registered("cy", "phone", token: "t3", at: "2026-11-01T10:00:00Z"),
        ])
        #expect(store.directoryCacheStatistics == DirectoryCacheStatistics(hits: 0, misses: 0, users: 0, capacity: 2))
        // Repeated in one look-up: both places miss (read once); an unknown user is cached as absent.
        _ = try await store.recipients(inOrder: ["ana", "ana", "nobody"])
        #expect(store.directoryCacheStatistics == DirectoryCacheStatistics(hits: 0, misses: 3, users: 2, capacity: 2))
        _ = try await store.recipients(inOrder: ["ana", "nobody"])
        #expect(store.directoryCacheStatistics == DirectoryCacheStatistics(hits: 2, misses: 3, users: 2, capacity: 2))
        // Two more users than it holds: one is evicted for each.
        _ = try await store.recipients(inOrder: ["ben", "cy"])
        #expect(store.directoryCacheStatistics == DirectoryCacheStatistics(hits: 2, misses: 5, users: 2, capacity: 2))
        // A change to a cached user drops them at once.
        try await store.apply([.deviceUnregistered(userID: "cy", deviceID: "phone", at: at("2026-11-02T10:00:00Z"))])
        #expect(store.directoryCacheStatistics.users == 1)

        let uncached = try SQLiteStore(path: ":memory:", directoryCache: 0)
        _ = try await uncached.recipients(inOrder: ["ana", "ana"])
        #expect(
            uncached.directoryCacheStatistics == DirectoryCacheStatistics(hits: 0, misses: 2, users: 0, capacity: 0)
        )
        let lines = store.directoryCacheStatistics.metricLines
        #expect(lines.contains("herald_directory_cache_lookups_total{result=\"hit\"} 2\n"))
        #expect(lines.contains("herald_directory_cache_lookups_total{result=\"miss\"} 5\n"))
        #expect(
            lines.contains("herald_directory_cache_users 1\n") && lines.contains("herald_directory_cache_capacity 2\n")
        )
    }

    @Test("a change committed through another connection (another process) is seen by a store that cached the user")
    func otherConnection() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID().uuidString).sqlite")
            .path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let reader = try SQLiteStore(path: path, directoryCache: 100)
        let writer = try SQLiteStore(path: path, directoryCache: 100)
        try await writer.apply([registered("ana", "phone", token: "t1", at: "2026-11-01T10:00:00Z")])
        #expect(try await reader.recipients(["ana"])["ana"]?.devices.map(\.token) == ["t1"])
        try await writer.apply([.deviceUnregistered(userID: "ana", deviceID: "phone", at: at("2026-11-02T10:00:00Z"))])
        #expect(try await reader.recipients(["ana"])["ana"]?.devices.isEmpty ?? true)
    }

    @Test("the cache holds at most its capacity and keeps recently used users")
    func bounded() {
        var cache = RecipientCache(capacity: 4)
        for user in ["a", "b", "c", "d", "e"] { cache.insert(.absent, for: user) }
        #expect(cache.count == 4)
        #expect(cache.lookup("e") != nil, "the latest user stays")
        #expect(cache.lookup("a") == nil, "the user not used since it was cached went first")

        // "c" is used again: the sweeps of the next two inserts evict "b", then pass "c" by
        // (clearing its bit) and evict "d".
        #expect(cache.lookup("c") != nil)
        cache.insert(.absent, for: "f")
        cache.insert(.absent, for: "g")
        #expect(cache.count == 4)
        #expect(cache.lookup("c") != nil, "a user used since the last sweep gets a second chance")
        #expect(cache.lookup("b") == nil)
        #expect(cache.lookup("d") == nil)

        // An invalidated user's slot is reused before anything else is evicted.
        cache.invalidate("e")
        #expect(cache.lookup("e") == nil)
        cache.insert(.absent, for: "h")
        #expect(cache.count == 4)
        for user in ["c", "f", "g", "h"] { #expect(cache.lookup(user) != nil, "\(user) stays") }
        var disabled = RecipientCache(capacity: 0)
        disabled.insert(.absent, for: "a")
        #expect(disabled.lookup("a") == nil)
    }
}
