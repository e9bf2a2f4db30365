/// A deep-link path pattern such as `/orders/{orderId}`: literal text and field parameters, each
/// parameter a whole path segment's worth of percent-encoded value.
public struct DeepLinkPattern: Sendable, Hashable {
    public var template: TextTemplate

    public var parameters: [String] { template.parameters }

    public struct Invalid: Error, Sendable {
        public var message: String
    }

    /// Parses a pattern; it must start with `/` and its `{name}` parameters must be identifiers.
    public static func parse(_ text: String) -> Result<DeepLinkPattern, Invalid> {
        guard text.hasPrefix("/") else { return .failure(Invalid(message: "'\(text)' must start with /")) }
        guard let template = TextTemplate(text) else {
            return .failure(Invalid(message: "'\(text)' has a malformed parameter; write {fieldName}"))
        }
        return .success(DeepLinkPattern(template: template))
    }

    /// The path with each parameter's value percent-encoded as a path segment; `nil` if one is
    /// missing or empty.
    func render(_ value: (String) -> String?) -> String? {
        template.render(value, encode: Self.encodeSegment)
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
