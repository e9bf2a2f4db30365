/// Deterministic, dependency-free hashing for ids derived from notification ids. Not for security:
/// FNV-1a is only used so that the same input always gives the same id on every worker and replay.
enum StableHash {
    /// 64-bit FNV-1a of `text`'s UTF-8, starting from `seed`.
    static func fnv1a(_ text: String, seed: UInt64 = 0xcbf2_9ce4_8422_2325) -> UInt64 {
        var hash = seed
        add(text, to: &hash)
        return hash
    }

    /// Continues an FNV-1a hash with `text`'s UTF-8.
    @inline(__always)
    static func add(_ text: String, to hash: inout UInt64) {
        withBytes(text) { bytes in
            for byte in bytes { add(byte, to: &hash) }
        }
    }

    @inline(__always)
    static func add(_ byte: UInt8, to hash: inout UInt64) {
        hash ^= UInt64(byte)
        hash &*= 0x0000_0100_0000_01B3
    }

    /// Continues an FNV-1a hash with `text`'s UTF-8, then `separator`.
    @inline(__always)
    static func add(_ text: String, then separator: UInt8, to hash: inout UInt64) {
        add(text, to: &hash)
        add(separator, to: &hash)
    }

    /// Continues two FNV-1a hashes with `text`'s UTF-8, then `separator`, in one loop.
    @inline(__always)
    static func add(_ text: String, then separator: UInt8, to first: inout UInt64, _ second: inout UInt64) {
        add(text, to: &first, text, to: &second)
        add(separator, to: &first)
        add(separator, to: &second)
    }

    /// Continues one FNV-1a hash with `text`'s UTF-8 and another with `other`'s, in one loop as far
    /// as both go: each byte of a hash waits for the multiply before it (about four cycles), and the
    /// two chains overlap.
    @inline(__always)
    static func add(_ text: String, to first: inout UInt64, _ other: String, to second: inout UInt64) {
        withBytes(text) { bytes in
            withBytes(other) { otherBytes in
                let common = min(bytes.count, otherBytes.count)
                for index in 0..<common {
                    add(bytes[index], to: &first)
                    add(otherBytes[index], to: &second)
                }
                for byte in bytes[common...] { add(byte, to: &first) }
                for byte in otherBytes[common...] { add(byte, to: &second) }
            }
        }
    }

    /// Calls `body` with `text`'s UTF-8 where it is, or (for a string not stored contiguously) with a
    /// copy. Not `withUTF8`, which needs a copy of the string (`var`) and so retains it, for every
    /// part of every notification id.
    @inline(__always)
    private static func withBytes(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        if text.utf8.withContiguousStorageIfAvailable(body) == nil {
            Array(text.utf8).withUnsafeBufferPointer(body)
        }
    }

    /// A version-8 (RFC 9562, application-defined) UUID derived from `text`, in upper case as APNs
    /// prints them. Written byte by byte: it is computed for every APNs request.
    static func uuid(from text: String) -> String {
        withUUID(from: text) { String(decoding: $0, as: UTF8.self) }
    }

    /// Calls `body` with ``uuid(from:)``'s 36 ASCII bytes, on the stack: the worker writes them
    /// into its outbound JSON without making a string of them.
    static func withUUID<Result>(from text: String, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        var high = fnv1a(text)
        var low = fnv1a(text, seed: 0x8422_2325_cbf2_9ce4 ^ high)
        high = (high & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_8000  // version 8
        low = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000  // RFC 4122 variant
        // 8-4-4-4-12 digits: `high`'s 16 with dashes after the 8th and the 12th, a dash, then
        // `low`'s 16 with a dash after the 4th.
        var text: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &text) { buffer in
            let base = buffer.baseAddress!
            let (highFirst, highLast) = hexDigits(high)
            let (lowFirst, lowLast) = hexDigits(low)
            base.storeBytes(of: highFirst, as: UInt64.self)
            base.storeBytes(of: UInt8(ascii: "-"), toByteOffset: 8, as: UInt8.self)
            base.storeBytes(of: UInt32(truncatingIfNeeded: highLast), toByteOffset: 9, as: UInt32.self)
            base.storeBytes(of: UInt8(ascii: "-"), toByteOffset: 13, as: UInt8.self)
            base.storeBytes(of: UInt32(truncatingIfNeeded: highLast >> 32), toByteOffset: 14, as: UInt32.self)
            base.storeBytes(of: UInt8(ascii: "-"), toByteOffset: 18, as: UInt8.self)
            base.storeBytes(of: UInt32(truncatingIfNeeded: lowFirst), toByteOffset: 19, as: UInt32.self)
            base.storeBytes(of: UInt8(ascii: "-"), toByteOffset: 23, as: UInt8.self)
            base.storeBytes(of: UInt32(truncatingIfNeeded: lowFirst >> 32), toByteOffset: 24, as: UInt32.self)
            base.storeBytes(of: lowLast, toByteOffset: 28, as: UInt64.self)
            return body(UnsafeRawBufferPointer(start: base, count: 36))
        }
    }

