extension JSONValue {
    /// Compact JSON with members in their stored order, `/` left unescaped, and only the escapes
    /// JSON requires (quotes, backslashes, control characters).
    public var serialized: String {
        var writer = JSONStreamWriter(capacity: 256)
        writer.value(self)
        return writer.withBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// The compact serialization as UTF-8 bytes.
    public var serializedBytes: [UInt8] {
        var writer = JSONStreamWriter(capacity: 256)
        writer.value(self)
        return writer.bytes
    }
}

@usableFromInline
enum JSONWriter {
    /// Whether any byte is a control character, a quote or a backslash.
    ///
    /// Every string of every payload is checked (device tokens, ids, texts), most of them short: a
    /// byte at a time this scan took about 4% of a replay's CPU, and eight bytes at a time with the
    /// rest byte by byte still 3%. Now sixteen bytes at a time (SSE2 compares), the last chunk
    /// overlapping the one before it; a shorter string as two overlapping words, so that no
    /// string but one of at most three bytes is read byte by byte. Bytes read twice are merely
    /// checked twice.
    @usableFromInline
    static func needsEscaping(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let start = bytes.baseAddress else { return false }
        let count = bytes.count
        if count >= 16 {
            // Written out here rather than in a helper: so the optimizer lowers the generic SIMD
            // operations to vector compares (through a helper it compared element by element).
            let space = SIMD16<UInt8>(repeating: 0x20)
            let quote = SIMD16<UInt8>(repeating: UInt8(ascii: "\""))
            let backslash = SIMD16<UInt8>(repeating: UInt8(ascii: "\\"))
            var offset = 0
            while true {
                let chunk = start.loadUnaligned(fromByteOffset: offset, as: SIMD16<UInt8>.self)
                if any((chunk .< space) .| (chunk .== quote) .| (chunk .== backslash)) { return true }
                offset += 16
                if offset >= count { return false }
                // The last chunk ends at the last byte, overlapping the one before it.
                offset = min(offset, count - 16)
            }
        }
        if count >= 8 {
            // Both words' checks at once, without a branch between them.
            return escapeMask(start.loadUnaligned(as: UInt64.self))
                | escapeMask(start.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)) != 0
        }
        if count >= 4 {
            // Two overlapping halves make one word of real bytes: no padding that would look like a
            // control character.
            let low = UInt64(start.loadUnaligned(as: UInt32.self))
            let high = UInt64(start.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self))
            return escapeMask(low | high << 32) != 0
        }
        for offset in 0..<count {
            let byte = start.load(fromByteOffset: offset, as: UInt8.self)
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return true }
        }
        return false
    }

    /// Not zero if a byte of `word` is a control character, a quote or a backslash: the three
    /// checks in one expression, with no branch between them. Exact: a byte at or above 0x80 is
    /// never taken for one of them (`& ~word`), and a borrow that could flag a byte that is not
    /// one only comes from a byte below it that is.
    @inline(__always)
    private static func escapeMask(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        return ((word &- ones &* 0x20) | (quote &- ones) | (backslash &- ones)) & ~word & (ones &* 0x80)
    }
}
