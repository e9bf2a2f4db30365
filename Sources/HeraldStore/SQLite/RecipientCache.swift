/// Recipients recently read from SQLite, so the worker's hot users are not looked up in the B-trees
/// on every batch: a lookup is a few microseconds of SQLite and row decoding per user, which is
/// most of a decision's cost.
///
/// It stays right because every change passes through its owner: ``SQLiteStore/apply(_:)`` drops
/// the users a change touched (including the previous holder of a token that moved), and a commit
/// by any other connection — another process sharing the file — changes `PRAGMA data_version`,
/// which drops everything.
///
/// Two generations bound it to `capacity` users and keep the recently used ones: lookups fill
/// `recent`; when it holds half the capacity it becomes `older`, and the previous `older` is
/// dropped. A hit in `older` moves the user back into `recent`. Users the directory does not know
/// are remembered as absent too, so unknown recipients do not reach SQLite each time either.
struct RecipientCache {
    enum Entry {
        case present(Recipient)
        case absent
    }

    let capacity: Int
    private var recent: [String: Entry] = [:]
    private var older: [String: Entry] = [:]
    /// The database's `data_version` the entries were read at.
    var dataVersion: Int64?

    init(capacity: Int) {
        self.capacity = capacity
    }

    var isEnabled: Bool { capacity > 0 }

    mutating func lookup(_ userID: String) -> Entry? {
        if let entry = recent[userID] { return entry }
        guard let entry = older.removeValue(forKey: userID) else { return nil }
        insert(entry, for: userID)
        return entry
    }

    mutating func insert(_ entry: Entry, for userID: String) {
        guard isEnabled else { return }
        if recent.count >= max(capacity / 2, 1) {
            older = recent
            recent = [:]
            recent.reserveCapacity(max(capacity / 2, 1))
        }
        recent[userID] = entry
    }

    mutating func invalidate(_ userID: String) {
        recent.removeValue(forKey: userID)
        older.removeValue(forKey: userID)
    }

    mutating func removeAll() {
        recent = [:]
        older = [:]
    }

    var count: Int { recent.count + older.count }
}
