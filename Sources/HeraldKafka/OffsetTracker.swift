import DequeModule

/// Tracks the messages of one partition that were handed to the application, and which of them are
/// done, so that the committed offset never passes a message that is not.
///
/// Offsets are handed out in increasing order but need not be consecutive (compaction and transaction
/// markers leave gaps), so the tracker records the offsets it handed out rather than assuming `n + 1`.
/// Finishing 0, 1 and 3 of 0...3 makes 2 the committable position: the next offset to read.
struct OffsetTracker: Sendable {
    /// Which assignment of the partition this tracker belongs to: every assignment gets a new one.
    let epoch: Int
    private var pending: Deque<Entry> = []
    /// The next offset to commit: one past the highest offset below which everything is done.
    private(set) var committable: Int64?
    /// How many handed-out messages are not yet done.
    private(set) var outstanding = 0

    /// The offset up to which everything is done: ``committable``, or before anything was done, the
    /// first offset handed out. `nil` until a message is handed out.
    var donePosition: Int64? { committable ?? pending.first?.offset }

    private struct Entry: Sendable {
        var offset: Int64
        var done: Bool
        /// Given back undone (``release(_:)``): not outstanding, and never committed past.
        var released = false
    }

    init(epoch: Int = 0) {
        self.epoch = epoch
    }

    /// Records that the message at `offset` was handed to the application.
    mutating func handedOut(_ offset: Int64) {
        if let last = pending.last, last.offset >= offset { return }
        if pending.isEmpty, let committable, offset < committable { return }
        pending.append(Entry(offset: offset, done: false))
        outstanding += 1
    }

    /// Marks the message at `offset` done.
    ///
    /// - Returns: whether ``committable`` moved forward.
    @discardableResult
    mutating func markDone(_ offset: Int64) -> Bool {
        guard let index = position(of: offset), !pending[index].done, !pending[index].released else { return false }
        pending[index].done = true
        outstanding -= 1
        guard index == pending.startIndex else { return false }
        var advanced: Int64?
        while let first = pending.first, first.done {
            advanced = first.offset + 1
            pending.removeFirst()
        }
        if let advanced { committable = advanced }
        return advanced != nil
    }

    /// Gives the message at `offset` back without it being done: nothing waits for it any more,
    /// and ``committable`` never passes it, so the partition's next owner reads it again.
    mutating func release(_ offset: Int64) {
        guard let index = position(of: offset), !pending[index].done, !pending[index].released else { return }
        pending[index].released = true
        outstanding -= 1
    }

    private func position(of offset: Int64) -> Int? {
        // Messages are mostly finished in order: try the front before searching.
        if let first = pending.first, first.offset == offset { return pending.startIndex }
        var low = pending.startIndex
        var high = pending.endIndex
        while low < high {
            let middle = low + (high - low) / 2
            let value = pending[middle].offset
            if value == offset { return middle }
            if value < offset { low = middle + 1 } else { high = middle }
        }
        return nil
    }
}