    /// 16 upper-case hex digits.
    static func hexString(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            putHex(value, into: UnsafeMutableRawPointer(buffer.baseAddress!))
            return 16
        }
    }

    /// 32 upper-case hex digits: `high`'s, then `low`'s.
    static func hexString(_ high: UInt64, _ low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 32) { buffer in
            let base = UnsafeMutableRawPointer(buffer.baseAddress!)
            putHex(high, into: base)
            putHex(low, into: base + 16)
            return 32
        }
    }

    private static func putHex(_ value: UInt64, into target: UnsafeMutableRawPointer) {
        let (first, last) = hexDigits(value)
        target.storeBytes(of: first, as: UInt64.self)
        target.storeBytes(of: last, toByteOffset: 8, as: UInt64.self)
    }

    /// `value`'s 16 upper-case hex digits as two words whose bytes, stored little-endian, are the
    /// digits in order: the first 8, then the last 8. Eight digits at a time instead of one
    /// table look-up per digit, which was most of the cost of an id.
    @inline(__always)
    static func hexDigits(_ value: UInt64) -> (first: UInt64, last: UInt64) {
        (eightDigits(UInt32(truncatingIfNeeded: value >> 32)), eightDigits(UInt32(truncatingIfNeeded: value)))
    }

    /// `value`'s 8 hex digits, the most significant in the lowest byte.
    @inline(__always)
    private static func eightDigits(_ value: UInt32) -> UInt64 {
        // Each nibble into a byte of its own, the least significant nibble in the lowest byte.
        var nibbles = UInt64(value)
        nibbles = (nibbles | nibbles << 16) & 0x0000_FFFF_0000_FFFF
        nibbles = (nibbles | nibbles << 8) & 0x00FF_00FF_00FF_00FF
        nibbles = (nibbles | nibbles << 4) & 0x0F0F_0F0F_0F0F_0F0F
        // '0' + n, and 7 more for 10-15 ('A' is '0' + 17): bytes of 10 or more carry into bit 4
        // when 6 is added.
        let letters = ((nibbles &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        let digits = nibbles &+ 0x3030_3030_3030_3030 &+ letters &* 7
        return digits.byteSwapped
    }
}

/// Notification ids: `hash(eventId, kind, recipient, device)`, the same on every worker and every
/// redelivery, so the sender's delivery ledger can recognise a notification it already sent.
public enum NotificationID {
    /// A 32-hex-digit id for one (event, kind, recipient, device).
    public static func make(eventID: String, kind: String, recipient: String, device: String) -> String {
        // Two passes over the four joined by unit separators, the second seeded from the first; fed
        // part by part, as the join is made for every notification.
        var high = prefixed(Self.firstSeed, eventID, kind, recipient)
        StableHash.add(device, to: &high)
        var low = prefixed(high ^ Self.secondSeed, eventID, kind, recipient)
        StableHash.add(device, to: &low)
        return StableHash.hexString(high, low)
    }

    /// The ids of two devices of one recipient, the same as two calls of
    /// ``make(eventID:kind:recipient:device:)``: computed together, as most recipients have more
    /// than one device. The hash waits for each byte's multiply before the next, so two ids in one
    /// loop take little more time than one (0.45 against 0.78 µs for a pair in a micro-benchmark),
    /// and the first pass's part before the device is hashed once.
    public static func make(
        eventID: String,
        kind: String,
        recipient: String,
        devices first: String,
        _ second: String
    ) -> (String, String) {
        let shared = prefixed(Self.firstSeed, eventID, kind, recipient)
        var (highOfFirst, highOfSecond) = (shared, shared)
        StableHash.add(first, to: &highOfFirst, second, to: &highOfSecond)
        var (lowOfFirst, lowOfSecond) = (highOfFirst ^ Self.secondSeed, highOfSecond ^ Self.secondSeed)
        StableHash.add(eventID, then: Self.separator, to: &lowOfFirst, &lowOfSecond)
        StableHash.add(kind, then: Self.separator, to: &lowOfFirst, &lowOfSecond)
        StableHash.add(recipient, then: Self.separator, to: &lowOfFirst, &lowOfSecond)
        StableHash.add(first, to: &lowOfFirst, second, to: &lowOfSecond)
        return (StableHash.hexString(highOfFirst, lowOfFirst), StableHash.hexString(highOfSecond, lowOfSecond))
    }

    /// `seed` continued with what precedes the device in a pass: the event id, the kind and the
    /// recipient, each followed by a unit separator.
    @inline(__always)
    private static func prefixed(_ seed: UInt64, _ eventID: String, _ kind: String, _ recipient: String) -> UInt64 {
        var hash = seed
        StableHash.add(eventID, then: Self.separator, to: &hash)
        StableHash.add(kind, then: Self.separator, to: &hash)
        StableHash.add(recipient, then: Self.separator, to: &hash)
        return hash
    }

    /// The unit separator after each part: it keeps ("ab", "c") and ("a", "bc") apart.
    private static let separator: UInt8 = 0x1F
    /// FNV-1a's offset basis, the first pass's seed.
    private static let firstSeed: UInt64 = 0xcbf2_9ce4_8422_2325
    /// Mixed into the first pass's result to seed the second.
    private static let secondSeed: UInt64 = 0x9E37_79B9_7F4A_7C15
}
