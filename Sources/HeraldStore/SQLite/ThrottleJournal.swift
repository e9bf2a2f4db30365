import HeraldEvents
import HeraldPolicy

/// The notifications one transaction counted, as the one `throttle_journal` row it appends.
///
/// A row per counted notification cost a statement each, about as much as the decision's own
/// insert; a transaction's counts are only ever read back together, by ``ThrottleCounts/recover(_:)``.
///
/// Each entry is the window's start and end (milliseconds), its rule and its recipient, packed
/// (``PackedWriter``).
struct ThrottleJournal {
    private var writer = PackedWriter()
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }
    var bytes: [UInt8] { writer.bytes }

    mutating func append(_ key: ThrottleKey, windowEnd: Timestamp) {
        writer.append(key.windowStart.epochMilliseconds)
        writer.append(windowEnd.epochMilliseconds)
        writer.append(key.rule)
        writer.append(key.recipient)
        count += 1
    }

    mutating func removeAll() {
        writer.removeAll()
        count = 0
    }

    /// Calls `entry` with each window counted in a row's bytes, once per notification.
    static func forEach(
        in row: UnsafeRawBufferPointer,
        _ entry: (ThrottleKey, _ windowEnd: Timestamp) throws(StoreError) -> Void
    ) throws(StoreError) {
        var reader = PackedReader(row)
        while !reader.isAtEnd {
            guard let start = reader.integer(), let end = reader.integer(), let rule = reader.text(),
                let recipient = reader.text()
            else { throw StoreError(code: .storeQuery, message: "throttle_journal: a malformed entry") }
            try entry(
                ThrottleKey(recipient: recipient, rule: rule, windowStart: Timestamp(epochMilliseconds: start)),
                Timestamp(epochMilliseconds: end)
            )
        }
    }
}
