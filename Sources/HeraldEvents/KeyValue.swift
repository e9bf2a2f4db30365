/// One string entry of a notification's data for the app: the rendering's and the push message's
/// share one type, so a push message takes the rendering's array as it is instead of copying it.
public struct KeyValue: Sendable, Hashable {
    public var key: String
    public var value: String

    public init(_ key: String, _ value: String) {
        self.key = key
        self.value = value
    }
}

extension Collection where Element == KeyValue {
    /// Calls `body` with each entry's key and value where they are. `for entry in data` copies each
    /// entry, retaining and releasing its two strings, and every payload goes through its data.
    @inlinable
    public func forEachEntry(_ body: (_ key: String, _ value: String) throws -> Void) rethrows {
        let done: Void? = try withContiguousStorageIfAvailable { entries in
            for index in entries.indices { try body(entries[index].key, entries[index].value) }
        }
        if done == nil {
            for entry in self { try body(entry.key, entry.value) }
        }
    }
}
