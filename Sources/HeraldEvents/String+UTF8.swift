#if canImport(Glibc)
import Glibc
#endif

extension String {
    /// Whether the string's UTF-8 holds `byte`, searched in place with `memchr`: `utf8.contains`
    /// walked the view through its generic iterator, a few hundred instructions for an event id.
    public func utf8Contains(_ byte: UInt8) -> Bool {
        let found: Bool? = utf8.withContiguousStorageIfAvailable { bytes in
            guard let start = bytes.baseAddress, !bytes.isEmpty else { return false }
            return memchr(start, Int32(byte), bytes.count) != nil
        }
        return found ?? utf8.contains(byte)
    }

    /// Whether the string's UTF-8 is `name`'s, byte for byte: how JSON member names and CloudEvents
    /// attribute names compare (`==` compares by canonical equivalence). Most other strings are
    /// told apart by their length alone, where each `==` between two different strings is a call
    /// into the standard library.
    ///
    /// - Parameter name: a literal of more than one character (one with a pointer to its text).
    @inlinable
    public func hasUTF8(_ name: StaticString) -> Bool {
        utf8.count == name.utf8CodeUnitCount && hasSameUTF8(name)
    }

    /// Whether the string's UTF-8 starts with `prefix`'s, byte for byte (`hasPrefix` compares by
    /// canonical equivalence).
    ///
    /// - Parameter prefix: a literal of more than one character (one with a pointer to its text).
    @inlinable
    public func hasUTF8Prefix(_ prefix: StaticString) -> Bool {
        utf8.count >= prefix.utf8CodeUnitCount && hasSameUTF8(prefix)
    }

    /// Whether the string's UTF-8 starts with `name`'s (the string has at least as many bytes):
    /// ``hasUTF8(_:)`` and ``hasUTF8Prefix(_:)`` once the lengths allow it. Out of line, as most
    /// strings are told apart before it.
    @usableFromInline
    func hasSameUTF8(_ name: StaticString) -> Bool {
        let count = name.utf8CodeUnitCount
        let same: Bool? = utf8.withContiguousStorageIfAvailable { bytes in
            guard let start = bytes.baseAddress, count > 0 else { return true }
            return memcmp(start, name.utf8Start, count) == 0
        }
        return same ?? utf8.elementsEqual(UnsafeBufferPointer(start: name.utf8Start, count: count))
    }
}
