import HeraldEvents

/// Where a field's value is found in an event: `data.order.id`, `data.items[0].sku`, or one of the
/// event's attributes (`id`, `source`, `type`, `subject`, `time`).
public struct FieldPath: Sendable, Hashable, CustomStringConvertible {
    public enum Segment: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    /// The event attribute the path starts at (`data`, or `id`, `source`, `type`, `subject`, `time`).
    public var root: String
    public var segments: [Segment]
    public let description: String

    static let roots: Set<String> = ["data", "id", "source", "type", "subject", "time"]

    /// Parses a path; returns `nil` if it is malformed or starts anywhere but an event attribute.
    public init?(_ text: String) {
        description = text
        var parts: [Segment] = []
        var current = ""
        var characters = text.makeIterator()
        var rootName: String?
        func finishKey() -> Bool {
            guard !current.isEmpty else { return false }
            if rootName == nil { rootName = current } else { parts.append(.key(current)) }
            current = ""
            return true
        }
        while let character = characters.next() {
            switch character {
            case ".":
                guard finishKey() else { return nil }
            case "[":
                if !current.isEmpty { guard finishKey() else { return nil } }
                var digits = ""
                while let digit = characters.next(), digit != "]" { digits.append(digit) }
                guard let index = Int(digits), index >= 0, rootName != nil else { return nil }
                parts.append(.index(index))
            default:
                current.append(character)
            }
        }
        if !current.isEmpty { guard finishKey() else { return nil } }
        guard let rootName, Self.roots.contains(rootName) else { return nil }
        if rootName != "data" && !parts.isEmpty { return nil }
        root = rootName
        segments = parts
    }

    /// The raw value at this path in `event`, or `nil` if it is absent (or JSON null).
    public func value(in event: CloudEvent) -> JSONValue? {
        switch root {
        case "id": return .string(event.id)
        case "source": return .string(event.source)
        case "type": return .string(event.type)
        case "subject": return event.subject.map(JSONValue.string)
        case "time": return event.time.map { .string($0.description) }
        default: break
        }
        var value = event.data
        for segment in segments {
            switch (segment, value) {
            case (.key(let key), .object(let object)?): value = object[key]
            case (.index(let index), .array(let array)?): value = index < array.count ? array[index] : nil
            default: return nil
            }
        }
        if case .null = value { return nil }
        return value
    }
}
