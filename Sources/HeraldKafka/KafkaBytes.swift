/// An immutable run of bytes: a message key, value or header value.
///
/// Consumed messages of one batch share a single buffer, and each `KafkaBytes` is a view into it,
/// so receiving a batch costs one allocation rather than several per message. Passing a consumed
/// value to the producer copies nothing until librdkafka takes its own copy. Values written for the
/// producer can likewise be parts of one ``KafkaByteBuffer`` that took over the writer's memory.
public struct KafkaBytes: Sendable, Hashable, RandomAccessCollection, CustomStringConvertible {
    /// Where the bytes live: an array, or memory a ``KafkaByteBuffer`` owns.
    @usableFromInline enum Storage: Sendable {
        case array([UInt8])
        case buffer(KafkaByteBuffer)
    }

    @usableFromInline let storage: Storage
    @usableFromInline let start: Int
    public let count: Int

    /// Wraps an array without copying it.
    @inlinable
    public init(_ bytes: [UInt8]) {
        self.storage = .array(bytes)
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

    /// The bytes `range` of `buffer`, sharing it, as parts of an arena array share the array: the
    /// values of a writer's records, without copying them into an array first.
    public init(_ buffer: KafkaByteBuffer, _ range: Range<Int>) {
        precondition(
            range.lowerBound >= 0 && range.upperBound <= buffer.count,
            "\(range) is outside \(buffer.count) bytes"
        )
        self.storage = .buffer(buffer)
        self.start = range.lowerBound
        self.count = range.count
    }

    init(base: [UInt8], start: Int, count: Int) {
        self.storage = .array(base)
        self.start = start
        self.count = count
    }

    /// The array the bytes are a part of, and where they start in it (copied into one if they live in
    /// a ``KafkaByteBuffer``): for the header decoding of consumed messages, whose headers always
    /// live in the batch's array.
    var arrayAndStart: (array: [UInt8], start: Int) {
        switch storage {
        case .array(let array): (array, start)
        case .buffer: (withUnsafeBytes { Array($0) }, 0)
        }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    @inlinable
    public subscript(position: Int) -> UInt8 {
        precondition(position >= 0 && position < count, "KafkaBytes index out of range")
        switch storage {
        case .array(let array): return array[start &+ position]
        case .buffer(let buffer): return buffer.byte(at: start &+ position)
        }
    }

    /// Calls `body` with the bytes in contiguous memory. An empty value may have no base address.
    @inlinable
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch storage {
        case .array(let array):
            return try array.withUnsafeBytes { all in
                try body(UnsafeRawBufferPointer(rebasing: all[start..<(start &+ count)]))
            }
        case .buffer(let buffer):
            return try buffer.withUnsafeBytes { all in
                try body(UnsafeRawBufferPointer(rebasing: all[start..<(start &+ count)]))
            }
        }
    }

    public func withContiguousStorageIfAvailable<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        // Bound to bytes for the call: a handed-over buffer's memory was written as raw bytes and
        // never bound to a type (an array's already is).
        try withUnsafeBytes { bytes in try bytes.withMemoryRebound(to: UInt8.self) { try body($0) } }
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

/// Bytes in memory allocated elsewhere (with `UnsafeMutableRawPointer.allocate`), which this buffer
/// owns from then on and frees with the last ``KafkaBytes`` that uses it: a writer's output handed
/// over as records' values without copying it into an array (the worker's outbound records).
/// Immutable once made, so it is safe to share between threads.
public final class KafkaByteBuffer: @unchecked Sendable {
    @usableFromInline let base: UnsafeMutableRawPointer
    public let count: Int
    /// Where the memory goes back to when the last value using it is gone, if anywhere.
    private let pool: KafkaBufferPool?

    /// Takes over `base`, whose first `count` bytes are initialized. Nothing else may use or free it.
    public init(adopting base: UnsafeMutableRawPointer, count: Int) {
        precondition(count >= 0, "a buffer of \(count) bytes")
        self.base = base
        self.count = count
        self.pool = nil
    }

    /// Takes over `base`, `capacity` bytes of which the first `count` are initialized, and gives it
    /// back to `pool` when the last value using it is gone, if it is a buffer of the pool's size
    /// (else it is freed). Nothing else may use or free it.
    public init(adopting base: UnsafeMutableRawPointer, count: Int, capacity: Int, returningTo pool: KafkaBufferPool) {
        precondition(count >= 0 && count <= capacity, "\(count) bytes in a buffer of \(capacity)")
        self.base = base
        self.count = count
        self.pool = capacity == pool.bufferSize ? pool : nil
    }

    deinit {
        if let pool { pool.give(base) } else { base.deallocate() }
    }

    @inlinable
    func byte(at offset: Int) -> UInt8 { base.load(fromByteOffset: offset, as: UInt8.self) }

    @inlinable
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) { try body(UnsafeRawBufferPointer(start: base, count: count)) }
    }
}
