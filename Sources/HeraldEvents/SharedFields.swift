/// A value type's stored fields kept in one shared object and copied on the first write to a
/// shared one (copy on write): a copy of the value retains one object, not each of its strings
/// and arrays. For values made once and copied often on hot paths: an event through a batch, a
/// recipient out of the directory cache, an outbound message through the sender.
///
/// `fields.name` reads one field where it is; ``modify(_:)`` changes them.
public struct SharedFields<Fields: Hashable & Sendable>: Hashable, Sendable {
    @usableFromInline
    final class Box: @unchecked Sendable {
        // Written only through `modify(_:)`, when no other value shares the box.
        @usableFromInline var fields: Fields

        @usableFromInline init(_ fields: Fields) { self.fields = fields }
    }

    @usableFromInline var box: Box

    @inlinable public init(_ fields: Fields) { box = Box(fields) }

    @inlinable public var fields: Fields { box.fields }

    /// Changes the fields, copying them first when another value shares them.
    @inlinable
    public mutating func modify<Result>(_ body: (inout Fields) throws -> Result) rethrows -> Result {
        if !isKnownUniquelyReferenced(&box) { box = Box(box.fields) }
        return try body(&box.fields)
    }

    @inlinable
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.box === rhs.box || lhs.box.fields == rhs.box.fields }

    @inlinable public func hash(into hasher: inout Hasher) { box.fields.hash(into: &hasher) }
}
