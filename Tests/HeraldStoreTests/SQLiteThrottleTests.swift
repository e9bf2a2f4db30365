import Foundation
import HeraldEvents
import HeraldPolicy
import HeraldTestSupport
import Testing

@testable import HeraldStore

/// SQLite counts throttle windows in memory and journals each count (``ThrottleCounts``); these
/// check that the counts stay exact where memory and the database could part: a crash, another
/// process on the same file, and folding the journal.
@Suite("SQLite throttle windows")
struct SQLiteThrottleTests {
    let noon = at("2026-11-21T12:00:00Z")

    /// Removed with the database's -wal and -shm files after each test.
    let scratch = ScratchDirectory()

    func temporaryPath() -> String { scratch.path + "/state.sqlite" }

    func reasons(
        _ store: SQLiteStore,
        _ events: [String],
        recipient: String = "ana",
        at now: Timestamp? = nil
    ) async throws -> [DecisionReason] {
        try await store.decide(
            events.map { request($0, policy: tightMessages, recipient: recipient, now: now ?? noon) }
        )
        .map(\.reason)
    }

    @Test("looking up and rewriting ledger entries does not prepare their statements again for each event's time")
    func noReprepares() async throws {
        let store = try SQLiteStore(path: temporaryPath())
        let optedIn = Preferences(categories: ["marketing": true])
        func batch(_ range: Range<Int>) -> [DecisionRequest] {
            range.map {
                request(
                    "m\($0)",
                    policy: tightMessages,
                    category: "marketing",
                    preferences: optedIn,
                    now: noon,
                    eventTime: Timestamp(epochMilliseconds: noon.epochMilliseconds - Int64($0) * 1000)
                )
            }
        }
        // Every statement once, then the statistics the pipeline gathers after seeding (ANALYZE
        // changes the schema: each statement is prepared again once, on its next run).
        _ = try await store.decide(batch(0..<10))
        try await store.analyze()
        _ = try await store.decide(batch(0..<10))
        let before = try await store.statementReprepares()
        // Redelivered: each is looked up by its time (`recorded`); over the limit of 3, the likely
        // outcome written first is rewritten (the ledger's UPDATE).
        let again = try await store.decide(batch(0..<60))
        let redelivered = again.prefix(10).filter(\.redelivered).count
        let dropped = again.dropFirst(10).filter { $0.reason == .throttledDropped }.count
        #expect(redelivered == 10)
        #expect(dropped == 50)
        let after = try await store.statementReprepares()
        #expect(after - before <= 2, "\(after - before) statements prepared again for 60 decisions")
    }

    /// The count of a recipient's messages window: what is folded into `throttle_windows` plus the
    /// journal's entries after the window's `counted_through`.
    func storedCount(_ path: String, recipient: String = "ana") throws -> Int {
        let connection = try SQLiteConnection(path: path)
        var folded = 0
        try connection.query(
            "SELECT coalesce(sum(count), 0) FROM throttle_windows WHERE recipient = ?",
            [.text(recipient)]
        ) {
            folded = Int($0.integer(0))
        }
        let journaled = try ThrottleCounts.journaled(connection).filter { $0.key.recipient == recipient }
        return folded + journaled.values.reduce(0) { $0 + $1.count }
    }

    func storedWindows(_ connection: SQLiteConnection) throws -> [String] {
        var windows: [String] = []
        try connection.query("SELECT recipient, count, counted_through FROM throttle_windows ORDER BY recipient") {
            windows.append("\($0.text(0) ?? "") \($0.integer(1)) through \($0.integer(2))")
        }
        return windows
    }

    func journalRows(_ connection: SQLiteConnection) throws -> Int {
        var rows = 0
        try connection.query("SELECT count(*) FROM throttle_journal") { rows = Int($0.integer(0)) }
        return rows
    }

    @Test("a store that stops without folding leaves its counts in the journal, and a reopened store counts them")
    func crashKeepsCounts() async throws {
        let path = temporaryPath()
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

    @Test("a purge deletes the ended windows and keeps counting the current ones from memory")
    func purgeKeepsCurrentWindows() async throws {
        let path = temporaryPath()
        let store = try SQLiteStore(path: path)
        let earlier = at("2026-11-21T11:59:10Z")
        #expect(try await reasons(store, ["e1"], at: earlier) == [.sent])
        #expect(try await reasons(store, ["e2", "e3"]) == [.sent, .sent])
        #expect(try await store.run { _ in store.throttle.windowsInMemory } == 2)
        // The 11:59 window has ended by 12:00:30; the 12:00 window runs until 12:01.
        try await store.purge(before: at("2026-11-21T12:00:30Z"))
        #expect(
            try await store.run { _ in store.throttle.windowsInMemory } == 1,
            "the window still being counted stays in memory"
        )
        #expect(try await reasons(store, ["e4"]) == [.throttledDigested], "the limit is 2 a minute")
        #expect(try await reasons(store, ["e5"], at: earlier) == [.sent], "the ended window was deleted")
        #expect(try storedCount(path) == 3)
    }

