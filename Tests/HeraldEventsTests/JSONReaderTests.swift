import Testing

@testable import HeraldEvents

@Suite("JSON pull reader")
struct JSONReaderTests {
    /// Reads `text` with `body` and finishes the document.
    func read<T>(_ text: String, _ body: (inout JSONReader) throws -> T) throws -> T {
        try Array(text.utf8).withUnsafeBytes { bytes in
            var reader = JSONReader(bytes)
            let result = try body(&reader)
            try reader.end()
            return result
        }
    }

    @Test("members come in document order with their values; nested objects and skipped values too")
    func members() throws {
        let text = #" { "a" : "x\u00e9" , "n": -1.5e3, "o": {"in": "y", "deep": [1, {"z": null}]}, "t": true } "#
        let seen = try read(text) { reader in
            var seen: [String] = []
            #expect(try reader.beginObject())
            while let name = try reader.nextMember() {
                switch name {
                case "a": seen.append("a=\(try reader.string() ?? "?")")
                case "n": seen.append("n=\(try reader.number() ?? "?")")
                case "o":
                    #expect(reader.peek() == .object)
                    #expect(try reader.beginObject())
                    while let inner = try reader.nextMember() {
                        if inner == "in" {
                            seen.append("o.in=\(try reader.string() ?? "?")")
                        } else {
                            let range = try reader.skipValue()
                            seen.append("o.\(inner)@\(range.count)")
                        }
                    }
                default:
                    #expect(reader.peek() == .bool)
                    // Not a string: checked, skipped, nil.
                    #expect(try reader.string() == nil)
                    seen.append(name)
                }
            }
            return seen
        }
        #expect(seen == ["a=xé", "n=-1.5e3", "o.in=y", "o.deep@16", "t"])
    }

