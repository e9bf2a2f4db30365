/// A strict JSON parser (RFC 8259) over UTF-8 bytes.
///
/// It rejects invalid UTF-8, unescaped control characters, trailing data and nesting deeper than
/// `maxDepth` (hostile input must not exhaust the stack), and reports the byte offset of the
/// first problem.
public struct JSONParser {
    /// Why the bytes are not JSON, and where.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var reason: String
        public var offset: Int
        public var description: String { "\(reason) at byte \(offset)" }
    }

    /// How deep arrays and objects may nest. Default 64.
    public var maxDepth = 64

    public init() {}

    /// Parses one JSON value that fills `bytes` (surrounding whitespace allowed).
    ///
    /// - Parameter strings: short strings earlier parses made, to take instead of making them
    ///   again (see ``JSONStringTable``); the parse adds the ones it makes.
    public func parse(_ bytes: UnsafeRawBufferPointer, strings: JSONStringTable? = nil) throws(Failure) -> JSONValue {
        var cursor = Cursor(bytes: bytes, maxDepth: maxDepth)
        cursor.strings = strings.map(Unmanaged.passUnretained)
        cursor.skipWhitespace()
        let value = try cursor.parseValue(depth: 0)
        cursor.skipWhitespace()
        guard cursor.index == bytes.count else { throw cursor.failure("unexpected data after the JSON value") }
        return value
    }

    /// Parses one JSON value that fills `bytes`, except the value of the member at `rawPath` (member
    /// names from the outermost object in), which is checked but not built: the tree holds `null`
    /// in its place, and its bytes' range within `bytes` comes back instead. For a document that
    /// carries another (a provider request's body) to be passed on exactly as written, without
    /// building it and writing it again.
    public func parse(
        _ bytes: UnsafeRawBufferPointer,
        keepingRawAt rawPath: [String]
    ) throws(Failure) -> (value: JSONValue, raw: Range<Int>?) {
        var cursor = Cursor(bytes: bytes, maxDepth: maxDepth)
        cursor.rawPath = rawPath
        cursor.skipWhitespace()
        let value = try cursor.parseValue(depth: 0, onRawPath: !rawPath.isEmpty)
        cursor.skipWhitespace()
        guard cursor.index == bytes.count else { throw cursor.failure("unexpected data after the JSON value") }
        return (value, cursor.raw)
    }

    /// Parses one JSON value from `bytes`.
    public func parse(_ bytes: some Collection<UInt8>) throws(Failure) -> JSONValue {
        // Bytes already in one piece (an array, a consumed Kafka value) are read where they are.
        if let result = bytes.withContiguousStorageIfAvailable({ buffer in
            Result { () throws(Failure) in try parse(UnsafeRawBufferPointer(buffer)) }
        }) {
            return try result.get()
        }
        let contiguous = Array(bytes)
        let result = contiguous.withUnsafeBytes { buffer in Result { () throws(Failure) in try parse(buffer) } }
        return try result.get()
    }
}

/// Reads one JSON document value by value, in document order, without building a tree: for a
/// document of a known shape read on a hot path (the sender reads every outbound message), where
/// building the tree and releasing it cost more than the reading. As strict as ``JSONParser``:
/// every value passed over is checked, not just skipped.
///
/// A caller reads each member's value (``string()``, ``number()``, ``beginObject()`` or
/// ``skipValue()``) before asking for the next member, and ``end()`` after the document.
public struct JSONReader {
    private var cursor: Cursor
    /// How many objects are open.
    private var depth = 0
    /// Bit `n`: the object open at depth `n + 1` has had a member, so the next needs a comma.
    private var hasMembers: UInt64 = 0

    /// - Parameters:
    ///   - maxDepth: how deep objects and arrays may nest, at most 64.
    ///   - strings: short strings read before, to take instead of making them again (see
    ///     ``JSONStringTable``); the caller keeps it alive while it reads.
    public init(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = 64, strings: JSONStringTable? = nil) {
        cursor = Cursor(bytes: bytes, maxDepth: min(maxDepth, 64))
        cursor.strings = strings.map(Unmanaged.passUnretained)
    }

