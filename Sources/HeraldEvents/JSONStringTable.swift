/// The short strings a run of parses has made, by their bytes, so that the next parse that meets
/// the same bytes takes the string already made instead of making it again.
///
/// Events of one stream repeat most of their member names and many of their values (`specversion`,
/// `1.0`, `datacontenttype`, `application/json`, an event type, a currency): about three of every
/// four strings of `herald bench pipeline`'s events. Making a string from bytes (checking them as
/// UTF-8, building it) cost about as much as finding it in the JSON; a look-up here is two loads
/// and a compare.
///
/// Only ASCII strings of 1 to 16 bytes without escapes are kept, in a direct-mapped table (a new
/// string takes its slot's place). Not thread-safe: one table serves one parse at a time, e.g.
/// the events of one batch, decoded one after another.
public final class JSONStringTable {
    @usableFromInline
    struct Entry {
        /// The string's first 8 bytes and its last 8 (overlapping for fewer than 16; for fewer
        /// than 8, the bytes in `head` and none in `tail`), and its length: together, every byte.
        var head: UInt64
        var tail: UInt64
        var count: Int
        var string: String
    }

    static let slotBits = 9
    private let entries: UnsafeMutablePointer<Entry>

    public init() {
        let slots = 1 << Self.slotBits
        entries = .allocate(capacity: slots)
        entries.initialize(repeating: Entry(head: 0, tail: 0, count: 0, string: ""), count: slots)
    }

    deinit {
        entries.deinitialize(count: 1 << Self.slotBits)
        entries.deallocate()
    }

    /// The string of `bytes`: ASCII, 1 to 16 of them, with no escapes.
    func string(ascii bytes: UnsafeRawBufferPointer) -> String {
        let count = bytes.count
        // Two words hold every byte of at most 16; more would be told apart by some of them only.
        precondition(count >= 1 && count <= 16, "a string of \(count) bytes for the string table")
        let base = bytes.baseAddress!
        let head: UInt64
        let tail: UInt64
        switch count {
        case 8...:
            head = base.loadUnaligned(as: UInt64.self)
            tail = base.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        case 4...:
            // Two overlapping 4-byte reads: every byte, and none outside `bytes`.
            head =
                UInt64(base.loadUnaligned(as: UInt32.self))
                | UInt64(base.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)) << 32
            tail = 0
        default:
            var word: UInt64 = 0
            for index in 0..<count { word |= UInt64(base.load(fromByteOffset: index, as: UInt8.self)) << (index * 8) }
            head = word
            tail = 0
        }
        let mixed = (head ^ (tail &* 0x9E37_79B9_7F4A_7C15) ^ UInt64(count)) &* 0xD6E8_FEB8_6659_FD93
        let slot = entries + Int(truncatingIfNeeded: mixed >> UInt64(64 - Self.slotBits))
        if slot.pointee.count == count && slot.pointee.head == head && slot.pointee.tail == tail {
            return slot.pointee.string
        }
        let string = String(decoding: bytes, as: UTF8.self)
        slot.pointee = Entry(head: head, tail: tail, count: count, string: string)
        return string
    }
}
