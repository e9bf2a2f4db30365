import HeraldPolicy

/// Digest items as deciding transactions collect them: appended to `digest_items`, which has no
/// index but its row id, and indexed by digest (`digest_index`) in bulk, a fold at a time.
///
/// A digest that comes due finds its items by recipient, rule and window. Indexed that way as each
/// was inserted, every digested notification dirtied an index page of its own (its recipient's),
/// and a commit writes each page it changed to the WAL whole (and the checkpoint writes it again):
/// with 2,000 busy users a run wrote 10.4 GB instead of 3.1 and ran at 71,000–72,000 events/s
/// instead of 91,000–96,000 (docs/benchmarks.md, alternated). Appended, a batch's items share a few pages; a fold sorts the new
/// items' keys and writes each digest's index page once for all of them.
///
/// `digest_folded.through` is the last item id indexed; ids are never reused (AUTOINCREMENT), so
/// the items after it are the ones not yet indexed. Whatever reads or deletes digest items (a
/// claim, a completion, a user's deletion) folds first, in its own transaction, so it sees every
/// item, another process's too. Otherwise a deciding transaction folds at its end once about
/// `foldThreshold` items wait. That count is this connection's: another process's appends, or a
/// rolled-back fold, only change when the next fold comes.
struct DigestBuffer {
    /// Items appended before a deciding transaction folds them.
    let foldThreshold: Int
    /// Items not yet indexed, as this connection counted them; nil (at first, and after a
    /// rollback) until the next append counts them in the table.
    private var pending: Int?

    init(foldThreshold: Int) {
        self.foldThreshold = max(foldThreshold, 1)
    }

    /// Appends a digested notification: `payload` (its event) to the digest of `window`.
    mutating func append(
        _ window: ThrottleKey,
        eventID: String,
        kind: String,
        payload: String,
        addedAt: Int64,
        _ connection: SQLiteConnection
    ) throws(StoreError) {
        try connection.query(
            """
            INSERT INTO digest_items (recipient, rule, window_start, event_id, kind, payload, added_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(window.recipient), .text(window.rule), .integer(window.windowStart.epochMilliseconds),
                .text(eventID), .text(kind), .text(payload), .integer(addedAt),
            ]
        )
        if let counted = pending {
            pending = counted + 1
        } else {
            var counted = 0
            try connection.query(
                "SELECT count(*) FROM digest_items WHERE id > (SELECT through FROM digest_folded)"
            ) { row in counted = Int(row.integer(0)) }
            pending = counted
        }
    }

    /// Call last in a deciding transaction: folds once the items not yet indexed reach the threshold.
    mutating func end(_ connection: SQLiteConnection) throws(StoreError) {
        guard let counted = pending, counted >= foldThreshold else { return }
        try fold(connection)
    }

    /// Indexes every item appended since the last fold; call inside the transaction that then reads
    /// or deletes digest items.
    mutating func fold(_ connection: SQLiteConnection) throws(StoreError) {
        try Self.fold(connection)
        pending = 0
    }

    /// The transaction that appended or folded rolled back: the count is no longer known.
    mutating func rolledBack() {
        pending = nil
    }

    /// ``fold(_:)`` for a caller without the connection's buffer (a user's deletion, applied by the
    /// directory): the buffer's count then runs ahead, and its next fold comes a little early.
    static func fold(_ connection: SQLiteConnection) throws(StoreError) {
        try connection.query(
            """
            INSERT INTO digest_index (recipient, rule, window_start, id)
            SELECT recipient, rule, window_start, id FROM digest_items WHERE id > (SELECT through FROM digest_folded)
            ORDER BY recipient, rule, window_start, id
            """
        )
        // Ids are never reused (AUTOINCREMENT): every item after `through` is one not yet indexed.
        try connection.query(
            "UPDATE digest_folded SET through = max(through, (SELECT coalesce(max(id), 0) FROM digest_items))"
        )
    }
}
