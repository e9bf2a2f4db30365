/// Deterministic, dependency-free hashing for ids derived from notification ids. Not for security:
/// FNV-1a is only used so that the same input always gives the same id on every worker and replay.
enum StableHash {
    /// 64-bit FNV-1a of `text`'s UTF-8, starting from `seed`.
    static func fnv1a(_ text: String, seed: UInt64 = 0xcbf2_9ce4_8422_2325) -> UInt64 {
        var hash = seed
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        return hash
    }

    /// A version-8 (RFC 9562, application-defined) UUID derived from `text`, in upper case as APNs
    /// prints them.
    static func uuid(from text: String) -> String {
        var high = fnv1a(text)
        var low = fnv1a(text, seed: 0x8422_2325_cbf2_9ce4 ^ high)
        high = (high & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_8000  // version 8
        low = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000  // RFC 4122 variant
        let hex = hexString(high) + hexString(low)
        let characters = Array(hex)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(characters[$0]) }.joined(separator: "-")
    }

    static func hexString(_ value: UInt64) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