    @Test("a fold written over several batches and cut short by a crash neither loses nor repeats a count")
    func crashDuringFold() async throws {
        let path = temporaryPath()
        do {
            // A fold begins at 3 journal entries and writes one window per batch.
            let store = try SQLiteStore(
                connection: SQLiteConnection(path: path),
                throttleFoldThreshold: 3,
                throttleFoldSlice: 1
            )
            #expect(try await reasons(store, ["a1"]) == [.sent])
            #expect(try await reasons(store, ["b1"], recipient: "ben") == [.sent])
            // The fold begins with ana, ben and cy: ana is written (journal rows 1-3 in her count).
            #expect(try await reasons(store, ["c1"], recipient: "cy") == [.sent])
            // ana is counted again (row 4) while ben is written; cy is not written yet.
            #expect(try await reasons(store, ["a2"]) == [.sent])
            let connection = try SQLiteConnection(path: path)
            #expect(try storedWindows(connection) == ["ana 1 through 3", "ben 1 through 4"])
            #expect(try journalRows(connection) == 4, "the fold is under way: no row is deleted yet")
        }
        // Each window's count is its stored count plus the entries of later rows: adding every
        // journal entry would give ana 3 and ben 2.
        #expect(try storedCount(path) == 2)
        #expect(try storedCount(path, recipient: "ben") == 1)
        #expect(try storedCount(path, recipient: "cy") == 1)
        let reopened = try SQLiteStore(path: path)
        #expect(try await reasons(reopened, ["a3"]) == [.throttledDigested], "the limit is 2 a minute")
        #expect(try await reasons(reopened, ["b2", "b3"], recipient: "ben") == [.sent, .throttledDigested])
        #expect(try await reasons(reopened, ["c2", "c3"], recipient: "cy") == [.sent, .throttledDigested])
        for recipient in ["ana", "ben", "cy"] { #expect(try storedCount(path, recipient: recipient) == 2) }
    }

    @Test("a fold written over several batches deletes the journal rows it covered, and counts stay exact")
    func foldOverSeveralBatches() async throws {
        let path = temporaryPath()
        let store = try SQLiteStore(
            connection: SQLiteConnection(path: path),
            throttleFoldThreshold: 2,
            throttleFoldSlice: 1
        )
        let connection = try SQLiteConnection(path: path)
        #expect(try await reasons(store, ["a1"]) == [.sent])
        #expect(try await reasons(store, ["b1"], recipient: "ben") == [.sent])
        #expect(try journalRows(connection) == 2, "the fold has written ana, not ben")
        #expect(try await reasons(store, ["c1"], recipient: "cy") == [.sent])
        // ben is written: the fold that began at row 2 is done, and rows 1 and 2 go.
        #expect(try journalRows(connection) == 1)
        #expect(try storedWindows(connection) == ["ana 1 through 2", "ben 1 through 3"])
        #expect(try await reasons(store, ["a2", "a3"]) == [.sent, .throttledDigested])
        #expect(try await reasons(store, ["b2", "b3"], recipient: "ben") == [.sent, .throttledDigested])
        for recipient in ["ana", "ben", "cy"] {
            #expect(try storedCount(path, recipient: recipient) == (recipient == "cy" ? 1 : 2))
        }
    }

    @Test(
        "journal row ids are not used again after the journal empties, so a window's last row stays behind later ones"
    )
    func journalRowIDsAreNotReused() async throws {
        let path = temporaryPath()
        do {
            let store = try SQLiteStore(connection: SQLiteConnection(path: path), throttleFoldThreshold: 2)
            #expect(try await reasons(store, ["a1"]) == [.sent])
            // The fold writes ana and ben through row 2 and empties the journal.
            #expect(try await reasons(store, ["b1"], recipient: "ben") == [.sent])
            let connection = try SQLiteConnection(path: path)
            #expect(try journalRows(connection) == 0)
            // Row 3, not row 1 again: a row 1 would read as already in ben's stored count.
            #expect(try await reasons(store, ["b2"], recipient: "ben") == [.sent])
        }
        #expect(try storedCount(path, recipient: "ben") == 2)
        let reopened = try SQLiteStore(path: path)
        #expect(try await reasons(reopened, ["b3"], recipient: "ben") == [.throttledDigested])
    }

    @Test("a version 13 database keeps its windows and journal: the migration marks the windows as holding no row")
    func migrationFromVersion13() async throws {
        let path = temporaryPath()
        let connection = try SQLiteConnection(path: path)
        try SQLiteStore.migrate(connection, to: 13)
        let start = noon.epochMilliseconds - noon.epochMilliseconds % 60_000
        var journal = ThrottleJournal()
        journal.append(
            ThrottleKey(recipient: "ana", rule: "messages", windowStart: Timestamp(epochMilliseconds: start)),
            windowEnd: Timestamp(epochMilliseconds: start + 60_000)
        )
        try connection.execute(
            "INSERT INTO throttle_windows VALUES (\(start), 'messages', 'ana', \(start + 60_000), 1)"
        )
        try connection.query("INSERT INTO throttle_journal (id, entries) VALUES (7, ?)", [.blob(journal.bytes)])
        let store = try SQLiteStore(connection: connection)
        #expect(try storedCount(path) == 2)
        #expect(try await reasons(store, ["m1"]) == [.throttledDigested], "the limit is 2 a minute")
        // The next row comes after the migrated one.
        #expect(try await reasons(store, ["m2"], recipient: "ben") == [.sent])
        var ids: [Int64] = []
        try connection.query("SELECT id FROM throttle_journal ORDER BY id") { ids.append($0.integer(0)) }
        #expect(ids.count == 1 && ids[0] > 7, "\(ids)")
    }

    @Test("a batch's counts are one journal row, read back whole after a crash")
    func journalRowPerTransaction() async throws {
        let path = temporaryPath()
        do {
            let store = try SQLiteStore(path: path)
            #expect(try await reasons(store, ["j1", "j2"]) == [.sent, .sent])
            #expect(try await reasons(store, ["j3"], recipient: "ben") == [.sent])
        }
        let connection = try SQLiteConnection(path: path)
        #expect(try journalRows(connection) == 2, "one row per deciding transaction")
        let journaled = try ThrottleCounts.journaled(connection)
        #expect(journaled.map { "\($0.key.recipient) \($0.value.count)" }.sorted() == ["ana 2", "ben 1"])
    }

    @Test("a corrupt journal row fails the decision with a clear error instead of losing counts")
    func corruptJournalRow() async throws {
        let path = temporaryPath()
        do {
            let store = try SQLiteStore(path: path)
            #expect(try await reasons(store, ["k1"]) == [.sent])
        }
        let connection = try SQLiteConnection(path: path)
        try connection.execute("INSERT INTO throttle_journal (entries) VALUES (x'0102')")
        let reopened = try SQLiteStore(path: path)
        await #expect(throws: StoreError.self) { try await reasons(reopened, ["k2"]) }
        #expect(try journalRows(connection) == 2, "the failed recovery rolled back; the journal is still there")
    }

    @Test("a version 6 journal (a row per count) is folded into the windows by the migration")
    func migrationFromVersion6() async throws {
        let connection = try SQLiteConnection(path: ":memory:")
        try SQLiteStore.migrate(connection, to: 6)
        let start = noon.epochMilliseconds - noon.epochMilliseconds % 60_000
        try connection.execute(
            """
            INSERT INTO throttle_windows VALUES (\(start), 'messages', 'ana', \(start + 60_000), 1);
            INSERT INTO throttle_journal (window_start, rule, recipient, window_end)
                VALUES (\(start), 'messages', 'ana', \(start + 60_000));
            """
        )
        let store = try SQLiteStore(connection: connection)
        var folded: [Int64] = []
        try connection.query("SELECT count FROM throttle_windows WHERE recipient = 'ana'") {
            folded.append($0.integer(0))
        }
        #expect(folded == [2])
        #expect(try await reasons(store, ["m1"]) == [.throttledDigested], "the limit is 2 a minute")
    }

    // A window missing from memory is taken as empty only while no window of its start can be
    // stored without also being in memory; these would let a limit through if that went wrong.

    @Test("a window start that already has stored windows when a store first sees it is read, not assumed empty")
    func storedStartIsRead() async throws {
        let path = temporaryPath()
        do {
            let store = try SQLiteStore(connection: SQLiteConnection(path: path), throttleFoldThreshold: 1)
            #expect(try await reasons(store, ["r1"]) == [.sent])
        }
        let reopened = try SQLiteStore(connection: SQLiteConnection(path: path), throttleFoldThreshold: 1)
        // ben is the first the reopened store sees of this minute's windows.
        #expect(try await reasons(reopened, ["r2"], recipient: "ben") == [.sent])
        #expect(try await reasons(reopened, ["r3", "r4"]) == [.sent, .throttledDigested], "ana's first is stored")
    }

    @Test("after memory is trimmed to the latest windows, a late event for an earlier window reads that window")
    func evictedStartIsRead() async throws {
        // Threshold 2: a fold every second batch; at 8 windows in memory, only the latest minute's stay.
        let store = try SQLiteStore(connection: SQLiteConnection(path: ":memory:"), throttleFoldThreshold: 2)
        for (index, user) in ["ana", "ben", "cy", "dan", "eve", "fay", "gus"].enumerated() {
            #expect(try await reasons(store, ["e\(index)"], recipient: user) == [.sent])
        }
        let nextMinute = Timestamp(epochMilliseconds: noon.epochMilliseconds + 60_000)
        #expect(try await reasons(store, ["n1"], at: nextMinute) == [.sent])
        #expect(
            try await reasons(store, ["late1", "late2"]) == [.sent, .throttledDigested],
            "ana has one this minute"
        )
        #expect(try await reasons(store, ["n2", "n3"], at: nextMinute) == [.sent, .throttledDigested])
    }
}
