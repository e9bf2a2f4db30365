extension String {
    /// The parts `parts` hands to its argument, joined in order into a string of at most
    /// `byteCount` bytes of UTF-8 (a part that would go past it is cut short), made in one
    /// allocation.
    ///
    /// For texts rendered for every notification: `+=` took `String`'s general append path for
    /// each part, about 300 instructions for a short one, and grew the string as it went.
    public init(byteCount: Int, joining parts: ((String) -> Void) -> Void) {
        self = Self.joined(byteCount: byteCount, parts)
    }

    private static func joined(byteCount: Int, _ parts: ((String) -> Void) -> Void) -> String {
        String(unsafeUninitializedCapacity: byteCount) { buffer in
            var count = 0
            parts { part in
                let copied: Void? = part.utf8.withContiguousStorageIfAvailable { bytes in
                    let length = Swift.min(bytes.count, buffer.count - count)
                    if length > 0 { (buffer.baseAddress! + count).update(from: bytes.baseAddress!, count: length) }
                    count += length
                }
                if copied == nil {
                    for byte in part.utf8 where count < buffer.count {
                        buffer[count] = byte
                        count += 1
                    }
                }
            }
            return count
        }
    }

    /// `first`, `second` and `third` joined, in one allocation.
    public init(joining first: String, _ second: String, _ third: String = "") {
        self.init(byteCount: first.utf8.count + second.utf8.count + third.utf8.count) { append in
            append(first)
            append(second)
            append(third)
        }
    }
}
