import Foundation
import HeraldEvents
import HeraldPolicy
import HeraldTestSupport
import Testing

@testable import HeraldStore

/// SQLite appends digest items unindexed and indexes them by digest in bulk (``DigestBuffer``);
/// these check that a digest still gets every item, in order, wherever its items were when it came
/// due, and that a batch of digested notifications no longer writes a page per item.
@Suite("SQLite digest items")
struct SQLiteDigestTests {
    let noon = at("2026-11-21T12:00:00Z")
    /// When noon's window (a minute) is due: its end plus Policy.digestGrace.
    let flushAt = at("2026-11-21T12:01:30Z")

    /// Removed with the database's -wal and -shm files after each test.
    let scratch = ScratchDirectory()

    func temporaryPath() -> String { scratch.path + "/state.sqlite" }

    /// A store on `path` that indexes digest items once `threshold` wait.
    func store(_ path: String, threshold: Int) throws -> SQLiteStore {
        try SQLiteStore(connection: SQLiteConnection(path: path), digestFoldThreshold: threshold)
    }

    /// Messages to `recipient` at noon, the limit two a minute: from the third on, digested.
    func messages(_ ids: [String], to recipient: String = "ana") -> [DecisionRequest] {
        ids.map { request($0, policy: tightMessages, recipient: recipient, now: noon) }
    }

    /// How many digest items the file holds, and how many of them are indexed.
    func counts(_ path: String) throws -> (items: Int, indexed: Int) {
        let connection = try SQLiteConnection(path: path)
        var counts = (items: 0, indexed: 0)
        try connection.query("SELECT (SELECT count(*) FROM digest_items), (SELECT count(*) FROM digest_index)") {
            counts = (Int($0.integer(0)), Int($0.integer(1)))
        }
        return counts
    }

    /// Each claimed digest's recipient and its items' event ids.
    func digests(_ claimed: [DueWork]) -> [String: [String]] {
        var digests: [String: [String]] = [:]
        for work in claimed {
            if case .digest(let window, let items) = work.work {
                digests[window.recipient] = items.map(\.key.eventID)
            }
        }
        return digests
    }

    @Test("digest items wait unindexed until the threshold, then a deciding transaction indexes them all")
    func foldAtThreshold() async throws {
        let path = temporaryPath()
        let store = try store(path, threshold: 4)
        let first = try await store.decide(messages(["a1", "a2", "a3", "a4", "a5"]))
        #expect(first.map(\.reason) == [.sent, .sent, .throttledDigested, .throttledDigested, .throttledDigested])
        #expect(try counts(path) == (3, 0))
        _ = try await store.decide(messages(["a6"]))
        #expect(try counts(path) == (4, 4), "the fourth item waiting folds them at the transaction's end")
        _ = try await store.decide(messages(["a7"]))
        #expect(try counts(path) == (5, 4))
        let claimed = try await store.claimDue(now: flushAt, limit: 10, lease: .seconds(30))
        #expect(digests(claimed) == ["ana": ["a3", "a4", "a5", "a6", "a7"]])
        #expect(try counts(path) == (5, 5), "a claim indexes what waits first")
        try await store.complete(claimed)
        #expect(try counts(path) == (0, 0))
    }

