import HeraldPolicy

/// The throttle windows a ``SQLiteStore`` counts against, held in memory, with the notifications a
/// deciding transaction counted appended to `throttle_journal` as one row (``ThrottleJournal``) and
/// folded into `throttle_windows` in bulk.
///
/// Counting straight into `throttle_windows` dirtied one page per recipient per batch, at random,
/// and SQLite writes every dirty page to the write-ahead log at each commit and again at each
/// checkpoint: with recipients spread over a million devices that was most of a decision's cost.
/// A transaction appends one journal row, so a batch dirties a few pages; a fold writes each window
/// counted since the last one once, with its count from memory, in key order.
///
/// It stays exact, across crashes and processes, because a window's count is always
/// `throttle_windows.count` plus its journal entries, and the map holds that sum for every window it
/// has entries for:
/// - the map starts empty right after a fold, when the journal is empty; a window not in the map is
///   read from `throttle_windows`, and every journal entry appended adds one to its entry;
/// - entries are dropped only right after a fold;
/// - a commit by another connection (another process sharing the file changes `PRAGMA
///   data_version`) or a rolled-back transaction leaves the map unknown: the next transaction folds
///   everything, including the other process's rows, and starts again. A crash leaves the journal
///   behind; the first transaction after opening folds it the same way.
///
/// A window not in the map costs a read, and most windows are new: a user's first notification of
/// the hour. So the map also knows, for each rule's window start it has seen, whether
/// `throttle_windows` held no window of that start when it was first seen. While that stays true,
/// every window of the start with a count is in the map (its journal entries put it there, and
/// nothing of it is evicted), so one missing from the map holds 0 and is not read. Evicting a
/// start's windows, or emptying the map, forgets what is known of the start.
///
/// Used only on the store's serial queue, inside a write transaction.
struct ThrottleCounts {
    /// A window's count, and whether it changed since the last fold.
    private struct Window {
        var count: Int
        var end: Int64
        var counted: Bool

        mutating func countOne() {
            count += 1
            counted = true
        }
    }

    /// One rule's windows that start at one instant.
    private struct WindowStart: Hashable {
        var rule: String
        var start: Int64
    }

    /// Journal entries that trigger a fold: bounds the journal and the map (about 100 bytes a window).
    let foldThreshold: Int
    private var windows: [ThrottleKey: Window] = [:]
    /// For each start seen since the map was last emptied: `true` if every window of it with a
    /// count is in `windows`; `false` if windows of it may be only in `throttle_windows`.
    private var starts: [WindowStart: Bool] = [:]
    /// Each rule's latest window start seen: the windows eviction keeps.
    private var latestStarts: [String: Int64] = [:]
    /// What the current transaction counted, appended as one journal row when it ends.
    private var pending = ThrottleJournal()
    /// Journal entries since the last fold.
    private var journaled = 0
    /// The `data_version` the map was built at; `nil` when it must be rebuilt.
    private var dataVersion: Int64?

    init(foldThreshold: Int) {
        self.foldThreshold = max(foldThreshold, 1)
    }

    /// Call first in every transaction that counts: rebuilds the map if anything but this
    /// connection may have changed the windows since it was built.
    mutating func begin(_ connection: SQLiteConnection) throws(StoreError) {
        pending.removeAll()
        var version: Int64 = 0
        try connection.query("PRAGMA data_version") { row in version = row.integer(0) }
        guard dataVersion != version else { return }
        try recover(connection)
        dataVersion = version
    }

    /// The transaction that counted rolled back: its journal row is gone, its counts are not.
    mutating func rolledBack() {
        pending.removeAll()
        dataVersion = nil
    }

    /// ``DecisionPlan/resolved(counts:)`` against the windows' current counts; a notification that
    /// fits is counted in every window it is limited by.
    mutating func resolve(_ plan: DecisionPlan, _ connection: SQLiteConnection) throws(StoreError) -> PolicyOutcome {
        guard plan.outcome.reason == .sent, !plan.limits.isEmpty else { return plan.outcome }
        let outcome = try plan.resolved { limit throws(StoreError) in try count(limit, connection) }
        guard outcome.reason == .sent else { return outcome }
        for limit in plan.limits {
            windows[limit.key]?.countOne()
            pending.append(limit.key, windowEnd: limit.windowEnd)
        }
        return outcome
    }

