import HeraldEvents

/// Recipients recently read from SQLite, so the worker's hot users are not looked up in the B-trees
/// on every batch: a lookup is a few microseconds of SQLite and row decoding per user, which is
/// most of a decision's cost.
///
/// It stays right because every change passes through its owner: ``SQLiteStore/apply(_:)`` drops
/// the users a change touched (including the previous holder of a token that moved) and, once the
/// change has committed, offers them back as written (``offer(_:for:)``); a commit by any other
/// connection — another process sharing the file — changes `PRAGMA data_version`, which drops
/// everything.
///
/// Bounded to `capacity` users by the clock (second-chance) policy: entries sit in a ring of slots,
/// a hit sets its slot's `used` bit, and an insert into a full ring sweeps from the hand, clearing
/// set bits, to the first slot not used since the last sweep. A hit is one hash lookup and a bit,
/// and nothing is moved: the two generations this replaced moved every hit in the older one into
/// the newer (a removal and an insertion) and freed half the cache at once when they turned over:
/// with half of 200,000 users cached, the clock took a lookup from about 6.4 to 5.1 µs per
/// decision (`herald bench decisions`, alternated). Users the directory does not know are remembered
/// as absent too, so unknown recipients do not reach SQLite each time either.
struct RecipientCache {
    enum Entry {
        case present(Recipient)
        case absent
    }

    private struct Slot {
        var userID: OpaqueID
        var entry: Entry
        var used: Bool
    }

    let capacity: Int
    private var slots: [Slot] = []
    /// Each cached user's slot, by the id's bytes: ids that differ only in their Unicode
    /// normalization are other users (``OpaqueID``).
    private var index: [OpaqueID: Int] = [:]
    /// Slots emptied by ``invalidate(_:)``, filled before anything is evicted.
    private var free: [Int] = []
    private var hand = 0
    /// The database's `data_version` the entries were read at.
    var dataVersion: Int64?

    init(capacity: Int) {
        self.capacity = capacity
    }

    var isEnabled: Bool { capacity > 0 }

    mutating func lookup(_ userID: String) -> Entry? {
        guard let slot = index[OpaqueID(userID)] else { return nil }
        slots[slot].used = true
        return slots[slot].entry
    }

    mutating func insert(_ entry: Entry, for userID: String) {
        guard isEnabled else { return }
        let userID = OpaqueID(userID)
        if let slot = index[userID] {
            slots[slot].entry = entry
            slots[slot].used = true
            return
        }
        let slot: Int
        if let reused = free.popLast() {
            slot = reused
            slots[slot] = Slot(userID: userID, entry: entry, used: false)
        } else if slots.count < capacity {
            // Room for the slots at once: the ring is filled front to back, so untouched room
            // costs address space only, where growing by doubling copied every cached recipient.
            // Not the index: its buckets are touched all over, and sized for the capacity it had
            // twice the buckets the pipeline benchmark's 100,000 users need (6 MB more).
            if slots.isEmpty { slots.reserveCapacity(min(capacity, 1 << 20)) }
            slot = slots.count
            slots.append(Slot(userID: userID, entry: entry, used: false))
        } else {
            // Every slot holds a user here (free ones are filled first), so the sweep ends within
            // one turn: it clears the bits it passes.
            while slots[hand].used {
                slots[hand].used = false
                hand = (hand + 1) % slots.count
            }
            slot = hand
            hand = (hand + 1) % slots.count
            index.removeValue(forKey: slots[slot].userID)
            slots[slot] = Slot(userID: userID, entry: entry, used: false)
        }
        index[userID] = slot
    }

    /// Keeps `entry` for `userID` only where that evicts no one: it replaces a cached user's entry
    /// (their `used` bit as it was), or takes a free slot or room the ring has not filled yet.
    /// A directory change offers each user it wrote, so a user who just registered a device or
    /// changed their preferences is found here by their next event, and a cache still filling
    /// after a start fills with them; a full cache keeps the users its look-ups chose.
    mutating func offer(_ entry: Entry, for userID: String) {
        guard isEnabled else { return }
        if let slot = index[OpaqueID(userID)] {
            slots[slot].entry = entry
            return
        }
        if free.isEmpty && slots.count >= capacity { return }
        insert(entry, for: userID)
    }

    /// Drops `userID`'s entry; whether the cache held one.
    @discardableResult
    mutating func invalidate(_ userID: OpaqueID) -> Bool {
        guard let slot = index.removeValue(forKey: userID) else { return false }
        // The slot keeps its user's id until reused, but no longer answers for it.
        slots[slot].entry = .absent
        slots[slot].used = false
        free.append(slot)
        return true
    }

    mutating func removeAll() {
        slots.removeAll(keepingCapacity: true)
        index.removeAll(keepingCapacity: true)
        free.removeAll()
        hand = 0
    }

    var count: Int { index.count }
}
