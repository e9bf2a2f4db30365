/// An immutable run of bytes: a message key, value or header value.
///
/// Consumed messages of one batch share a single buffer, and each `KafkaBytes` is a view into it,
/// so receiving a batch costs one allocation rather than several per message. Passing a consumed
/// value to the producer copies nothing until librdkafka takes its own copy.
public struct KafkaBytes: Sendable, Hashable, RandomAccessCollection, CustomStringConvertible {
    @usableFromInline let base: [UInt8]
    @usableFromInline let start: Int
    public let count: Int

    /// Wraps an array without copying it.
    @inlinable
    public init(_ bytes: [UInt8]) {
        self.base = bytes
        self.start = 0
        self.count = bytes.count
    }

    /// The UTF-8 bytes of a string.
    public init(_ string: String) {
        self.init(Array(string.utf8))
    }

    /// The bytes `range` of `arena`, sharing its storage: the values of many records written into
    /// one array, each a part of it, instead of an array of its own each.
    public init(_ arena: [UInt8], _ range: Range<Int>) {
        precondition(
            range.lowerBound >= 0 && range.upperBound <= arena.count,
            "\(range) is outside \(arena.count) bytes"
        )
        self.init(base: arena, start: range.lowerBound, count: range.count)
    }

    init(base: [UInt8], start: Int, count: Int) {
        self.base = base
        self.start = start
        self.count = count
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    @inlinable
    public subscript(position: Int) -> UInt8 {
        precondition(position >= 0 && position < count, "KafkaBytes index out of range")
        return base[start &+ position]
    }

    /// Calls `body` with the bytes in contiguous memory. An empty value may have no base address.
    @inlinable
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try base.withUnsafeBytes { all in
            try body(UnsafeRawBufferPointer(rebasing: all[start..<(start &+ count)]))
        }
    }

    public func withContiguousStorageIfAvailable<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        try base.withUnsafeBufferPointer { all in
            try body(UnsafeBufferPointer(rebasing: all[start..<(start &+ count)]))
        }
    }

    /// The bytes decoded as UTF-8 (invalid sequences are replaced).
    public var string: String {
        withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    public var description: String { "\(count) bytes" }

    public static func == (lhs: KafkaBytes, rhs: KafkaBytes) -> Bool {
        lhs.count == rhs.count && lhs.withUnsafeBytes { l in rhs.withUnsafeBytes { r in l.elementsEqual(r) } }
    }

    public func hash(into hasher: inout Hasher) {
        withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}

extension KafkaBytes: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(value) }
}