    @Test("names and strings handed over as bytes are the ones read as strings: plain, escaped, non-ASCII, empty")
    func namesAsBytes() throws {
        let text =
            #"{"plain":"v","esc\u0061ped":"a\"b","h\u00e9":"\u00e9t\u00e9","":"","ü":"ünï","long name past eight":"x"}"#
        let asStrings = try read(text) { reader in
            var seen: [String] = []
            _ = try reader.beginObject()
            while let name = try reader.nextMember() { seen += [name, try reader.string() ?? "?"] }
            return seen
        }
        let asBytes = try read(text) { reader in
            var seen: [String] = []
            _ = try reader.beginObject()
            while let name = try reader.nextMember({ String(decoding: $0, as: UTF8.self) }) {
                seen += [name, try reader.string { String(decoding: $0, as: UTF8.self) } ?? "?"]
            }
            return seen
        }
        #expect(
            asStrings == [
                "plain", "v", "escaped", "a\"b", "hé", "été", "", "", "ü", "ünï", "long name past eight", "x",
            ]
        )
        #expect(asBytes == asStrings)
        // Not a string: checked, skipped, nil, and the body not called.
        let skipped = try read(#"{"a":[1,{"b":2}]}"#) { reader in
            _ = try reader.beginObject()
            _ = try reader.nextMember { _ in () }
            let value: Void? = try reader.string { _ in Issue.record("called for an array") }
            #expect(try reader.nextMember { _ in () } == nil)
            return value
        }
        #expect(skipped == nil)
    }

    @Test(
        "a name or string read as bytes fails where it would as a string",
        arguments: [#"{"a\x":1}"#, "{\"a\u{01}\":1}", #"{"a":"\ud800"}"#, #"{"a":"b"#, #"{"abcdefghij"#]
    )
    func bytesFaults(text: String) {
        #expect(throws: JSONParser.Failure.self) {
            try read(text) { reader in
                _ = try reader.beginObject()
                while try reader.nextMember({ $0.count }) != nil { _ = try reader.string { $0.count } }
            }
        }
    }

    @Test("a name or string of invalid UTF-8 read as bytes fails as it does read as a string")
    func bytesInvalidUTF8() {
        // {"\xC3(":1} and {"a":"\xC3("}: a lead byte without its continuation.
        for document: [UInt8] in [
            [0x7B, 0x22, 0xC3, 0x28, 0x22, 0x3A, 0x31, 0x7D],
            [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC3, 0x28, 0x22, 0x7D],
        ] {
            let error = #expect(throws: JSONParser.Failure.self) {
                try document.withUnsafeBytes { bytes in
                    var reader = JSONReader(bytes)
                    _ = try reader.beginObject()
                    while try reader.nextMember({ $0.count }) != nil { _ = try reader.string { $0.count } }
                }
            }
            #expect(error?.reason == "invalid UTF-8 in a string")
        }
    }

    @Test("an empty object has no members; a value that is not an object is checked and passed over")
    func emptyAndNotObject() throws {
        #expect(try read(" {} ") { reader in try reader.beginObject() ? try reader.nextMember() : "not" } == nil)
        #expect(try read("[1, 2]") { reader in try reader.beginObject() } == false)
        #expect(throws: JSONParser.Failure.self) { try read("[1, 2,]") { reader in try reader.beginObject() } }
    }

    @Test(
        "what the tree parser rejects, the reader rejects",
        arguments: [
            #"{"a":1,}"#, #"{"a":1 "b":2}"#, #"{,"a":1}"#, #"{"a" 1}"#, #"{"a":1} x"#, #"{"a":[1,]}"#,
            #"{"a":"\x"}"#, #"{"a":tru}"#, #"{"a":1"#, "",
            // Numbers, which a skip checks without making their text.
            #"{"a":01}"#, #"{"a":-}"#, #"{"a":1.}"#, #"{"a":1e}"#, #"{"a":1e+}"#, #"{"a":.5}"#, #"{"a":+1}"#,
        ]
    )
    func rejects(text: String) {
        #expect(throws: JSONParser.Failure.self) {
            try read(text) { reader in
                guard try reader.beginObject() else { return }
                while try reader.nextMember() != nil { try reader.skipValue() }
            }
        }
        #expect(throws: JSONParser.Failure.self) { try JSONParser().parse(Array(text.utf8)) }
    }

    @Test("a skipped string stops at every kind of byte, at every position, as the parser does")
    func skippedStringScan() throws {
        // Each special piece at each position of strings up to 24 bytes (skipped eight bytes at a
        // time up to the first that is not plain ASCII), then more JSON: the skip accepts what the
        // parser accepts, ends where it ends, and refuses what it refuses.
        let pieces = [#"\""#, #"\\"#, #"\n"#, "é", "😀", #"\u00e9"#, "\u{01}", #"\x"#]
        for length in 0...24 {
            let plain = String(repeating: "a", count: length)
            for position in 0...length {
                for piece in pieces {
                    let text = #"{"s":""# + plain.prefix(position) + piece + plain.dropFirst(position) + #"","t":7}"#
                    let parsed = try? JSONParser().parse(Array(text.utf8))
                    let skipped = try? read(text) { reader -> String? in
                        _ = try reader.beginObject()
                        _ = try reader.nextMember()
                        try reader.skipValue()
                        let next = try reader.nextMember()
                        _ = try reader.number()
                        _ = try reader.nextMember()
                        return next
                    }
                    #expect((parsed != nil) == (skipped != nil), "\(text)")
                    if parsed != nil { #expect(skipped == "t", "\(text)") }
                }
            }
            // Bytes that are not UTF-8, at the end of a run of plain ones.
            let invalid = Array(#"{"s":""#.utf8) + Array(plain.utf8) + [0xFF] + Array(#""}"#.utf8)
            #expect(throws: JSONParser.Failure.self) {
                try invalid.withUnsafeBytes { bytes in
                    var reader = JSONReader(bytes)
                    _ = try reader.beginObject()
                    _ = try reader.nextMember()
                    try reader.skipValue()
                }
            }
        }
    }

    @Test("nesting deeper than the limit is refused, in objects opened and in values skipped")
    func depth() throws {
        let deep = String(repeating: "[", count: 70) + String(repeating: "]", count: 70)
        #expect(throws: JSONParser.Failure.self) {
            try read(#"{"a":\#(deep)}"#) { reader in
                _ = try reader.beginObject()
                while try reader.nextMember() != nil { try reader.skipValue() }
            }
        }
        let objects = String(repeating: #"{"a":"#, count: 3) + "1" + String(repeating: "}", count: 3)
        #expect(throws: JSONParser.Failure.self) {
            try Array(objects.utf8).withUnsafeBytes { bytes in
                var reader = JSONReader(bytes, maxDepth: 2)
                while try reader.beginObject() { _ = try reader.nextMember() }
            }
        }
    }
}
