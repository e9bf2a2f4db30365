/// Writes compact JSON straight into bytes, without building a ``JSONValue`` first: for hot paths
/// that produce the same shape for every message (provider payloads). Members appear in the order
/// written; strings are escaped exactly as ``JSONValue/serialized`` does.
public struct JSONStreamWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    /// Bit n says whether the container at depth n already has a member (so the next needs a comma).
    private var hasMembers: UInt64 = 0
    private var depth = 0

    public init(capacity: Int = 1024) {
        bytes.reserveCapacity(capacity)
    }

    private mutating func separate() {
        let bit: UInt64 = 1 << UInt64(depth)
        if hasMembers & bit != 0 { bytes.append(UInt8(ascii: ",")) }
        hasMembers |= bit
    }

    public mutating func beginObject() {
        bytes.append(UInt8(ascii: "{"))
        depth += 1
        hasMembers &= ~(1 << UInt64(depth))
    }

    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        depth -= 1
    }

    public mutating func beginArray() {
        bytes.append(UInt8(ascii: "["))
        depth += 1
        hasMembers &= ~(1 << UInt64(depth))
    }

    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        depth -= 1
    }

    /// Starts a member: writes the separator and `"key":`.
    public mutating func key(_ name: String) {
        separate()
        JSONWriter.writeString(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    /// Starts an array element.
    public mutating func element() {
        separate()
    }

    public mutating func string(_ value: String) {
        JSONWriter.writeString(value, to: &bytes)
    }

    public mutating func integer(_ value: Int64) {
        bytes.append(contentsOf: String(value).utf8)
    }

    /// A number written as given (it must be valid JSON number text).
    public mutating func number(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    public mutating func bool(_ value: Bool) {
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// Already-serialized JSON, written as the value of the current member or element.
    public mutating func raw(_ json: [UInt8]) {
        bytes.append(contentsOf: json)
    }

    public mutating func null() {
        bytes.append(contentsOf: "null".utf8)
    }

    /// Shorthands for a member with a simple value.
    public mutating func member(_ name: String, _ value: String) {
        key(name)
        string(value)
    }

    public mutating func member(_ name: String, integer value: Int64) {
        key(name)
        integer(value)
    }
}
