#if canImport(Glibc)
import Glibc
#endif

/// An identifier from outside (a user id, a device id, a token, an event id) as a dictionary or set
/// key: two are the same only when their UTF-8 bytes are, as SQLite and PostgreSQL compare them.
///
/// Swift's `String` compares and hashes by canonical equivalence, so `"jos\u{E9}"` (NFC) and
/// `"jose\u{301}"` (NFD) are one key to it and two users to the databases. Keyed by `String`, the
/// directory cache answered a look-up of one with the other's devices: a notification delivered
/// to another person. Herald never normalizes an id: it is the publisher's, and it is sent back
/// out as it came (the outbound message's `recipient`, a provider's token).
public struct OpaqueID: Sendable, Hashable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let string: String

    @inlinable public init(_ string: String) { self.string = string }

    @inlinable public init(stringLiteral value: String) { self.string = value }

    @inlinable
    public static func == (lhs: OpaqueID, rhs: OpaqueID) -> Bool { lhs.string.hasSameBytes(as: rhs.string) }

    @inlinable public func hash(into hasher: inout Hasher) { string.hashBytes(into: &hasher) }

    /// By UTF-8 bytes, as `COLLATE "C"` orders text.
    @inlinable
    public static func < (lhs: OpaqueID, rhs: OpaqueID) -> Bool {
        lhs.string.utf8.lexicographicallyPrecedes(rhs.string.utf8)
    }

    public var description: String { string }
}

extension String {
    /// Whether the two strings hold the same UTF-8 bytes (`==` compares by canonical equivalence).
    @inlinable
    public func hasSameBytes(as other: String) -> Bool {
        let count = utf8.count
        guard count == other.utf8.count else { return false }
        let same: Bool? =
            utf8.withContiguousStorageIfAvailable { mine in
                other.utf8.withContiguousStorageIfAvailable { theirs in
                    count == 0 || memcmp(mine.baseAddress!, theirs.baseAddress!, count) == 0
                }
            } ?? nil
        return same ?? utf8.elementsEqual(other.utf8)
    }

    /// Feeds the string's UTF-8 bytes and its length to `hasher`: a hash that agrees with
    /// ``hasSameBytes(as:)``, where `hash(into:)` agrees with `==`.
    @inlinable
    public func hashBytes(into hasher: inout Hasher) {
        let hashed: Void? = utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if hashed == nil {
            for byte in utf8 { hasher.combine(byte) }
        }
        // The length ends the bytes, so that the fields of a key hashed one after another cannot
        // trade bytes ("ab" + "c" against "a" + "bc").
        hasher.combine(utf8.count)
    }
}