    /// Call last in a transaction that counted: folds once the journal has grown past the threshold,
    /// or the map has (it also holds windows that were read and found full).
    mutating func end(_ connection: SQLiteConnection) throws(StoreError) {
        if !pending.isEmpty {
            try connection.query("INSERT INTO throttle_journal (entries) VALUES (?)", [.blob(pending.bytes)])
            journaled += pending.count
            pending.removeAll()
        }
        if journaled >= foldThreshold || windows.count >= 4 * foldThreshold { try fold(connection) }
    }

    /// Writes the windows counted since the last fold into `throttle_windows`, with their counts
    /// from the map, and empties the journal. The map is then all in `throttle_windows`, so it is
    /// kept for the windows that come back, unless it has grown past `4 × foldThreshold` windows.
    mutating func fold(_ connection: SQLiteConnection) throws(StoreError) {
        // Marked as written before they are: if a write fails, the transaction rolls back and the
        // map is rebuilt from the journal anyway (``rolledBack()``).
        var counted: [(key: ThrottleKey, window: Window)] = []
        counted.reserveCapacity(min(journaled, windows.count))
        // Walked by index, not over `windows.indices`: that holds the storage, so the first change
        // below would copy the whole map.
        var index = windows.startIndex
        while index != windows.endIndex {
            if windows.values[index].counted {
                counted.append((windows.keys[index], windows.values[index]))
                windows.values[index].counted = false
            }
            windows.formIndex(after: &index)
        }
        // In key order: neighbouring windows share pages.
        counted.sort {
            ($0.key.windowStart, $0.key.rule, $0.key.recipient) < ($1.key.windowStart, $1.key.rule, $1.key.recipient)
        }
        for (key, window) in counted {
            try connection.query(
                """
                INSERT INTO throttle_windows (window_start, rule, recipient, window_end, count) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (window_start, rule, recipient) DO UPDATE
                SET count = excluded.count, window_end = max(window_end, excluded.window_end)
                """,
                [
                    .integer(key.windowStart.epochMilliseconds), .text(key.rule), .text(key.recipient),
                    .integer(window.end), .integer(Int64(window.count)),
                ]
            )
        }
        try connection.query("DELETE FROM throttle_journal")
        journaled = 0
        if windows.count >= 4 * foldThreshold {
            evict()
        } else if starts.count > 64 {
            // Forgetting a start only costs reads: its windows then count as possibly stored.
            starts = starts.filter { latestStarts[$0.key.rule] == $0.key.start }
        }
    }

    /// Deletes the windows that started and ended before `before`, journaled counts and all, and
    /// keeps the rest of the map: a purge runs every few minutes, and forgetting the windows still
    /// being counted would cost a read for each of them afterwards.
    ///
    /// Call inside a counting transaction (after ``begin(_:)``), so the map matches the journal.
    mutating func purgeEnded(before: Int64, _ connection: SQLiteConnection) throws(StoreError) {
        try fold(connection)
        // Windows are clustered by start, and one that ended before `before` started before it:
        // the bound on the start keeps this a range of the table, not a scan.
        try connection.query(
            "DELETE FROM throttle_windows WHERE window_start < ?1 AND window_end < ?1",
            [.integer(before)]
        )
        // The same windows leave the map, so it still holds each window's stored count. What is
        // known of the starts before `before` is forgotten: a window of one may have been stored
        // with a later end than the map knew, and so be neither deleted nor in the map. Those starts
        // have ended unless a rule's window is longer than the retention.
        keepWindows { key, window in key.windowStart.epochMilliseconds >= before || window.end >= before }
        starts = starts.filter { $0.key.start >= before }
    }

    /// How many windows the map holds: tests check that a purge keeps the ones being counted.
    var windowsInMemory: Int { windows.count }

    /// Shrinks the map right after a fold (every window in it is then in `throttle_windows`): the
    /// windows of each rule's latest start stay, as they are the ones still being counted; if
    /// those alone are too many, everything goes.
    private mutating func evict() {
        let latestStarts = latestStarts
        keepWindows { key, _ in latestStarts[key.rule] == key.windowStart.epochMilliseconds }
        starts = starts.filter { latestStarts[$0.key.rule] == $0.key.start }
        if windows.count >= 2 * foldThreshold { forgetAll() }
    }

