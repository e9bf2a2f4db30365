import Foundation
import HeraldEvents
import HeraldPolicy
import Testing

@testable import HeraldStore

/// SQLite counts throttle windows in memory and journals each count (``ThrottleCounts``); these
/// check that the counts stay exact where memory and the database could part: a crash, another
/// process on the same file, and folding the journal.
@Suite("SQLite throttle windows")
struct SQLiteThrottleTests {
    let noon = at("2026-11-21T12:00:00Z")

    func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID().uuidString).sqlite").path
    }

    func reasons(_ store: SQLiteStore, _ events: [String], recipient: String = "ana") async throws -> [DecisionReason] {
        try await store.decide(events.map { request($0, policy: tightMessages, recipient: recipient, now: noon) })
            .map(\.reason)
    }

    /// The count of ana's messages window: what is folded into `throttle_windows` plus the journal.
    func storedCount(_ path: String) throws -> Int64 {
        let connection = try SQLiteConnection(path: path)
        var folded: Int64 = 0
        var journaled: Int64 = 0
        try connection.query("SELECT coalesce(sum(count), 0) FROM throttle_windows WHERE recipient = 'ana'") {
            folded = $0.integer(0)
        }
        try connection.query("SELECT count(*) FROM throttle_journal WHERE recipient = 'ana'") {
            journaled = $0.integer(0)
        }
        return folded + journaled
    }

    @Test("a store that stops without folding leaves its counts in the journal, and a reopened store counts them")
    func crashKeepsCounts() async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            let store = try SQLiteStore(path: path)
            #expect(try await reasons(store, ["c1", "c2"]) == [.sent, .sent])
        }
        let reopened = try SQLiteStore(path: path)
        #expect(try await reasons(reopened, ["c3"]) == [.throttledDigested], "the limit is 2 a minute")
        #expect(try await reasons(reopened, ["c1"]) == [.sent], "a redelivery gets its recorded decision")
        #expect(try storedCount(path) == 2)
    }

    @Test("two stores on one file (two processes) share a limit: each sees the other's counts")
    func twoConnectionsShareALimit() async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let first = try SQLiteStore(path: path)
        let second = try SQLiteStore(path: path)
        #expect(try await reasons(first, ["s1"]) == [.sent])
        #expect(try await reasons(second, ["s2"]) == [.sent])
        // Each has counted one in memory; the window holds two.
        #expect(try await reasons(first, ["s3"]) == [.throttledDigested])
        #expect(try await reasons(second, ["s4"]) == [.throttledDigested])
        // Another recipient's window is untouched.
        #expect(try await reasons(first, ["s5"], recipient: "ben") == [.sent])
        #expect(try storedCount(path) == 2)
    }

    @Test("folding the journal often changes nothing a decision sees", arguments: [1, 3, 1_000])
    func foldingKeepsCounts(threshold: Int) async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try SQLiteStore(connection: SQLiteConnection(path: path), throttleFoldThreshold: threshold)
        var decided: [DecisionReason] = []
        for batch in [["f1"], ["f2", "f3"], ["f1", "f4", "f5"]] { decided += try await reasons(store, batch) }
        #expect(decided == [.sent, .sent, .throttledDigested, .sent, .throttledDigested, .throttledDigested])
        for batch in [["g1", "g2"], ["g3"]] { decided += try await reasons(store, batch, recipient: "ben") }
        #expect(decided.suffix(3) == [.sent, .sent, .throttledDigested])
        #expect(try storedCount(path) == 2)
        // Purging the ended window takes the folded and the journaled counts with it.
        try await store.purge(before: at("2026-11-21T13:00:00Z"))
        #expect(try storedCount(path) == 0)
    }
}
