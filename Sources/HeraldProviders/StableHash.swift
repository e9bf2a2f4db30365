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
        // A native string's bytes are read where they are: `withUTF8` needs a copy of the string
        // (`var`), which retains it, four times per notification id.
        let done: Void? = text.utf8.withContiguousStorageIfAvailable { bytes in
            for byte in bytes { add(byte, to: &hash) }
        }
        if done == nil {
            for byte in text.utf8 { add(byte, to: &hash) }
        }
    }

    @inline(__always)
    static func add(_ byte: UInt8, to hash: inout UInt64) {
        hash ^= UInt64(byte)
        hash &*= 0x0000_0100_0000_01B3
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
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 36) { buffer in
            var index = 0
            func put(_ value: UInt64, nibbles: Int) {
                for shift in stride(from: (nibbles - 1) * 4, through: 0, by: -4) {
                    buffer[index] = hexDigits[Int((value >> UInt64(shift)) & 0xF)]
                    index += 1
                }
            }
            func dash() {
                buffer[index] = UInt8(ascii: "-")
                index += 1
            }
            put(high >> 32, nibbles: 8)
            dash()
            put(high >> 16, nibbles: 4)
            dash()
            put(high, nibbles: 4)
            dash()
            put(low >> 48, nibbles: 4)
            dash()
            put(low, nibbles: 12)
            return body(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[0..<index]))
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// 16 upper-case hex digits.
    static func hexString(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            putHex(value, into: buffer, at: 0)
            return 16
        }
    }

    /// 32 upper-case hex digits: `high`'s, then `low`'s.
    static func hexString(_ high: UInt64, _ low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 32) { buffer in
            putHex(high, into: buffer, at: 0)
            putHex(low, into: buffer, at: 16)
            return 32
        }
    }

    private static func putHex(_ value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        for index in 0..<16 {
            buffer[offset + index] = hexDigits[Int((value >> UInt64((15 - index) * 4)) & 0xF)]
        }
    }
}

/// Notification ids: `hash(eventId, kind, recipient, device)`, the same on every worker and every
/// redelivery, so the sender's delivery ledger can recognise a notification it already sent.
public enum NotificationID {
    /// A 32-hex-digit id for one (event, kind, recipient, device).
    public static func make(eventID: String, kind: String, recipient: String, device: String) -> String {
        // The hash of the four joined by unit separators, which keep ("ab", "c") and ("a", "bc")
        // apart; fed part by part, as the join is made for every notification.
        func hash(seed: UInt64) -> UInt64 {
            var hash = seed
            StableHash.add(eventID, to: &hash)
            StableHash.add(0x1F, to: &hash)
            StableHash.add(kind, to: &hash)
            StableHash.add(0x1F, to: &hash)
            StableHash.add(recipient, to: &hash)
            StableHash.add(0x1F, to: &hash)
            StableHash.add(device, to: &hash)
            return hash
        }
        let high = hash(seed: 0xcbf2_9ce4_8422_2325)
        return StableHash.hexString(high, hash(seed: high ^ 0x9E37_79B9_7F4A_7C15))
    }
}
