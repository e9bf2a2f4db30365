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
/// A fold is spread over the transactions after it begins, a slice of windows (in key order, so a
/// slice's windows share pages) per transaction, about as many as that transaction counted: written
/// all at once, 50,000 windows held the store for 100–210 ms, during which every later batch waited
/// for its decisions and the worker's other threads ran out of work (a core idle, every 1.2–1.8 s).
///
/// It stays exact, across crashes and processes, because each stored window records the last
/// journal row its count includes (`counted_through`; row ids are never reused), so a window's count
/// is always `throttle_windows.count` plus its entries in later journal rows, and the map holds that
/// sum for every window it has entries for:
/// - the map starts empty after a recovery, when the journal is empty; a window not in the map is
///   read from `throttle_windows`, and every journal entry appended adds one to its entry;
/// - a window written by a fold records the last row appended, its count then including every entry
///   so far; it is marked as counted again by its next entry. When a fold has written every window
///   that was counted when it began, the rows up to that moment hold no entry a window lacks, and
///   are deleted;
/// - entries are dropped only after a fold, and never one counted since its window was written;
/// - a commit by another connection (another process sharing the file changes `PRAGMA
///   data_version`) or a rolled-back transaction leaves the map unknown: the next transaction adds
///   every entry not yet in its window, including the other process's rows, and starts again. A
///   crash leaves the journal behind; the first transaction after opening folds it the same way.
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

    /// A fold under way: the windows counted when it began, in key order, written a slice per
    /// transaction.
    private struct Fold {
        var keys: [ThrottleKey]
        var next = 0
        /// The last journal row when it began: once `keys` are written, no window lacks an entry of
        /// it or of a row before it.
        var lastRow: Int64
        /// The journal entries in those rows.
        var entries: Int
    }

    /// Journal entries that trigger a fold: bounds the journal and the map (about 100 bytes a window).
    let foldThreshold: Int
    /// The fewest windows a transaction writes while a fold is under way (as many as the entries it
    /// appended, if those are more), so that a fold ends however little is being counted.
    let minimumSlice: Int
    private var windows: [ThrottleKey: Window] = [:]
    /// For each start seen since the map was last emptied: `true` if every window of it with a
    /// count is in `windows`; `false` if windows of it may be only in `throttle_windows`.
    private var starts: [WindowStart: Bool] = [:]
    /// Each rule's latest window start seen: the windows eviction keeps.
    private var latestStarts: [String: Int64] = [:]
    /// What the current transaction counted, appended as one journal row when it ends.
    private var pending = ThrottleJournal()
    /// Journal entries in the table.
    private var journaled = 0
    private var fold: Fold?
    /// The id of the journal's last row: the one this connection last appended, or the table's last
    /// at the latest recovery.
    private var lastRow: Int64 = 0
    /// The `data_version` the map was built at; `nil` when it must be rebuilt.
    private var dataVersion: Int64?

    init(foldThreshold: Int, minimumSlice: Int) {
        self.foldThreshold = max(foldThreshold, 1)
        self.minimumSlice = max(minimumSlice, 1)
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

    /// Call last in a transaction that counted: appends its journal row, begins a fold once the
    /// journal has grown past the threshold, or the map has (it also holds windows that were read
    /// and found full), and writes the next slice of a fold under way.
    mutating func end(_ connection: SQLiteConnection) throws(StoreError) {
        let appended = pending.count
        if appended > 0 {
            try connection.query("INSERT INTO throttle_journal (entries) VALUES (?)", [.blob(pending.bytes)])
            lastRow = connection.lastInsertedRowID
            journaled += appended
            pending.removeAll()
        }
        if fold == nil, journaled >= foldThreshold || windows.count >= 4 * foldThreshold {
            fold = Fold(keys: countedKeys(), lastRow: lastRow, entries: journaled)
        }
        guard var current = fold else { return }
        let end = min(current.next + max(minimumSlice, appended), current.keys.count)
        try write(current.keys[current.next..<end], connection)
        current.next = end
        guard end == current.keys.count else {
            fold = current
            return
        }
        try connection.query("DELETE FROM throttle_journal WHERE id <= ?", [.integer(current.lastRow)])
        journaled -= current.entries
        fold = nil
        shrink()
    }

    /// Writes every window counted since it was last written and empties the journal, ending any
    /// fold under way.
    mutating func foldAll(_ connection: SQLiteConnection) throws(StoreError) {
        fold = nil
        try write(countedKeys(), connection)
        try connection.query("DELETE FROM throttle_journal")
        journaled = 0
        shrink()
    }

    /// The windows counted since they were last written, in key order: neighbouring windows share
    /// pages.
    private func countedKeys() -> [ThrottleKey] {
        var keys: [ThrottleKey] = []
        keys.reserveCapacity(min(journaled, windows.count))
        for (key, window) in windows where window.counted { keys.append(key) }
        keys.sort { Self.inKeyOrder($0, $1) }
        return keys
    }

    /// `throttle_windows`' key order. Field by field rather than as tuples: a tuple of the two keys'
    /// strings retained and released them at every comparison of a fold's sort.
    @inline(__always)
    private static func inKeyOrder(_ first: ThrottleKey, _ second: ThrottleKey) -> Bool {
        if first.windowStart != second.windowStart { return first.windowStart < second.windowStart }
        if first.rule != second.rule { return first.rule < second.rule }
        return first.recipient < second.recipient
    }

    /// Writes those of `keys` counted since they were last written into `throttle_windows`, with
    /// their counts from the map and the journal's last row as the last one they include.
    private mutating func write(_ keys: some Sequence<ThrottleKey>, _ connection: SQLiteConnection) throws(StoreError) {
        for key in keys {
            // Marked as written before they are: if a write fails, the transaction rolls back and
            // the map is rebuilt from the journal anyway (``rolledBack()``).
            guard let index = windows.index(forKey: key), windows.values[index].counted else { continue }
            windows.values[index].counted = false
            let window = windows.values[index]
            try connection.query(
                """
                INSERT INTO throttle_windows (window_start, rule, recipient, window_end, count, counted_through)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (window_start, rule, recipient) DO UPDATE
                SET count = excluded.count, window_end = max(window_end, excluded.window_end),
                    counted_through = excluded.counted_through
                """,
                [
                    .integer(key.windowStart.epochMilliseconds), .text(key.rule), .text(key.recipient),
                    .integer(window.end), .integer(Int64(window.count)), .integer(lastRow),
                ]
            )
        }
    }

    /// Shrinks the map after a fold, if it has grown past `4 × foldThreshold` windows; otherwise
    /// forgets the window starts that are no rule's latest (forgetting one only costs reads: its
    /// windows then count as possibly stored).
    private mutating func shrink() {
        if windows.count >= 4 * foldThreshold {
            evict()
        } else if starts.count > 64 {
            starts = starts.filter { latestStarts[$0.key.rule] == $0.key.start }
        }
    }

    /// Deletes the windows that started and ended before `before`, journaled counts and all, and
    /// keeps the rest of the map: a purge runs every few minutes, and forgetting the windows still
    /// being counted would cost a read for each of them afterwards.
    ///
    /// Call inside a counting transaction (after ``begin(_:)``), so the map matches the journal.
    mutating func purgeEnded(before: Int64, _ connection: SQLiteConnection) throws(StoreError) {
        try foldAll(connection)
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

    /// Shrinks the map right after a fold: the windows of each rule's latest start stay, as they are
    /// the ones still being counted; if those alone are too many, they go too. Windows counted
    /// since they were last written always stay: their stored count lacks journal entries.
    private mutating func evict() {
        let latestStarts = latestStarts
        keepWindows { key, window in window.counted || latestStarts[key.rule] == key.windowStart.epochMilliseconds }
        starts = starts.filter { latestStarts[$0.key.rule] == $0.key.start }
        if windows.count >= 2 * foldThreshold {
            keepWindows { _, window in window.counted }
            starts.removeAll()
            self.latestStarts.removeAll()
        }
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

    /// Adds the journal's entries that their windows lack into `throttle_windows`, without the
    /// map: after a crash, a rollback, or another process's commit, when the map is not known to
    /// match the journal. The map starts again empty.
    mutating func recover(_ connection: SQLiteConnection) throws(StoreError) {
        let journal = try Self.journaled(connection).sorted { Self.inKeyOrder($0.key, $1.key) }
        var last: Int64 = 0
        try connection.query("SELECT seq FROM sqlite_sequence WHERE name = 'throttle_journal'") { row in
            last = row.integer(0)
        }
        for (key, window) in journal {
            try connection.query(
                """
                INSERT INTO throttle_windows (window_start, rule, recipient, window_end, count, counted_through)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (window_start, rule, recipient) DO UPDATE
                SET count = count + excluded.count, window_end = max(window_end, excluded.window_end),
                    counted_through = excluded.counted_through
                """,
                [
                    .integer(key.windowStart.epochMilliseconds), .text(key.rule), .text(key.recipient),
                    .integer(window.end), .integer(Int64(window.count)), .integer(last),
                ]
            )
        }
        try connection.query("DELETE FROM throttle_journal")
        journaled = 0
        lastRow = last
        fold = nil
        forgetAll()
    }

    /// The journal's entries that their windows' stored counts lack (those in rows after the
    /// window's `counted_through`), summed by window: how many notifications each counted, and
    /// its end.
    static func journaled(_ connection: SQLiteConnection) throws(StoreError) -> [ThrottleKey: (count: Int, end: Int64)]
    {
        var entries: [(row: Int64, key: ThrottleKey, end: Int64)] = []
        try connection.query("SELECT id, entries FROM throttle_journal") { row throws(StoreError) in
            let id = row.integer(0)
            try ThrottleJournal.forEach(in: row.blob(1)) { key, end in
                entries.append((id, key, end.epochMilliseconds))
            }
        }
        var countedThrough: [ThrottleKey: Int64] = [:]
        var windows: [ThrottleKey: (count: Int, end: Int64)] = [:]
        for entry in entries {
            let stored: Int64
            if let known = countedThrough[entry.key] {
                stored = known
            } else {
                var found: Int64 = 0
                try connection.query(
                    """
                    SELECT counted_through FROM throttle_windows WHERE window_start = ? AND rule = ? AND recipient = ?
                    """,
                    [
                        .integer(entry.key.windowStart.epochMilliseconds), .text(entry.key.rule),
                        .text(entry.key.recipient),
                    ]
                ) { row in found = row.integer(0) }
                countedThrough[entry.key] = found
                stored = found
            }
            guard entry.row > stored else { continue }
            let known = windows[entry.key] ?? (0, entry.end)
            windows[entry.key] = (known.count + 1, max(known.end, entry.end))
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
