/// A text with `{field}` placeholders, parsed once at catalog load and filled by concatenation
/// (collapse keys, thread ids, deep-link paths).
public struct TextTemplate: Sendable, Hashable {
    public enum Piece: Sendable, Hashable {
        case literal(String)
        case parameter(String)
    }

    public var pieces: [Piece]

    /// The placeholder names, in order.
    public var parameters: [String] {
        pieces.compactMap { if case .parameter(let name) = $0 { name } else { nil } }
    }

    /// Parses `text`; `nil` if a placeholder is malformed or a brace unmatched.
    public init?(_ text: String) {
        var pieces: [Piece] = []
        var literal = ""
        var iterator = text.makeIterator()
        while let character = iterator.next() {
            switch character {
            case "{":
                var name = ""
                var closed = false
                while let next = iterator.next() {
                    if next == "}" {
                        closed = true
                        break
                    }
                    name.append(next)
                }
                guard closed, !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else {
                    return nil
                }
                if !literal.isEmpty { pieces.append(.literal(literal)) }
                literal = ""
                pieces.append(.parameter(name))
            case "}":
                return nil
            default:
                literal.append(character)
            }
        }
        if !literal.isEmpty { pieces.append(.literal(literal)) }
        self.pieces = pieces
    }

    /// Fills the placeholders; `nil` if a value is missing or empty.
    func render(_ value: (String) -> String?, encode: (String) -> String = { $0 }) -> String? {
        var result = ""
        for piece in pieces {
            switch piece {
            case .literal(let text): result += text
            case .parameter(let name):
                guard let text = value(name), !text.isEmpty else { return nil }
                result += encode(text)
            }
        }
        return result
    }
}