    /// Opens the next value when it is an object (its members come from ``nextMember()``);
    /// otherwise checks and skips it, and answers false.
    public mutating func beginObject() throws(JSONParser.Failure) -> Bool {
        cursor.skipWhitespace()
        guard cursor.current == UInt8(ascii: "{") else {
            try skipValue()
            return false
        }
        guard depth < cursor.maxDepth else { throw cursor.failure("nested deeper than \(cursor.maxDepth)") }
        cursor.index += 1
        depth += 1
        hasMembers &= ~(1 << (depth - 1))
        return true
    }

    /// The name of the innermost open object's next member, whose value is the next to read; nil
    /// once the object has ended (it is then closed).
    public mutating func nextMember() throws(JSONParser.Failure) -> String? {
        guard try beginMember() else { return nil }
        let name = try cursor.parseString()
        try endMemberName()
        return name
    }

    /// ``nextMember()`` with the name handed to `body` as its UTF-8 instead of made into a string:
    /// the bytes in the document when the name is plain ASCII without escapes (then valid only
    /// during `body`), else the decoded name's. For a reader that only compares names with the
    /// ones it knows, as making each name a string and comparing it cost more than reading it.
    public mutating func nextMember<Result>(
        _ body: (UnsafeRawBufferPointer) -> Result
    ) throws(JSONParser.Failure) -> Result? {
        guard try beginMember() else { return nil }
        let name = try cursor.withStringBytes(body)
        try endMemberName()
        return name
    }

    /// Reads up to the next member's name: false, with the object closed, at its end.
    private mutating func beginMember() throws(JSONParser.Failure) -> Bool {
        precondition(depth > 0, "no object is open")
        cursor.skipWhitespace()
        if cursor.current == UInt8(ascii: "}") {
            cursor.index += 1
            depth -= 1
            return false
        }
        if hasMembers & (1 << (depth - 1)) != 0 {
            guard cursor.current == UInt8(ascii: ",") else { throw cursor.failure("expected ',' or '}'") }
            cursor.index += 1
            cursor.skipWhitespace()
        }
        guard cursor.current == UInt8(ascii: "\"") else { throw cursor.failure("expected a member name") }
        return true
    }

    /// Reads past the `:` after a member's name.
    private mutating func endMemberName() throws(JSONParser.Failure) {
        cursor.skipWhitespace()
        guard cursor.current == UInt8(ascii: ":") else { throw cursor.failure("expected ':'") }
        cursor.index += 1
        hasMembers |= 1 << (depth - 1)
    }

    /// What the next value is, from its first byte; nil at the end of the input or at a byte no
    /// value starts with.
    public enum Kind: Sendable {
        case object, array, string, number, bool, null

        /// The JSON type's name, for error messages, as ``JSONValue/typeName`` says it.
        public var typeName: String {
            switch self {
            case .null: "null"
            case .bool: "boolean"
            case .number: "number"
            case .string: "string"
            case .array: "array"
            case .object: "object"
            }
        }
    }

    /// What the next value is, without reading it (reading it still checks it whole).
    public mutating func peek() -> Kind? {
        cursor.skipWhitespace()
        switch cursor.current {
        case UInt8(ascii: "{")?: return .object
        case UInt8(ascii: "[")?: return .array
        case UInt8(ascii: "\"")?: return .string
        case UInt8(ascii: "-")?, (UInt8(ascii: "0")...UInt8(ascii: "9"))?: return .number
        case UInt8(ascii: "t")?, UInt8(ascii: "f")?: return .bool
        case UInt8(ascii: "n")?: return .null
        default: return nil
        }
    }

    /// The next value when it is a string; any other value is checked and skipped, and gives nil.
    public mutating func string() throws(JSONParser.Failure) -> String? {
        cursor.skipWhitespace()
        guard cursor.current == UInt8(ascii: "\"") else {
            try skipValue()
            return nil
        }
        return try cursor.parseString()
    }

    /// The next value when it is a string, its UTF-8 handed to `body` as ``nextMember(_:)`` hands a
    /// name; any other value is checked and skipped, and gives nil.
    public mutating func string<Result>(
        _ body: (UnsafeRawBufferPointer) -> Result
    ) throws(JSONParser.Failure) -> Result? {
        cursor.skipWhitespace()
        guard cursor.current == UInt8(ascii: "\"") else {
            try skipValue()
            return nil
        }
        return try cursor.withStringBytes(body)
    }

