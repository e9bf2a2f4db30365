#if canImport(Glibc)
import Glibc
#endif

/// An identifier from outside (a user id, a device id, a token, an event id) as a dictionary or set
/// key: two are the same only when their UTF-8 bytes are, as SQLite and PostgreSQL compare them.
///
/// Swift's `String` compares and hashes by canonical equivalence, so `"jos\u{E9}"` (NFC) and
/// `"jose\u{301}"` (NFD) are one key to it and two users to the databases. Until 2026-12-01 the
/// directory cache was keyed by `String` and answered a look-up of one with the other's devices: a
/// notification delivered to another person (docs/store.md). Herald never normalizes an id: it is
/// the publisher's, and it is sent back out as it came (the outbound message's `recipient`, a
/// provider's token).
public struct OpaqueID: Sendable, Hashable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let string: String

    @inlinable public init(_ string: String) { self.string = string }

    @inlinable public init(stringLiteral value: String) { self.string = value }

    @inlinable
    public static func == (lhs: OpaqueID, rhs: OpaqueID) -> Bool { lhs.string.hasSameBytes(as: rhs.string) }

    @inlinable public func hash(into hasher: inout Hasher) { string.hashBytes(into: &hasher) }

    /// By UTF-8 bytes, as `COLLATE "C"` orders text.
    @inlinable
    public static func < (lhs: OpaqueID, rhs: OpaqueID) -> Bool { lhs.string.bytesPrecede(rhs.string) }

    public var description: String { string }
}

extension String {
    /// Whether the two strings hold the same UTF-8 bytes (`==` compares by canonical equivalence).
    @inlinable
    public func hasSameBytes(as other: String) -> Bool {
        // Two values with the same representation (one storage, or the same small string held
        // inline) are the same string: the common case of a dictionary probe with its own key.
        let identical = withUnsafeBytes(of: self) { mine in
            withUnsafeBytes(of: other) { theirs in memcmp(mine.baseAddress!, theirs.baseAddress!, mine.count) == 0 }
        }
        return identical || utf8.count == other.utf8.count && compareBytes(other) == 0
    }

    /// Whether the string's UTF-8 comes before `other`'s, byte by byte (a prefix first).
    @inlinable
    public func bytesPrecede(_ other: String) -> Bool {
        let order = compareBytes(other)
        return order < 0 || order == 0 && utf8.count < other.utf8.count
    }

    /// `memcmp` of the two strings' UTF-8 over the shorter one's length.
    @usableFromInline
    func compareBytes(_ other: String) -> Int32 {
        let length = Swift.min(utf8.count, other.utf8.count)
        guard length > 0 else { return 0 }
        let order: Int32? =
            utf8.withContiguousStorageIfAvailable { mine in
                other.utf8.withContiguousStorageIfAvailable { theirs in
                    memcmp(mine.baseAddress!, theirs.baseAddress!, length)
                }
            } ?? nil
        if let order { return order }
        for (mine, theirs) in zip(utf8, other.utf8) where mine != theirs { return mine < theirs ? -1 : 1 }
        return 0
    }

    /// Feeds the string's UTF-8 bytes to `hasher`, then 0xFF (which UTF-8 never holds) to end them,
    /// so that the fields of a key hashed one after another cannot trade bytes: a hash that agrees
    /// with ``hasSameBytes(as:)``, where `hash(into:)` agrees with `==`.
    @inlinable
    public func hashBytes(into hasher: inout Hasher) {
        let hashed: Void? = utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if hashed == nil {
            for byte in utf8 { hasher.combine(byte) }
        }
        hasher.combine(0xFF as UInt8)
    }
}
