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
        // The change leaves the first two users cached (the cache's room); emptied, as after a start.
        #expect(store.directoryCacheStatistics == DirectoryCacheStatistics(hits: 0, misses: 0, users: 2, capacity: 2))
        try await store.emptyDirectoryCache()
        #expect(store.directoryCacheStatistics == DirectoryCacheStatistics(hits: 0, misses: 0, users: 0, capacity: 2))
        // Repeated in one look-up: both places miss (read once); an unknown user is cached as absent.
        _ = try await store.recipients(inOrder: ["ana", "ana", "nobody"])
        #expect(store.directoryCacheStatistics == DirectoryCacheStatistics(hits: 0, misses: 3, users: 2, capacity: 2))
        _ = try await store.recipients(inOrder: ["ana", "nobody"])
        #expect(store.directoryCacheStatistics == DirectoryCacheStatistics(hits: 2, misses: 3, users: 2, capacity: 2))
        // Two more users than it holds: one is evicted for each.
        _ = try await store.recipients(inOrder: ["ben", "cy"])
        #expect(store.directoryCacheStatistics == DirectoryCacheStatistics(hits: 2, misses: 5, users: 2, capacity: 2))
        // A change to a cached user replaces their entry: still two users, and cy's next look-up hits.
        try await store.apply([.deviceUnregistered(userID: "cy", deviceID: "phone", at: at("2026-11-02T10:00:00Z"))])
        #expect(store.directoryCacheStatistics.users == 2)
        #expect(try await store.recipients(inOrder: ["cy"]) == [nil], "cy has nothing left: cached as absent")
        #expect(store.directoryCacheStatistics == DirectoryCacheStatistics(hits: 3, misses: 5, users: 2, capacity: 2))

        let uncached = try SQLiteStore(path: ":memory:", directoryCache: 0)
        _ = try await uncached.recipients(inOrder: ["ana", "ana"])
        #expect(
            uncached.directoryCacheStatistics == DirectoryCacheStatistics(hits: 0, misses: 2, users: 0, capacity: 0)
        )
        let lines = store.directoryCacheStatistics.metricLines
        #expect(lines.contains("herald_directory_cache_lookups_total{result=\"hit\"} 3\n"))
        #expect(lines.contains("herald_directory_cache_lookups_total{result=\"miss\"} 5\n"))
        #expect(
            lines.contains("herald_directory_cache_users 2\n") && lines.contains("herald_directory_cache_capacity 2\n")
        )
    }

    @Test("a directory change leaves its users cached as SQLite holds them: their next look-up hits and reads the same")
    func changesCachedAsWritten() async throws {
        let changes: [DirectoryEvent] = [
            registered("ana", "phone", token: "t1", at: "2026-11-01T10:00:00Z"),
            registered("ana", "tablet", token: "t2", at: "2026-11-01T11:00:00Z", provider: .fcm),
            .profileUpdated(userID: "ana", locale: "nb-NO", timeZone: "Europe/Oslo", at: at("2026-11-01T10:00:00Z")),
            .preferencesUpdated(
                userID: "ana",
                preferences: Preferences(
                    categories: ["marketing": false],
                    quietHours: QuietHours(start: "22:00", end: "07:00", timeZone: "Europe/Oslo")
                ),
                at: at("2026-11-01T10:00:00Z")
            ),
            registered("ben", "phone", token: "t3", at: "2026-11-01T10:00:00Z"),
            .deviceUnregistered(userID: "ben", deviceID: "phone", at: at("2026-11-01T12:00:00Z")),
        ]
        let cached = try SQLiteStore(path: ":memory:", directoryCache: 100)
        let uncached = try SQLiteStore(path: ":memory:", directoryCache: 0)
        try await cached.apply(changes)
        try await uncached.apply(changes)
        #expect(cached.directoryCacheStatistics.users == 2)
        let users = ["ana", "ben", "nobody"]
        let answer = try await cached.recipients(inOrder: users)
        #expect(cached.directoryCacheStatistics.hits == 2, "ana and ben were cached by the change")
        #expect(cached.directoryCacheStatistics.misses == 1, "nobody was never written")
        #expect(answer == (try await uncached.recipients(inOrder: users)))
        #expect(answer.first??.devices.map(\.token) == ["t1", "t2"])
        #expect(answer.first??.preferences.quietHours?.timeZone == "Europe/Oslo")
    }

    @Test("changes of users a full cache does not hold evict no one; a cached user's change replaces their entry")
    func fullCacheOffered() async throws {
        let store = try SQLiteStore(path: ":memory:", directoryCache: 2)
        try await store.apply([
            registered("ana", "phone", token: "t1", at: "2026-11-01T10:00:00Z"),
            registered("ben", "phone", token: "t2", at: "2026-11-01T10:00:00Z"),
        ])
        for user in ["cy", "dan", "eve"] {
            try await store.apply([registered(user, "phone", token: "t-\(user)", at: "2026-11-01T10:00:00Z")])
        }
        _ = try await store.recipients(inOrder: ["ana", "ben"])
        #expect(store.directoryCacheStatistics == DirectoryCacheStatistics(hits: 2, misses: 0, users: 2, capacity: 2))
        try await store.apply([registered("ana", "tablet", token: "t9", at: "2026-11-02T10:00:00Z")])
        let ana = try await store.recipients(inOrder: ["ana"]).first ?? nil
        #expect(ana?.devices.map(\.token) == ["t1", "t9"])
        #expect(store.directoryCacheStatistics == DirectoryCacheStatistics(hits: 3, misses: 0, users: 2, capacity: 2))
        #expect(try await store.recipients(inOrder: ["eve"]).first??.devices.map(\.token) == ["t-eve"])
        #expect(store.directoryCacheStatistics.misses == 1, "eve was read from SQLite")

        // One change of a cached user and of users the cache does not hold: the cached user keeps
        // their place, whatever order the change touched them in.
        _ = try await store.recipients(inOrder: ["ana", "ben"])
        try await store.apply(
            ["cy", "dan", "ana", "eve", "fay"].map {
                registered($0, "watch", token: "w-\($0)", at: "2026-11-03T10:00:00Z")
            }
        )
        let misses = store.directoryCacheStatistics.misses
        let answer = try await store.recipients(inOrder: ["ana", "ben"])
        #expect(store.directoryCacheStatistics.misses == misses, "ana and ben are still cached")
        #expect(answer.first??.devices.map(\.token) == ["t1", "t9", "w-ana"])
    }

    @Test(
        "a store's own change after another connection's commit empties its cache first: users cached before it are read again"
    )
    func ownChangeAfterOtherConnection() async throws {
        let path = Self.databaseFile()
        defer { Self.remove(path) }
        let worker = try SQLiteStore(path: path, directoryCache: 100)
        let other = try SQLiteStore(path: path, directoryCache: 100)
        try await worker.apply([registered("ana", "phone", token: "t1", at: "2026-11-01T10:00:00Z")])
        try await other.apply([registered("ana", "tablet", token: "t2", at: "2026-11-02T10:00:00Z")])
        // The worker's next change checks the file's version before caching what it wrote.
        try await worker.apply([registered("ben", "phone", token: "t3", at: "2026-11-02T10:00:00Z")])
        #expect(worker.directoryCacheStatistics.users == 1, "ana's entry was dropped, ben's kept")
        #expect(try await worker.recipients(["ana"])["ana"]?.devices.map(\.token) == ["t1", "t2"])
    }

    @Test("a change committed through another connection (another process) is seen by a store that cached the user")
    func otherConnection() async throws {
        let path = Self.databaseFile()
        defer { Self.remove(path) }
        let reader = try SQLiteStore(path: path, directoryCache: 100)
        let writer = try SQLiteStore(path: path, directoryCache: 100)
        try await writer.apply([registered("ana", "phone", token: "t1", at: "2026-11-01T10:00:00Z")])
        #expect(try await reader.recipients(["ana"])["ana"]?.devices.map(\.token) == ["t1"])
        try await writer.apply([.deviceUnregistered(userID: "ana", deviceID: "phone", at: at("2026-11-02T10:00:00Z"))])
        #expect(try await reader.recipients(["ana"])["ana"]?.devices.isEmpty ?? true)
    }

    /// A path for a database file of a test's own, which two stores open as two processes would.
    static func databaseFile() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID().uuidString).sqlite").path
    }

    /// Removes the database at `path` with its write-ahead log and shared-memory index.
    static func remove(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
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
        // Offered entries evict no one: a cached user's is replaced, a full ring takes no one new.
        cache.offer(.present(Recipient(userID: "c")), for: "c")
        if case .present(let recipient)? = cache.lookup("c") {
            #expect(recipient.userID == "c")
        } else {
            Issue.record("c's entry was replaced by the one offered")
        }
        cache.offer(.absent, for: "i")
        #expect(cache.lookup("i") == nil)
        for user in ["c", "f", "g", "h"] { #expect(cache.lookup(user) != nil, "\(user) stays") }
        cache.invalidate("f")
        cache.offer(.absent, for: "i")
        #expect(cache.lookup("i") != nil, "a free slot takes an offered user")
        #expect(cache.count == 4)
        var disabled = RecipientCache(capacity: 0)
        disabled.insert(.absent, for: "a")
        disabled.offer(.absent, for: "b")
        #expect(disabled.lookup("a") == nil && disabled.lookup("b") == nil)
    }
}
