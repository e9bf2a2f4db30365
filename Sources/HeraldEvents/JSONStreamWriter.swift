/// Writes compact JSON straight into bytes, without building a ``JSONValue`` first: for hot paths
/// that produce the same shape for every message (provider payloads). Members appear in the order
/// written; strings are escaped exactly as ``JSONValue/serialized`` does.
///
/// The writer owns its buffer and cannot be copied: an append checks the capacity and nothing else
/// (an `Array` also checks, on every append, that its buffer is not shared), which is most of the
/// cost of writing many small pieces. ``bytes`` hands out a copy.
///
/// The small, frequent steps (keys, brackets, separators, literal values) are inlinable: other
/// modules (the payload builders, the worker) call them for every member of every message, and a
/// call each cost as much as the work.
public struct JSONStreamWriter: ~Copyable {
    @usableFromInline var output: ByteOutput
    /// Bit n says whether the container at depth n already has a member (so the next needs a comma).
    @usableFromInline var hasMembers: UInt64 = 0
    @usableFromInline var depth = 0
    private var recentTimes = RecentTimes()

    public init(capacity: Int = 1024) {
        output = ByteOutput(capacity: capacity)
    }

    /// What `write` writes into a new writer, as bytes of their own.
    public static func bytes<Failure: Error>(
        capacity: Int = 1024,
        _ write: (inout JSONStreamWriter) throws(Failure) -> Void
    ) throws(Failure) -> [UInt8] {
        var writer = JSONStreamWriter(capacity: capacity)
        try write(&writer)
        return writer.bytes
    }

    /// What has been written, as an array of its own.
    public var bytes: [UInt8] { output.array }

    /// How many bytes have been written.
    public var count: Int { output.count }

    /// Hands over what has been written, memory and all, and starts over in a new buffer of
    /// `capacity` bytes: for a caller that keeps the bytes without copying them out (the worker's
    /// records, see ``bytes``). The caller owns `base` from then on, its first `count` bytes
    /// written, and frees it with `deallocate()`.
    public mutating func handOver(startingOverWithCapacity capacity: Int) -> (base: UnsafeMutableRawPointer, count: Int)
    {
        let written = output.handOver(startingOverWithCapacity: capacity)
        depth = 0
        hasMembers = 0
        return written
    }

    /// Hands over what has been written, as ``handOver(startingOverWithCapacity:)`` does, and
    /// starts over in `buffer`, `capacity` bytes the caller allocated (with
    /// `UnsafeMutableRawPointer.allocate`) and the writer owns from then on: a buffer used before
    /// and given back, rather than a new one. The buffer handed over may have grown past the
    /// capacity it started with: `capacity` says how large it is.
    public mutating func handOver(
        startingOverIn buffer: UnsafeMutableRawPointer,
        capacity: Int
    ) -> (base: UnsafeMutableRawPointer, count: Int, capacity: Int) {
        let written = output.handOver(startingOverIn: buffer, capacity: capacity)
        depth = 0
        hasMembers = 0
        return written
    }

    /// Drops what was written after the first `count` bytes: to take back a value written at the
    /// current nesting (a candidate that turned out too large), or with 0 to start over.
    public mutating func truncate(to count: Int) {
        precondition(count >= 0 && count <= output.count, "truncating \(output.count) bytes to \(count)")
        output.truncate(to: count)
        if count == 0 {
            depth = 0
            hasMembers = 0
        }
    }

    /// Drops a top-level document begun at `start` and left unfinished (its writing failed or was
    /// abandoned part-way), so that the next document follows what came before it cleanly.
    public mutating func discardDocument(from start: Int) {
        precondition(start >= 0 && start <= output.count, "discarding from \(start) of \(output.count) bytes")
        output.truncate(to: start)
        depth = 0
        hasMembers = 0
    }

