extension JSONValue {
    /// Compact JSON with members in their stored order, `/` left unescaped, and only the escapes
    /// JSON requires (quotes, backslashes, control characters).
    public var serialized: String {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        JSONWriter.write(self, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// The compact serialization as UTF-8 bytes.
    public var serializedBytes: [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        JSONWriter.write(self, to: &output)
        return output
    }
}

enum JSONWriter {
    static func write(_ value: JSONValue, to output: inout [UInt8]) {
        switch value {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let flag): output.append(contentsOf: (flag ? "true" : "false").utf8)
        case .number(let text): output.append(contentsOf: text.utf8)
        case .string(let text): writeString(text, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                write(element, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let object):
            output.append(UInt8(ascii: "{"))
            for (index, member) in object.members.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                writeString(member.key, to: &output)
                output.append(UInt8(ascii: ":"))
                write(member.value, to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// Whether any byte is a control character, a quote or a backslash. Eight bytes at a time: a
    /// byte at a time this scan took about 4% of a replay's CPU in its profile.
    static func needsEscaping(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        /// Whether a byte of `word` is below `bound` (at most 0x80); exact, word by word.
        func hasByte(below bound: UInt64, in word: UInt64) -> Bool {
            (word &- ones &* bound) & ~word & highBits != 0
        }
        var offset = 0
        while offset + 8 <= bytes.count {
            let word = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            if hasByte(below: 0x20, in: word) || hasByte(below: 1, in: word ^ (ones &* 0x22))
                || hasByte(below: 1, in: word ^ (ones &* 0x5C))
            {
                return true
            }
            offset += 8
        }
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return true }
            offset += 1
        }
        return false
    }

    static func writeString(_ text: String, to output: inout [UInt8]) {
        // A native string's bytes are read in place (a small one's from a copy on the stack);
        // only a bridged string needs making native first.
        if text.utf8.withContiguousStorageIfAvailable({ writeString(UnsafeRawBufferPointer($0), to: &output) }) == nil {
            var text = text
            text.withUTF8 { writeString(UnsafeRawBufferPointer($0), to: &output) }
        }
    }

    static func writeString(_ bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        // Most strings need no escaping: check the contiguous bytes once and copy them in one go.
        if !needsEscaping(bytes) {
            output.append(UInt8(ascii: "\""))
            output.append(contentsOf: bytes)
            output.append(UInt8(ascii: "\""))
            return
        }
        output.append(UInt8(ascii: "\""))
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): output.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: output.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0x00..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                output.append(contentsOf: [
                    0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0x0F)],
                ])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}