    @Test("a digest's items come out in the order collected, across folds, batches and recipients")
    func orderAcrossFolds() async throws {
        let path = temporaryPath()
        let store = try store(path, threshold: 7)
        // Two users' messages interleaved, one of each per batch: the fold after the sixth batch
        // indexes part of each digest, and the last items still wait when the digests come due.
        for number in 1...8 {
            _ = try await store.decide(messages(["a\(number)"]) + messages(["b\(number)"], to: "ben"))
        }
        #expect(try counts(path) == (12, 8))
        let claimed = try await store.claimDue(now: flushAt, limit: 10, lease: .seconds(30))
        #expect(
            digests(claimed) == [
                "ana": (3...8).map { "a\($0)" },
                "ben": (3...8).map { "b\($0)" },
            ]
        )
    }

    @Test("items a stopped worker left unindexed are found by the next one")
    func unindexedAfterRestart() async throws {
        let path = temporaryPath()
        do {
            let first = try store(path, threshold: 1_000)
            _ = try await first.decide(messages(["r1", "r2", "r3", "r4"]))
        }
        #expect(try counts(path) == (2, 0))
        let second = try store(path, threshold: 1_000)
        // Appending counts what the first worker left: with a threshold of 3, this is the fold.
        let third = try store(path, threshold: 3)
        _ = try await third.decide(messages(["r5"]))
        #expect(try counts(path) == (3, 3))
        _ = try await second.decide(messages(["r6"]))
        let claimed = try await second.claimDue(now: flushAt, limit: 10, lease: .seconds(30))
        #expect(digests(claimed) == ["ana": ["r3", "r4", "r5", "r6"]])
    }

    @Test("a version 15 database keeps its digests: items indexed, their order and ids kept, new ones after")
    func migrationFromVersion15() async throws {
        let path = temporaryPath()
        let connection = try SQLiteConnection(path: path)
        try SQLiteStore.migrate(connection, to: 15)
        let start = noon.epochMilliseconds
        try connection.execute(
            """
            INSERT INTO digest_items (id, recipient, rule, window_start, event_id, kind, payload, added_at) VALUES
                (41, 'ana', 'messages', \(start), 'old1', 'message.received', '{"id":"old1"}', \(start)),
                (42, 'ana', 'messages', \(start), 'old2', 'message.received', '{"id":"old2"}', \(start));
            INSERT INTO due_work (type, due_at, recipient, rule, window_start)
                VALUES ('digest', \(flushAt.epochMilliseconds), 'ana', 'messages', \(start));
            """
        )
        // The window's count, as version 15 kept it: two sent, two digested.
        try connection.execute(
            "INSERT INTO throttle_windows VALUES (\(start), 'messages', 'ana', \(start + 60_000), 4, 0)"
        )
        let store = try SQLiteStore(connection: connection)
        #expect(try counts(path) == (2, 2))
        #expect(try await store.decide(messages(["new1"])).map(\.reason) == [.throttledDigested])
        let claimed = try await store.claimDue(now: flushAt, limit: 10, lease: .seconds(30))
        #expect(digests(claimed) == ["ana": ["old1", "old2", "new1"]])
        guard case .digest(_, let items)? = claimed.first?.work else { return }
        #expect(items.prefix(2).map(\.id) == [41, 42])
        #expect(items.last.map { $0.id > 42 } == true)
    }

    @Test("a database a newer Herald migrated is refused at opening, naming both versions, and left as it is")
    func newerSchemaRefused() async throws {
        let path = temporaryPath()
        _ = try SQLiteStore(path: path)
        let newer = SQLiteStore.migrations.count + 1
        try SQLiteConnection(path: path).execute("PRAGMA user_version = \(newer)")
        do {
            _ = try SQLiteStore(path: path)
            Issue.record("a database at version \(newer) was opened")
        } catch {
            #expect(error.code == .storeMigration)
            #expect(error.message.contains("schema version \(newer)"), "\(error.message)")
            #expect(error.message.contains("up to \(SQLiteStore.migrations.count)"), "\(error.message)")
        }
        var version: Int64 = 0
        try SQLiteConnection(path: path).query("PRAGMA user_version") { version = $0.integer(0) }
        #expect(version == Int64(newer))
    }

    @Test("a batch of digested notifications to many users writes about its items' bytes, not a page per item")
    func batchWritesFewPages() async throws {
        let path = temporaryPath()
        let store = try store(path, threshold: 20_000)
        // Long user ids, so that the index holds a few users per page: a page per item is then
        // plain in the WAL's growth.
        let users = (0..<500).map { "user-\($0)-" + String(repeating: "x", count: 200) }
        var filling: [DecisionRequest] = []
        for user in users { filling += messages((1...22).map { "\(user.prefix(9))-\($0)" }, to: user) }
        _ = try await store.decide(filling)
        #expect(try counts(path) == (10_000, 0))
        // Another worker on the file indexes the 10,000 items (its own third message folds).
        let indexing = try self.store(path, threshold: 1)
        _ = try await indexing.decide(messages(["f1", "f2", "f3"], to: "someone-else"))
        #expect(try counts(path) == (10_001, 10_001))
        let checkpoint = try SQLiteConnection(path: path)
        try checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)")

        // One more digested message for each user: one transaction, no fold.
        // Their events have a time, so their ledger entries go after the others' (at time 0).
        _ = try await store.decide(
            users.map {
                request("\($0.prefix(9))-last", policy: tightMessages, recipient: $0, now: noon, eventTime: noon)
            }
        )
        #expect(try counts(path) == (10_501, 10_001))
        let written = try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int ?? 0
        // The items themselves, their ledger entries and the throttle journal's row are about
        // 400 KB; an index entry per user on its own page would be 500 pages of 4 KB more.
        #expect(written < 1_200_000, "the batch wrote \(written) bytes to the WAL")
    }
}