    /// Calls `body` with what has been written, without copying it.
    public func withBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(output.buffer)
    }

    @inlinable @inline(__always)
    mutating func separate() {
        let bit: UInt64 = 1 << UInt64(depth)
        if hasMembers & bit != 0 { output.append(UInt8(ascii: ",")) }
        hasMembers |= bit
    }

    @inlinable @inline(__always)
    public mutating func beginObject() {
        output.append(UInt8(ascii: "{"))
        depth += 1
        hasMembers &= ~(1 << UInt64(depth))
    }

    @inlinable @inline(__always)
    public mutating func endObject() {
        output.append(UInt8(ascii: "}"))
        depth -= 1
    }

    @inlinable @inline(__always)
    public mutating func beginArray() {
        output.append(UInt8(ascii: "["))
        depth += 1
        hasMembers &= ~(1 << UInt64(depth))
    }

    @inlinable @inline(__always)
    public mutating func endArray() {
        output.append(UInt8(ascii: "]"))
        depth -= 1
    }

    /// Starts a member: writes the separator and `"key":`.
    @_disfavoredOverload
    public mutating func key(_ name: String) {
        separate()
        string(name)
        output.append(UInt8(ascii: ":"))
    }

    /// Starts a member named by a literal, which is written as it is: it must not need escaping
    /// (no quote, backslash or control character). Most keys are literals, and skipping the
    /// escape check for them is a measurable part of building a payload.
    @inlinable @inline(__always)
    public mutating func key(_ name: StaticString) {
        separate()
        if name.hasPointerRepresentation {
            let utf8 = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
            assert(!JSONWriter.needsEscaping(utf8), "the key \(name) needs escaping")
            output.appendQuoted(utf8, colon: true)
        } else {
            scalarKey(name)
        }
    }

    /// A key given as a literal of one Unicode scalar, which is stored as the scalar, not as bytes.
    @usableFromInline @inline(never)
    mutating func scalarKey(_ name: StaticString) {
        string(name.description)
        output.append(UInt8(ascii: ":"))
    }

    /// Starts an array element.
    @inlinable @inline(__always)
    public mutating func element() {
        separate()
    }

    @inlinable
    public mutating func string(_ value: String) {
        // A native string's bytes are read in place (a small one's from a copy on the stack);
        // only a bridged string needs making native first.
        if value.utf8.withContiguousStorageIfAvailable({ string(utf8: UnsafeRawBufferPointer($0)) }) == nil {
            var value = value
            value.withUTF8 { string(utf8: UnsafeRawBufferPointer($0)) }
        }
    }

    /// A string value of `first` and `second` joined (`"/3/device/"` and a token), written without
    /// joining them first.
    public mutating func string(_ first: String, _ second: String) {
        output.append(UInt8(ascii: "\""))
        characters(first)
        characters(second)
        output.append(UInt8(ascii: "\""))
    }

    /// A string given as its UTF-8 bytes, which must be valid UTF-8 (a `String`'s own, or ASCII).
    @inlinable
    public mutating func string(utf8: UnsafeRawBufferPointer) {
        // Most strings need no escaping: quoted and copied with one capacity check.
        if !JSONWriter.needsEscaping(utf8) {
            output.appendQuoted(utf8)
        } else {
            escapedString(utf8)
        }
    }

    /// ``string(utf8:)`` for bytes that need escaping: out of line, as it is rare.
    @usableFromInline @inline(never)
    mutating func escapedString(_ utf8: UnsafeRawBufferPointer) {
        output.append(UInt8(ascii: "\""))
        for byte in utf8 { escape(byte) }
        output.append(UInt8(ascii: "\""))
    }

    /// A string's characters, escaped, without the quotes.
    private mutating func characters(_ value: String) {
        if value.utf8.withContiguousStorageIfAvailable({ characters(UnsafeRawBufferPointer($0)) }) == nil {
            var value = value
            value.withUTF8 { characters(UnsafeRawBufferPointer($0)) }
        }
    }

    private mutating func characters(_ utf8: UnsafeRawBufferPointer) {
        // Most strings need no escaping: check the bytes once and copy them in one go.
        if JSONWriter.needsEscaping(utf8) {
            for byte in utf8 { escape(byte) }
        } else {
            output.append(utf8)
        }
    }

    private mutating func escape(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"):
            output.append(UInt8(ascii: "\\"))
            output.append(byte)
        case 0x0A:
            output.append(UInt8(ascii: "\\"))
            output.append(UInt8(ascii: "n"))
        case 0x0D:
            output.append(UInt8(ascii: "\\"))
            output.append(UInt8(ascii: "r"))
        case 0x09:
            output.append(UInt8(ascii: "\\"))
            output.append(UInt8(ascii: "t"))
        case 0x00..<0x20:
            let hex: StaticString = "0123456789abcdef"
            output.append(UInt8(ascii: "\\"))
            output.append(UInt8(ascii: "u"))
            output.append(UInt8(ascii: "0"))
            output.append(UInt8(ascii: "0"))
            output.append(hex.utf8Start[Int(byte >> 4)])
            output.append(hex.utf8Start[Int(byte & 0x0F)])
        default:
            output.append(byte)
        }
    }

    public mutating func integer(_ value: Int64) {
        // Digits into a stack buffer, last first: `String(value)` was a visible cost per payload.
        var magnitude = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 { output.append(UInt8(ascii: "-")) }
            output.append(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(digits)[start...]))
        }
    }

    /// An integer's decimal digits as a JSON string, with `suffix` after them (`"3600s"`, FCM's
    /// durations; `"1732710000"`, APNs' expiry header): without making a string of them first.
    /// The suffix is written as it is: it must not need escaping.
    public mutating func string(integer value: Int64, suffix: StaticString = "") {
        output.append(UInt8(ascii: "\""))
        integer(value)
        if suffix.hasPointerRepresentation {
            output.append(suffix)
        } else {
            // A literal of one Unicode scalar is stored as the scalar, not as bytes.
            var scalar = suffix.description
            scalar.withUTF8 { output.append(UnsafeRawBufferPointer($0)) }
        }
        output.append(UInt8(ascii: "\""))
    }

    /// A time as an RFC 3339 string, as ``Timestamp/description`` writes it, without making the string.
    public mutating func timestamp(_ time: Timestamp) {
        // The same few times are written again and again: a recipient's outbound messages share
        // their creation and expiry times, and decision records their batch's time.
        var text = recentTimes.text(of: time)
        withUnsafeBytes(of: &text) { output.appendQuoted($0) }
    }

    /// A number written as given (it must be valid JSON number text).
    public mutating func number(_ text: String) {
        var text = text
        text.withUTF8 { output.append(UnsafeRawBufferPointer($0)) }
    }

    public mutating func bool(_ value: Bool) {
        if value { output.append("true") } else { output.append("false") }
    }

    /// Already-serialized JSON given as a literal, written as it is: no separator, no check. For
    /// writers of one fixed shape (the benchmarks' event generator) that write a document's
    /// constant runs whole, between the values they write with ``integer(_:)``, ``string(_:)`` or
    /// ``timestamp(_:)``.
    @inlinable @inline(__always)
    public mutating func raw(literal json: StaticString) {
        precondition(json.hasPointerRepresentation, "raw(literal:) takes text, not a literal of one Unicode scalar")
        output.append(json)
    }

    /// Already-serialized JSON, written as the value of the current member or element.
    public mutating func raw(_ json: [UInt8]) {
        json.withUnsafeBytes { output.append($0) }
    }

    public mutating func null() {
        output.append("null")
    }

    /// A whole value, written as the value of the current member or element.
    public mutating func value(_ value: JSONValue) {
        // Commas are written here, not through `separate()`: a parsed value may nest deeper than
        // the 64 levels the member bits track.
        switch value {
        case .null: null()
        case .bool(let flag): bool(flag)
        case .number(let text): number(text)
        case .string(let text): string(text)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                self.value(element)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let object):
            output.append(UInt8(ascii: "{"))
            for (index, member) in object.members.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                string(member.key)
                output.append(UInt8(ascii: ":"))
                self.value(member.value)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// Members written before as JSON (`"a":"x","b":"y"`: members a writer wrote at the top level,
    /// comma-separated, without braces), copied into the object being written as they are.
    public mutating func encodedMembers(_ members: UnsafeRawBufferPointer) {
        guard !members.isEmpty else { return }
        separate()
        output.append(members)
    }

    /// Shorthands for a member with a simple value.
    @_disfavoredOverload
    public mutating func member(_ name: String, _ value: String) {
        key(name)
        string(value)
    }

    @_disfavoredOverload
    public mutating func member(_ name: String, integer value: Int64) {
        key(name)
        integer(value)
    }

    @inlinable @inline(__always)
    public mutating func member(_ name: StaticString, _ value: String) {
        key(name)
        string(value)
    }

    /// A member whose value is a literal too (`"method": "POST"`): written as it is, without the
    /// escape check, like a literal key; it must not need escaping.
    @inlinable @inline(__always)
    public mutating func member(_ name: StaticString, literal value: StaticString) {
        key(name)
        string(literal: value)
    }

    /// A string value given as a literal: written as it is, without the escape check, like a
    /// literal key; it must not need escaping.
    @inlinable @inline(__always)
    public mutating func string(literal value: StaticString) {
        if value.hasPointerRepresentation {
            let utf8 = UnsafeRawBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount)
            assert(!JSONWriter.needsEscaping(utf8), "the value \(value) needs escaping")
            output.appendQuoted(utf8)
        } else {
            string(value.description)
        }
    }

    @inlinable
    public mutating func member(_ name: StaticString, integer value: Int64) {
        key(name)
        integer(value)
    }

    @inlinable
    public mutating func member(_ name: StaticString, timestamp time: Timestamp) {
        key(name)
        timestamp(time)
    }
}