    /// The next value's text when it is a number; any other value is checked and skipped, and
    /// gives nil.
    public mutating func number() throws(JSONParser.Failure) -> String? {
        cursor.skipWhitespace()
        switch cursor.current {
        case UInt8(ascii: "-")?, (UInt8(ascii: "0")...UInt8(ascii: "9"))?: return try cursor.parseNumber()
        default:
            try skipValue()
            return nil
        }
    }

    /// The next value, whatever it is, built as ``JSONParser`` builds it: for the part of a
    /// document whose shape the reader does not know.
    public mutating func value() throws(JSONParser.Failure) -> JSONValue {
        cursor.skipWhitespace()
        return try cursor.parseValue(depth: depth)
    }

    /// Checks the next value and passes over it: where its bytes are.
    @discardableResult
    public mutating func skipValue() throws(JSONParser.Failure) -> Range<Int> {
        cursor.skipWhitespace()
        let start = cursor.index
        try cursor.skipValue(depth: depth)
        return start..<cursor.index
    }

    /// Checks that the document is whole: nothing but whitespace follows it.
    public mutating func end() throws(JSONParser.Failure) {
        precondition(depth == 0, "an object is still open")
        cursor.skipWhitespace()
        guard cursor.index == cursor.bytes.count else { throw cursor.failure("unexpected data after the JSON value") }
    }
}

private struct Cursor {
    let bytes: UnsafeRawBufferPointer
    let maxDepth: Int
    var index = 0
    /// The member whose value is checked and skipped, not built, and where that value was found.
    var rawPath: [String] = []
    var raw: Range<Int>?
    /// Where short strings are looked up before they are made. Unretained: the parse's caller
    /// holds the table for the whole parse.
    var strings: Unmanaged<JSONStringTable>?