    private mutating func forgetAll() {
        windows.removeAll(keepingCapacity: true)
        starts.removeAll()
        latestStarts.removeAll()
    }

    /// Keeps the windows `isKept` accepts in the map's own table. The map fills to about
    /// `4 × foldThreshold` windows between evictions; a filtered copy, or an emptied map, started a
    /// new table that grew there again by doubling, rehashing every window and faulting in fresh
    /// pages at each step — a twentieth of `herald bench decisions`' time.
    private mutating func keepWindows(where isKept: (ThrottleKey, Window) -> Bool) {
        var kept: [(key: ThrottleKey, window: Window)] = []
        for (key, window) in windows where isKept(key, window) { kept.append((key, window)) }
        guard kept.count < windows.count else { return }
        windows.removeAll(keepingCapacity: true)
        for (key, window) in kept { windows[key] = window }
    }

    /// Adds whatever the journal holds into `throttle_windows` without the map: after a crash, a
    /// rollback, or another process's commit, when the map is not known to match the journal.
    /// The map starts again empty.
    mutating func recover(_ connection: SQLiteConnection) throws(StoreError) {
        let journal = try Self.journaled(connection).sorted {
            ($0.key.windowStart, $0.key.rule, $0.key.recipient) < ($1.key.windowStart, $1.key.rule, $1.key.recipient)
        }
        for (key, window) in journal {
            try connection.query(
                """
                INSERT INTO throttle_windows (window_start, rule, recipient, window_end, count) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (window_start, rule, recipient) DO UPDATE
                SET count = count + excluded.count, window_end = max(window_end, excluded.window_end)
                """,
                [
                    .integer(key.windowStart.epochMilliseconds), .text(key.rule), .text(key.recipient),
                    .integer(window.end), .integer(Int64(window.count)),
                ]
            )
        }
        try connection.query("DELETE FROM throttle_journal")
        journaled = 0
        forgetAll()
    }

    /// The journal's entries summed by window: how many notifications each counted, and its end.
    static func journaled(_ connection: SQLiteConnection) throws(StoreError) -> [ThrottleKey: (count: Int, end: Int64)]
    {
        var windows: [ThrottleKey: (count: Int, end: Int64)] = [:]
        try connection.query("SELECT entries FROM throttle_journal") { row throws(StoreError) in
            try ThrottleJournal.forEach(in: row.blob(0)) { key, end in
                let end = end.epochMilliseconds
                let known = windows[key] ?? (0, end)
                windows[key] = (known.count + 1, max(known.end, end))
            }
        }
        return windows
    }

    private mutating func count(_ limit: ThrottleLimit, _ connection: SQLiteConnection) throws(StoreError) -> Int {
        if let known = windows[limit.key] { return known.count }
        let start = WindowStart(rule: limit.key.rule, start: limit.key.windowStart.epochMilliseconds)
        latestStarts[start.rule] = max(latestStarts[start.rule] ?? start.start, start.start)
        let complete: Bool
        if let known = starts[start] {
            complete = known
        } else {
            var stored = false
            try connection.query(
                "SELECT 1 FROM throttle_windows WHERE window_start = ? AND rule = ? LIMIT 1",
                [.integer(start.start), .text(start.rule)]
            ) { _ in stored = true }
            complete = !stored
            starts[start] = complete
        }
        let stored = complete ? 0 : try read(limit, connection)
        windows[limit.key] = Window(count: stored, end: limit.windowEnd.epochMilliseconds, counted: false)
        return stored
    }

    private func read(_ limit: ThrottleLimit, _ connection: SQLiteConnection) throws(StoreError) -> Int {
        var stored = 0
        try connection.query(
            "SELECT count FROM throttle_windows WHERE window_start = ? AND rule = ? AND recipient = ?",
            [.integer(limit.key.windowStart.epochMilliseconds), .text(limit.key.rule), .text(limit.key.recipient)]
        ) { row in stored = Int(row.integer(0)) }
        return stored
    }
}
