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
        var allDots = true
        var keptAsIs = true
        for byte in value.utf8 {
            if byte != UInt8(ascii: ".") {
                allDots = false
                if !isUnreserved(byte) { keptAsIs = false }
            }
        }
        // Most values are ids of unreserved characters: the value itself, with no new string
        // built byte by byte for every rendering.
        if keptAsIs && !allDots { return value }
        let hex = Array("0123456789ABCDEF".utf8)
        var encoded: [UInt8] = []
        encoded.reserveCapacity(value.utf8.count * 3)
        for byte in value.utf8 {
            if isUnreserved(byte) || (byte == UInt8(ascii: ".") && !allDots) {
                encoded.append(byte)
            } else {
                encoded.append(UInt8(ascii: "%"))
                encoded.append(hex[Int(byte >> 4)])
                encoded.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// RFC 3986's unreserved characters but the dot, which ``encodeSegment(_:)`` treats apart.
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}
