import CHeraldICU

/// An error reported by ICU: a message and, for patterns, the byte offset where it was found.
struct ICUError: Error, Sendable, CustomStringConvertible {
    var message: String
    var offset: Int?

    init(_ error: herald_icu_error) {
        var copy = error
        message = withUnsafeBytes(of: &copy.message) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        offset = error.offset >= 0 ? Int(error.offset) : nil
    }

    var description: String {
        offset.map { "\(message) at byte \($0)" } ?? message
    }
}

/// Calls `body` with an output buffer, growing it once if the result did not fit.
func withGrowingBuffer(
    initialCapacity: Int = 512,
    _ body: (UnsafeMutablePointer<CChar>, Int32) -> Int32
) -> String? {
    var capacity = initialCapacity
    while true {
        let result: (needed: Int32, text: String?) = withUnsafeTemporaryAllocation(of: CChar.self, capacity: capacity) {
            buffer in
            let needed = body(buffer.baseAddress!, Int32(capacity))
            guard needed >= 0, Int(needed) < capacity else { return (needed, nil) }
            return (
                needed,
                String(decoding: UnsafeRawBufferPointer(start: buffer.baseAddress!, count: Int(needed)), as: UTF8.self)
            )
        }
        if result.needed < 0 { return nil }
        if let text = result.text { return text }
        capacity = Int(result.needed) + 1
    }
}
