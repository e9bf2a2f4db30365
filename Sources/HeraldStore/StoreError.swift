import HeraldEvents

/// A state-store failure. `message` names tables and operations but never contains user ids or
/// tokens.
public struct StoreError: CodedError {
    public typealias Code = ErrorCode
    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }
}

extension StoreError {
    /// Runs `step` on items `0..<count` together; when the store refuses them for what they hold
    /// (`store.rejected`), on each half in turn, down to single items. Returns the items refused
    /// even alone, with the store's error; the rest went through, in order. Any other error is
    /// thrown: the caller tries again whole (the store makes doing a part twice harmless).
    ///
    /// If every one of several items is refused, the store's error is thrown too: what refuses
    /// them all is more likely the store (a schema or a setting) than each of them, and they wait
    /// for it to be mended rather than all being dead-lettered.
    public static func isolatingRefusals(
        _ count: Int,
        _ step: (Range<Int>) async throws(StoreError) -> Void
    ) async throws(StoreError) -> [(item: Int, error: StoreError)] {
        var refused: [(item: Int, error: StoreError)] = []
        var pending = [0..<count]
        while let items = pending.popLast() {
            guard !items.isEmpty else { continue }
            do {
                try await step(items)
            } catch  where error.code == .storeRejected {
                guard items.count > 1 else {
                    refused.append((items.lowerBound, error))
                    continue
                }
                let middle = items.lowerBound + items.count / 2
                // The first half first: popped last, pushed last.
                pending.append(middle..<items.upperBound)
                pending.append(items.lowerBound..<middle)
            }
        }
        if count > 1, refused.count == count, let first = refused.first { throw first.error }
        return refused
    }
}

extension ErrorCode {
    /// The database could not be opened or created.
    public static let storeOpen = ErrorCode("store.open")
    /// A schema migration failed.
    public static let storeMigration = ErrorCode("store.migration")
    /// A query failed.
    public static let storeQuery = ErrorCode("store.query")
    /// The store refused what a call holds — a value it cannot keep, a constraint it breaks — so
    /// the same call would be refused again however often it is made (PostgreSQL's SQLSTATE
    /// classes 22, 23 and 54; SQLite's constraint, too-big and mismatch errors). A caller can
    /// find what it was by trying the parts of the call apart.
    public static let storeRejected = ErrorCode("store.rejected")
}