/// A growable byte buffer with one owner.
@usableFromInline
struct ByteOutput: ~Copyable {
    @usableFromInline var base: UnsafeMutableRawPointer
    @usableFromInline private(set) var count = 0
    @usableFromInline var capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 16)
        base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 1)
    }

    @inlinable deinit { base.deallocate() }

    var buffer: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    mutating func truncate(to count: Int) { self.count = count }

    /// The buffer, what was written into it and its size, for the caller to own; `buffer`, which
    /// the caller gives up, for what follows.
    mutating func handOver(
        startingOverIn buffer: UnsafeMutableRawPointer,
        capacity newCapacity: Int
    ) -> (base: UnsafeMutableRawPointer, count: Int, capacity: Int) {
        precondition(newCapacity >= 16, "a buffer of \(newCapacity) bytes")
        let written = (base, count, capacity)
        capacity = newCapacity
        base = buffer
        count = 0
        return written
    }

    /// The buffer and what was written into it, for the caller to own; a new buffer for what follows.
    mutating func handOver(startingOverWithCapacity newCapacity: Int) -> (base: UnsafeMutableRawPointer, count: Int) {
        let written = (base, count)
        capacity = max(newCapacity, 16)
        base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 1)
        count = 0
        return written
    }

    var array: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { array, initialized in
            if count > 0 { array.baseAddress!.initialize(from: base.assumingMemoryBound(to: UInt8.self), count: count) }
            initialized = count
        }
    }

    @inlinable @inline(__always)
    mutating func append(_ byte: UInt8) {
        if count == capacity { grow(toAtLeast: count + 1) }
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    @inlinable @inline(__always)
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        if capacity - count < bytes.count { grow(toAtLeast: count + bytes.count) }
        Self.copy(source, count: bytes.count, to: base + count)
        count += bytes.count
    }

    /// `"`, `bytes` and `"` (and `:` after them for a key), with one capacity check: a string
    /// that needs no escaping, or a member's key.
    @inlinable @inline(__always)
    mutating func appendQuoted(_ bytes: UnsafeRawBufferPointer, colon: Bool = false) {
        let needed = bytes.count + (colon ? 3 : 2)
        if capacity - count < needed { grow(toAtLeast: count + needed) }
        let target = base + count
        target.storeBytes(of: UInt8(ascii: "\""), as: UInt8.self)
        if let source = bytes.baseAddress { Self.copy(source, count: bytes.count, to: target + 1) }
        target.storeBytes(of: UInt8(ascii: "\""), toByteOffset: bytes.count + 1, as: UInt8.self)
        if colon { target.storeBytes(of: UInt8(ascii: ":"), toByteOffset: bytes.count + 2, as: UInt8.self) }
        count += needed
    }

    /// Copies `count` bytes. Most pieces of a payload are short (keys, ids, small numbers, words):
    /// those up to 16 bytes move as two overlapping words instead of a call to `memmove`, which
    /// was about a fifth of a build thread's time in `memmove` for copies of a few bytes each.
    @inlinable @inline(__always)
    static func copy(_ source: UnsafeRawPointer, count: Int, to target: UnsafeMutableRawPointer) {
        switch count {
        case 8...16:
            let head = source.loadUnaligned(as: UInt64.self)
            let tail = source.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            target.storeBytes(of: head, as: UInt64.self)
            target.storeBytes(of: tail, toByteOffset: count - 8, as: UInt64.self)
        case 4..<8:
            let head = source.loadUnaligned(as: UInt32.self)
            let tail = source.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
            target.storeBytes(of: head, as: UInt32.self)
            target.storeBytes(of: tail, toByteOffset: count - 4, as: UInt32.self)
        case 1..<4:
            for offset in 0..<count {
                let byte = source.load(fromByteOffset: offset, as: UInt8.self)
                target.storeBytes(of: byte, toByteOffset: offset, as: UInt8.self)
            }
        default:
            target.copyMemory(from: source, byteCount: count)
        }
    }

    @inlinable
    mutating func append(_ literal: StaticString) {
        append(UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// Out of line: the rare path of every inlined append.
    @usableFromInline @inline(never)
    mutating func grow(toAtLeast needed: Int) {
        let newCapacity = max(capacity * 2, needed)
        let newBase = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 1)
        newBase.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }
}

/// The text of the last two times a writer wrote (two: creation and expiry times alternate).
private struct RecentTimes {
    /// A time's 24 bytes of text (``Timestamp/textLength``).
    typealias Text = (UInt64, UInt64, UInt64)

    private var times: (Int64, Int64) = (.min, .min)
    private var texts: (Text, Text) = ((0, 0, 0), (0, 0, 0))
    /// Which entry the next new time replaces.
    private var next = 0

    mutating func text(of time: Timestamp) -> Text {
        let milliseconds = time.epochMilliseconds
        // `.min` marks an empty entry: that time itself is always written (a fresh writer took the
        // empty entry's zero bytes for its text).
        if milliseconds == times.0 && milliseconds != .min { return texts.0 }
        if milliseconds == times.1 && milliseconds != .min { return texts.1 }
        var text: Text = (0, 0, 0)
        withUnsafeMutableBytes(of: &text) { bytes in
            let written = time.write(to: bytes)
            assert(written == MemoryLayout<Text>.size, "a timestamp's text is \(written) bytes")
        }
        if next == 0 { (times.0, texts.0) = (milliseconds, text) } else { (times.1, texts.1) = (milliseconds, text) }
        next ^= 1
        return text
    }
}
