/// A value type's stored fields kept in one shared object and copied on the first write to a
/// shared one (copy on write): a copy of the value retains one object, not each of its strings
/// and arrays. For values made once and copied often on hot paths: an event through a batch, a
/// recipient out of the directory cache, an outbound message through the sender.
///
/// `fields.name` reads one field where it is; a change through `fields` (`fields.list.append(x)`)
/// copies the fields first when another value shares them, then changes them in place.
///
/// A type built on it declares its accessors `@inlinable` (`_read { yield storage.fields.name }`)
/// and its storage and fields `@usableFromInline`: a read from another module is then a load where
/// it is used, not a call into an opaque coroutine (or a getter returning a copy) around which
/// the optimizer retained what it could not see was left alone.
public struct SharedFields<Fields: Sendable>: Sendable {
    @usableFromInline
    final class Box: @unchecked Sendable {
        // Changed only through `fields`' modify accessor, when no other value shares the box: no
        // access can overlap a change, so the runtime's exclusivity check on every read of a class
        // property (a `swift_beginAccess` per field read, a visible cost on the build path) is
        // left out.
        @exclusivity(unchecked) @usableFromInline var fields: Fields

        @usableFromInline init(_ fields: Fields) { self.fields = fields }
    }

    @usableFromInline var box: Box

    @inlinable public init(_ fields: Fields) { box = Box(fields) }

    @inlinable
    public var fields: Fields {
        get { box.fields }
        // A yielded access rather than get-and-set: appending to an array field changes it where
        // it is, instead of copying it out, appending to a second reference's buffer (a full copy)
        // and storing it back.
        _modify {
            if !isKnownUniquelyReferenced(&box) { box = Box(box.fields) }
            yield &box.fields
        }
    }

}

extension SharedFields: Equatable, Hashable where Fields: Hashable {
    @inlinable
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.box === rhs.box || lhs.box.fields == rhs.box.fields }

    @inlinable public func hash(into hasher: inout Hasher) { box.fields.hash(into: &hasher) }
}
