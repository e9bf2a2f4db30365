import HeraldEvents

/// Where a field's value is found in an event: `data.order.id`, `data.items[0].sku`, or one of the
/// event's attributes (`id`, `source`, `type`, `subject`, `time`).
public struct FieldPath: Sendable, Hashable, CustomStringConvertible {
    public enum Segment: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    /// The event attribute the path starts at (`data`, or `id`, `source`, `type`, `subject`, `time`).
    public let root: String
    public let segments: [Segment]
    public let description: String
    /// `root`, resolved once: looking a value up compared `root` with each attribute's name.
    private let attribute: Attribute

    private enum Attribute: Sendable, Hashable {
        case data, id, source, type, subject, time
    }

    static let roots: Set<String> = ["data", "id", "source", "type", "subject", "time"]

    /// Parses a path; returns `nil` if it is malformed or starts anywhere but an event attribute.
    ///
    /// A path is keys separated by dots, each key or index optionally followed by indexes in
    /// brackets: `data.items[0].sku`, `data.matrix[1][2]`. An empty key (`data..id`, `data.`), an
    /// index that is not a non-negative decimal number or is not closed, and anything but a dot or
    /// another index after an index, are malformed.
    public init?(_ text: String) {
        description = text
        var parts: [Segment] = []
        var current = ""
        var characters = text.makeIterator()
        var rootName: String?
        /// A dot was read: a key must follow.
        var expectsKey = false
        /// An index was read: only a dot, another index or the end may follow.
        var afterIndex = false
        func finishKey() -> Bool {
            guard !current.isEmpty else { return false }
            if rootName == nil { rootName = current } else { parts.append(.key(current)) }
            current = ""
            return true
        }
        while let character = characters.next() {
            switch character {
            case ".":
                // After an index the dot only separates; otherwise it ends a key, which must not be empty.
                if afterIndex { afterIndex = false } else { guard finishKey() else { return nil } }
                expectsKey = true
            case "[":
                if !current.isEmpty {
                    guard finishKey() else { return nil }
                } else if !afterIndex {
                    // At the start, or right after a dot.
                    return nil
                }
                var digits = ""
                var closed = false
                while let digit = characters.next() {
                    if digit == "]" {
                        closed = true
                        break
                    }
                    digits.append(digit)
                }
                guard closed, !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isWholeNumber }),
                    let index = Int(digits)
                else { return nil }
                parts.append(.index(index))
                afterIndex = true
                expectsKey = false
            default:
                guard !afterIndex else { return nil }
                current.append(character)
                expectsKey = false
            }
        }
        if expectsKey { return nil }
        if !current.isEmpty { guard finishKey() else { return nil } }
        guard let rootName, Self.roots.contains(rootName) else { return nil }
        if rootName != "data" && !parts.isEmpty { return nil }
        root = rootName
        segments = parts
        attribute =
            switch rootName {
            case "id": .id
            case "source": .source
            case "type": .type
            case "subject": .subject
            case "time": .time
            default: .data
            }
    }

    /// The raw value at this path in `event`, or `nil` if it is absent (or JSON null).
    public func value(in event: CloudEvent) -> JSONValue? {
        switch attribute {
        case .id: return .string(event.id)
        case .source: return .string(event.source)
        case .type: return .string(event.type)
        case .subject: return event.subject.map(JSONValue.string)
        case .time: return event.time.map { .string($0.description) }
        case .data: break
        }
        guard var value = event.data else { return nil }
        // One switch on the segment, then on the value: a switch on the pair of them copied both
        // into a tuple (a retain and a release of each) at every step.
        for segment in segments {
            switch segment {
            case .key(let key):
                guard case .object(let object) = value, let member = object[key] else { return nil }
                value = member
            case .index(let index):
                guard case .array(let array) = value, index < array.count else { return nil }
                value = array[index]
            }
        }
        if case .null = value { return nil }
        return value
    }
}