    init(bytes: UnsafeRawBufferPointer, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    func failure(_ reason: String) -> JSONParser.Failure {
        JSONParser.Failure(reason: reason, offset: index)
    }

    var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// `onRawPath`: this value is where ``rawPath``'s first `depth` members lead.
    mutating func parseValue(depth: Int, onRawPath: Bool = false) throws(JSONParser.Failure) -> JSONValue {
        guard let byte = current else { throw failure("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"): return .object(try parseObject(depth: depth + 1, onRawPath: onRawPath))
        case UInt8(ascii: "["): return .array(try parseArray(depth: depth + 1))
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw failure("unexpected character")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParser.Failure) {
        let length = literal.utf8CodeUnitCount
        guard index + length <= bytes.count else { throw failure("unexpected end of input") }
        for offset in 0..<length where bytes[index + offset] != literal.utf8Start[offset] {
            throw failure("invalid literal")
        }
        index += length
    }

    mutating func parseObject(depth: Int, onRawPath: Bool = false) throws(JSONParser.Failure) -> JSONObject {
        guard depth <= maxDepth else { throw failure("nested deeper than \(maxDepth)") }
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        members.reserveCapacity(8)
        var pathTaken = false
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            return JSONObject(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw failure("expected a member name") }
            let key = try parseString()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw failure("expected ':'") }
            index += 1
            skipWhitespace()
            // Only a name's first member is on the path: it is the one lookups find.
            if onRawPath && !pathTaken && rawPath[depth - 1] == key {
                pathTaken = true
                if depth == rawPath.count {
                    let start = index
                    try skipValue(depth: depth)
                    raw = start..<index
                    members.append((key, .null))
                } else {
                    members.append((key, try parseValue(depth: depth, onRawPath: true)))
                }
            } else {
                members.append((key, try parseValue(depth: depth)))
            }
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return JSONObject(members)
            default: throw failure("expected ',' or '}'")
            }
        }
    }

    /// Checks one value as ``parseValue(depth:onRawPath:)`` does, without building it.
    mutating func skipValue(depth: Int) throws(JSONParser.Failure) {
        guard let byte = current else { throw failure("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let isObject = byte == UInt8(ascii: "{")
            let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
            guard depth + 1 <= maxDepth else { throw failure("nested deeper than \(maxDepth)") }
            index += 1
            skipWhitespace()
            if current == close {
                index += 1
                return
            }
            while true {
                skipWhitespace()
                if isObject {
                    guard current == UInt8(ascii: "\"") else { throw failure("expected a member name") }
                    try skipString()
                    skipWhitespace()
                    guard current == UInt8(ascii: ":") else { throw failure("expected ':'") }
                    index += 1
                    skipWhitespace()
                }
                try skipValue(depth: depth + 1)
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): index += 1
                case close:
                    index += 1
                    return
                default: throw failure(isObject ? "expected ',' or '}'" : "expected ',' or ']'")
                }
            }
        case UInt8(ascii: "\""): try skipString()
        // A number is checked where it is, without making a string of its text.
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try scanNumber()
        default:
            _ = try parseValue(depth: depth)
        }
    }

    /// Checks a string as ``parseString()`` does, without building it.
    mutating func skipString() throws(JSONParser.Failure) {
        index += 1
        let start = index
        skipPlainASCII()
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return
            case UInt8(ascii: "\\"):
                index += 1
                guard let escaped = current else { throw failure("unterminated string") }
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    break
                case UInt8(ascii: "u"): _ = try readUnicodeEscape()
                default: throw failure("invalid escape")
                }
            case ..<0x20: throw failure("unescaped control character in a string")
            case ..<0x80: index += 1
            default:
                guard let length = utf8SequenceLength(at: index) else {
                    throw JSONParser.Failure(reason: "invalid UTF-8 in a string", offset: start)
                }
                index += length
            }
        }
        throw failure("unterminated string")
    }

    /// The length of the well-formed UTF-8 sequence of more than one byte at `start` (RFC 3629:
    /// no overlong forms, no surrogates, nothing above U+10FFFF), or nil.
    func utf8SequenceLength(at start: Int) -> Int? {
        func continuation(_ offset: Int, _ range: ClosedRange<UInt8> = 0x80...0xBF) -> Bool {
            start + offset < bytes.count && range.contains(bytes[start + offset])
        }
        switch bytes[start] {
        case 0xC2...0xDF: return continuation(1) ? 2 : nil
        case 0xE0: return continuation(1, 0xA0...0xBF) && continuation(2) ? 3 : nil
        case 0xE1...0xEC, 0xEE...0xEF: return continuation(1) && continuation(2) ? 3 : nil
        case 0xED: return continuation(1, 0x80...0x9F) && continuation(2) ? 3 : nil
        case 0xF0: return continuation(1, 0x90...0xBF) && continuation(2) && continuation(3) ? 4 : nil
        case 0xF1...0xF3: return continuation(1) && continuation(2) && continuation(3) ? 4 : nil
        case 0xF4: return continuation(1, 0x80...0x8F) && continuation(2) && continuation(3) ? 4 : nil
        default: return nil
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParser.Failure) -> [JSONValue] {
        guard depth <= maxDepth else { throw failure("nested deeper than \(maxDepth)") }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            return elements
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return elements
            default: throw failure("expected ',' or ']'")
            }
        }
    }

    mutating func parseNumber() throws(JSONParser.Failure) -> String {
        let start = index
        try scanNumber()
        let text = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
        if let strings, text.count <= 16 { return strings._withUnsafeGuaranteedRef { $0.string(ascii: text) } }
        return String(decoding: text, as: UTF8.self)
    }

    /// Checks the number that starts here and reads past it.
    mutating func scanNumber() throws(JSONParser.Failure) {
        if current == UInt8(ascii: "-") { index += 1 }
        guard let first = current, isDigit(first) else { throw failure("invalid number") }
        if first == UInt8(ascii: "0") {
            index += 1
        } else {
            while let byte = current, isDigit(byte) { index += 1 }
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard let byte = current, isDigit(byte) else { throw failure("invalid number") }
            while let byte = current, isDigit(byte) { index += 1 }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard let byte = current, isDigit(byte) else { throw failure("invalid number") }
            while let byte = current, isDigit(byte) { index += 1 }
        }
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// A word whose lowest set bit is the high bit of the first (lowest-addressed, on this
    /// little-endian machine) byte of `word` that a string's plain ASCII run stops at: a quote, a
    /// backslash, a control character or a byte of a multi-byte character; 0 if there is none.
    /// Bits above the first may be set for bytes that are not such (a borrow carries upward).
    @inline(__always)
    static func specialBytes(in word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        // Below 0x20, or a zero byte of `quote` or `backslash`, in a byte below 0x80; or any byte
        // at or above 0x80.
        return (((word &- ones &* 0x20) | (quote &- ones) | (backslash &- ones)) & ~word | word) & highBits
    }

    /// Passes over plain ASCII (no quote, backslash or control character) eight bytes at a time,
    /// up to the word holding the first byte that is not (the closing quote, most often), and
    /// stops at that byte; a string's reader then reads it and what follows byte by byte.
    @inline(__always)
    mutating func skipPlainASCII() {
        guard let base = bytes.baseAddress else { return }
        while index &+ 8 <= bytes.count {
            let special = Self.specialBytes(in: base.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            if special != 0 {
                index &+= special.trailingZeroBitCount &>> 3
                return
            }
            index &+= 8
        }
    }

    /// The string that starts here (at its quote), its UTF-8 handed to `body`: the bytes in place
    /// when they are plain ASCII, else the decoded string's (``parseString()``, which also
    /// reports any fault).
    mutating func withStringBytes<Result>(
        _ body: (UnsafeRawBufferPointer) -> Result
    ) throws(JSONParser.Failure) -> Result {
        let quote = index
        index += 1
        if let scanned = try scanUnescaped(), scanned.ascii { return body(scanned.bytes) }
        // Escapes or multi-byte characters: the general path, from the quote again.
        index = quote
        var text = try parseString()
        return text.withUTF8 { body(UnsafeRawBufferPointer($0)) }
    }

    /// Reads a string's bytes from here (just past its opening quote) to its closing quote, when
    /// they hold no escape: the bytes, whether they are all ASCII, and `index` past the quote.
    /// Nil at the first backslash (`index` on it). Shared by both string readers, written without
    /// closures: a generic core taking the two readers' endings as closures counted about 670
    /// more instructions per event in replay.
    @inline(__always)
    mutating func scanUnescaped() throws(JSONParser.Failure) -> (bytes: UnsafeRawBufferPointer, ascii: Bool)? {
        let start = index
        var ascii = true
        skipPlainASCII()
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
                index += 1
                return (raw, ascii)
            }
            if byte >= 0x80 { ascii = false }
            if byte == UInt8(ascii: "\\") { return nil }
            if byte < 0x20 { throw failure("unescaped control character in a string") }
            index += 1
        }
        throw failure("unterminated string")
    }

    mutating func parseString() throws(JSONParser.Failure) -> String {
        index += 1
        let start = index
        // Fast path: no escapes; pure ASCII needs no UTF-8 validation.
        if let (raw, ascii) = try scanUnescaped() {
            if ascii {
                if let strings, UInt(bitPattern: raw.count &- 1) < 16 {
                    return strings._withUnsafeGuaranteedRef { $0.string(ascii: raw) }
                }
                return String(decoding: raw, as: UTF8.self)
            }
            guard let text = String(validating: raw, as: UTF8.self) else {
                throw JSONParser.Failure(reason: "invalid UTF-8 in a string", offset: start)
            }
            return text
        }
        // Slow path: the string has escapes.
        var utf8 = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let text = String(validating: utf8, as: UTF8.self) else {
                    throw JSONParser.Failure(reason: "invalid UTF-8 in a string", offset: start)
                }
                return text
            case UInt8(ascii: "\\"):
                index += 1
                guard let escaped = current else { throw failure("unterminated string") }
                index += 1
                switch escaped {
                case UInt8(ascii: "\""): utf8.append(0x22)
                case UInt8(ascii: "\\"): utf8.append(0x5C)
                case UInt8(ascii: "/"): utf8.append(0x2F)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"): try appendUnicodeEscape(to: &utf8)
                default: throw failure("invalid escape")
                }
            default:
                if byte < 0x20 { throw failure("unescaped control character in a string") }
                utf8.append(byte)
                index += 1
            }
        }
        throw failure("unterminated string")
    }

    mutating func readHex4() throws(JSONParser.Failure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw failure("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    mutating func appendUnicodeEscape(to utf8: inout [UInt8]) throws(JSONParser.Failure) {
        utf8.append(contentsOf: String(Character(try readUnicodeEscape())).utf8)
    }

    /// The scalar of a `\u` escape (after the `u`), a surrogate pair taken whole.
    mutating func readUnicodeEscape() throws(JSONParser.Failure) -> Unicode.Scalar {
        var scalar = try readHex4()
        if (0xD800...0xDBFF).contains(scalar) {
            // A high surrogate must be followed by an escaped low surrogate.
            guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw failure("unpaired surrogate") }
            index += 2
            let low = try readHex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw failure("unpaired surrogate") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw failure("unpaired surrogate")
        }
        // Surrogates are excluded above, and a pair makes at most U+10FFFF.
        return Unicode.Scalar(scalar)!
    }
}
