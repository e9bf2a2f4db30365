/// A JSON value as parsed, with numbers kept as their source text so that amounts such as
/// `1234.50` stay exact, and object members kept in their original order.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A number, as written (`12`, `-0.5`, `1e3`).
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The member `key` of an object, or `nil`.
    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The JSON type's name, for error messages.
    public var typeName: String { kind.typeName }

    /// What kind of value this is, as ``JSONReader/peek()`` tells it before reading one.
    public var kind: JSONReader.Kind {
        switch self {
        case .null: .null
        case .bool: .bool
        case .number: .number
        case .string: .string
        case .array: .array
        case .object: .object
        }
    }
}

/// A JSON object: members in their original order. Lookup is linear, which is fastest for the
/// small objects events are made of.
public struct JSONObject: Sendable, Hashable, Sequence {
    public var members: [(key: String, value: JSONValue)]

    public init(_ members: [(key: String, value: JSONValue)] = []) {
        self.members = members
    }

    /// The value of the first member called `key`.
    public subscript(key: String) -> JSONValue? {
        for member in members where member.key == key { return member.value }
        return nil
    }

    public func makeIterator() -> IndexingIterator<[(key: String, value: JSONValue)]> {
        members.makeIterator()
    }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.count == rhs.members.count
            && zip(lhs.members, rhs.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(members.count)
        for member in members {
            hasher.combine(member.key)
            hasher.combine(member.value)
        }
    }
}
