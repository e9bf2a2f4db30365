/// A deep-link path pattern such as `/orders/{orderId}`: literal text and field parameters, each
/// parameter a whole path segment's worth of percent-encoded value.
public struct DeepLinkPattern: Sendable, Hashable {
    public enum Piece: Sendable, Hashable {
        case literal(String)
        case parameter(String)
    }

    public var pieces: [Piece]

    public var parameters: [String] {
        pieces.compactMap { if case .parameter(let name) = $0 { name } else { nil } }
    }

    public struct Invalid: Error, Sendable {
        public var message: String
    }

    /// Parses a pattern; it must start with `/` and its `{name}` parameters must be identifiers.
    public static func parse(_ text: String) -> Result<DeepLinkPattern, Invalid> {
        guard text.hasPrefix("/") else { return .failure(Invalid(message: "'\(text)' must start with /")) }
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
                    return .failure(Invalid(message: "'\(text)' has a malformed parameter; write {fieldName}"))
                }
                if !literal.isEmpty { pieces.append(.literal(literal)) }
                literal = ""
                pieces.append(.parameter(name))
            case "}":
                return .failure(Invalid(message: "'\(text)' has an unmatched }"))
            default:
                literal.append(character)
            }
        }
        if !literal.isEmpty { pieces.append(.literal(literal)) }
        return .success(DeepLinkPattern(pieces: pieces))
    }

    /// The path with each parameter's value percent-encoded as a path segment.
    func render(_ values: [String: String]) -> String? {
        var path = ""
        for piece in pieces {
            switch piece {
            case .literal(let text): path += text
            case .parameter(let name):
                guard let value = values[name], !value.isEmpty else { return nil }
                path += Self.encodeSegment(value)
            }
        }
        return path
    }

    /// Percent-encodes everything but RFC 3986's unreserved characters, so a value can never add a
    /// segment, a query or a fragment; a value of only dots is encoded too, because dot-segment
    /// removal happens before percent-decoding.
    static func encodeSegment(_ value: String) -> String {
        let allDots = value.allSatisfy { $0 == "." }
        var encoded = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: ".") where !allDots:
                encoded.append(".")
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                encoded.unicodeScalars.append("%")
                encoded.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                encoded.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 0x0F)]))
            }
        }
        return encoded
    }
}
