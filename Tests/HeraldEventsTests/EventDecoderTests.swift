import Foundation
import Testing

@testable import HeraldEvents

@Suite("CloudEvents decoding")
struct EventDecoderTests {
    let structured = """
        {"specversion":"1.0","id":"evt-1","source":"/orders","type":"order.confirmed",
         "time":"2026-11-21T13:00:00.250+01:00","subject":"ord-7","datacontenttype":"application/json",
         "tenant":"acme","data":{"orderId":"ord-7","total":{"amount":1234.50,"currency":"NOK"}}}
        """

    func header(_ name: String, _ value: String) -> EventDecoder.Header {
        EventDecoder.Header(name: name, value: Array(value.utf8))
    }

    @Test("structured and binary mode decode to the same event")
    func bothModes() throws {
        let fromStructured = try EventDecoder().decode(value: Array(structured.utf8))
        let binaryHeaders = [
            header("ce_specversion", "1.0"), header("ce_id", "evt-1"), header("ce_source", "/orders"),
            header("ce_type", "order.confirmed"), header("ce_time", "2026-11-21T13:00:00.250+01:00"),
            header("ce_subject", "ord-7"), header("content-type", "application/json"), header("ce_tenant", "acme"),
        ]
        let data = #"{"orderId":"ord-7","total":{"amount":1234.50,"currency":"NOK"}}"#
        let fromBinary = try EventDecoder().decode(value: Array(data.utf8), headers: binaryHeaders)
        #expect(fromStructured == fromBinary)
        #expect(fromStructured.type == "order.confirmed")
        #expect(fromStructured.time == Timestamp(rfc3339: "2026-11-21T12:00:00.250Z"))
        #expect(fromStructured.extensions == ["tenant": "acme"])
        // Amounts stay exact: the number's text is kept.
        #expect(fromStructured.data?["total"]?["amount"] == .number("1234.50"))
    }

    @Test("events decoded with a shared string table are the events decoded without one")
    func sharedStrings() throws {
        let table = JSONStringTable()
        let binaryHeaders = [
            header("ce_specversion", "1.0"), header("ce_id", "evt-2"), header("ce_source", "/orders"),
            header("ce_type", "order.confirmed"), header("content-type", "application/json"),
        ]
        let data = Array(#"{"orderId":"ord-8","total":{"amount":"99.00","currency":"EUR"}}"#.utf8)
        for _ in 0..<3 {
            let value = Array(structured.utf8)
            let structuredEvent = try value.withUnsafeBytes {
                try EventDecoder().decode(value: $0, headers: [], strings: table)
            }
            #expect(structuredEvent == (try EventDecoder().decode(value: value)))
            let binaryEvent = try data.withUnsafeBytes {
                try EventDecoder().decode(value: $0, headers: binaryHeaders, strings: table)
            }
            #expect(binaryEvent == (try EventDecoder().decode(value: data, headers: binaryHeaders)))
            #expect(binaryEvent.data?["total"]?["currency"] == .string("EUR"))
        }
    }

    @Test(
        "each envelope failure has its own stable code",
        arguments: [
            ("{not json", EventError.Code.notJSON),
            ("", EventError.Code.notJSON),
            ("[1,2]", EventError.Code.badAttribute),
            (#"{"specversion":"1.0","source":"/s","type":"t"}"#, EventError.Code.missingAttribute),
            (#"{"specversion":"1.0","id":"","source":"/s","type":"t"}"#, EventError.Code.missingAttribute),
            (#"{"specversion":"0.3","id":"1","source":"/s","type":"t"}"#, EventError.Code.unsupportedSpecVersion),
            (#"{"specversion":"1.0","id":"1","source":"/s","type":"t","time":"yesterday"}"#, EventError.Code.badTime),
            (
                #"{"specversion":"1.0","id":"1","source":"/s","type":"t","time":"2026-02-30T00:00:00Z"}"#,
                EventError.Code.badTime
            ),
            (
                #"{"specversion":"1.0","id":"1","source":"/s","type":"t","time":"0000-01-01T00:00:00+00:01"}"#,
                EventError.Code.badTime
            ),
            (#"{"specversion":"1.0","id":7,"source":"/s","type":"t"}"#, EventError.Code.badAttribute),
            // PostgreSQL's text cannot hold U+0000: the ledger would refuse the batch for ever.
            (#"{"specversion":"1.0","id":"a\u0000b","source":"/s","type":"t"}"#, EventError.Code.badAttribute),
            (
                #"{"specversion":"1.0","id":"1","source":"/s","type":"t","datacontenttype":"text/xml","data":"<a/>"}"#,
                EventError.Code.badAttribute
            ),
        ]
    )
    func errorCodes(input: String, code: EventError.Code) {
        let error = #expect(throws: EventError.self) { try EventDecoder().decode(value: Array(input.utf8)) }
        #expect(error?.code == code)
    }

    @Test(
        "a structured event's members: data of any JSON type, the first of a name; extensions of strings, numbers and booleans"
    )
    func structuredMembers() throws {
        func decode(_ members: String) throws(EventError) -> CloudEvent {
            try EventDecoder().decode(
                value: Array(#"{"specversion":"1.0","id":"1","source":"/s","type":"t",\#(members)}"#.utf8)
            )
        }
        let text = try decode(#""data":"hello","region":"eu""#)
        #expect(text.data == .string("hello"))
        // `data` is the event's data, never an extension attribute, whatever its type.
        #expect(text.extensions == ["region": "eu"])
        let first = try decode(#""data":{"n":1},"data":{"n":2}"#)
        #expect(first.data?["n"] == .number("1"))
        // Null is an attribute left out, `data_base64` too; `data` of null is the JSON value null.
        let null = try decode(#""data":null,"subject":null,"data_base64":null"#)
        #expect(null.data == .null)
        #expect(null.subject == nil)
        #expect(null.extensions.isEmpty)
        let typed = try decode(#""sequence":42,"replayed":false,"tenant":"acme""#)
        #expect(typed.extensions == ["sequence": "42", "replayed": "false", "tenant": "acme"])
        // The last of a repeated attribute, as the tree the decoder once built gave it.
        #expect(try decode(#""subject":"a","subject":"b""#).subject == "b")
    }

    @Test(
        "a structured event's bad attribute is named, the first of several; a fault of JSON anywhere is not_json",
        arguments: [
            (#"[1,2]"#, EventError.Code.badAttribute, "a structured event must be a JSON object, not array"),
            (#""text""#, .badAttribute, "a structured event must be a JSON object, not string"),
            (#"[1,2"#, .notJSON, "the value is not JSON: expected ',' or ']' at byte 4"),
            (
                #"{"specversion":"1.0","id":7,"source":{"a":1},"type":"t"}"#, .badAttribute,
                "attribute 'id' must be a string, not number"
            ),
            (
                #"{"specversion":"1.0","id":"1","source":"/s","type":"t","time":true}"#, .badAttribute,
                "attribute 'time' must be a string, not boolean"
            ),
            (
                #"{"specversion":"1.0","id":7,"source":"/s","type":"t""#, .notJSON,
                "the value is not JSON: expected ',' or '}' at byte 52"
            ),
            (
                #"{"specversion":"1.0","id":7,"data":{"a":1,}}"#, .notJSON,
                "the value is not JSON: expected a member name at byte 42"
            ),
            (
                #"{"specversion":"1.0","id":"1","source":"/s","type":"t","tags":["a"]}"#, .badAttribute,
                "attribute 'tags' must be a string, not array"
            ),
            // A string too: it would otherwise pass as an extension, and the event reach rendering without its data.
            (
                #"{"specversion":"1.0","id":"1","source":"/s","type":"t","data_base64":"aGk="}"#, .badAttribute,
                "data_base64 is not supported: Herald reads JSON data"
            ),
        ]
    )
    func structuredFailures(input: String, code: EventError.Code, message: String) {
        let error = #expect(throws: EventError.self) { try EventDecoder().decode(value: Array(input.utf8)) }
        #expect(error?.code == code)
        #expect(error?.message == message)
    }

    @Test(
        "attribute names and times with escapes or non-ASCII bytes decode as plainly written ones do; the last time counts"
    )
    func escapedNamesAndTimes() throws {
        func decode(_ members: String) throws(EventError) -> CloudEvent {
            try EventDecoder().decode(
                value: Array(#"{"specversion":"1.0","id":"1","source":"/s","type":"t",\#(members)}"#.utf8)
            )
        }
        let plain = try decode(#""time":"2026-11-21T12:00:00Z","data":{"n":1},"région":"eu""#)
        #expect(plain.time == Timestamp(epochMilliseconds: 1_795_262_400_000))
        #expect(plain.extensions == ["région": "eu"])
        // Names read by their bytes in place must still be told apart when escaped.
        let escaped = try decode(
            #""\u0074ime":"2026-11-21T12:00:00\u005A","\u0064ata":{"n":1},"r\u00e9gion":"eu""#
        )
        #expect(escaped == plain)
        #expect(try decode(#""s\u0075bject":"x""#).subject == "x")
        // A name that only starts like a known one is an extension.
        #expect(try decode(#""times":"x","dat":"y""#).extensions == ["times": "x", "dat": "y"])
        // The last time of several is the one kept, a bad one as well as a good one.
        #expect(try decode(#""time":"yesterday","time":"2026-11-21T12:00:00Z""#).time == plain.time)
        let error = #expect(throws: EventError.self) {
            try decode(#""time":"2026-11-21T12:00:00Z","time":"yesterday""#)
        }
        #expect(error?.code == .badTime)
        #expect(error?.message == "time 'yesterday' is not an RFC 3339 date-time from year 0000 to 9999")
        // Null is the attribute left out, also after a time.
        #expect(try decode(#""time":"2026-11-21T12:00:00Z","time":null"#).time == plain.time)
    }

    @Test("an id of at most 512 bytes is accepted; a longer one is a bad attribute, named but not quoted")
    func longIDs() throws {
        func event(id: String) -> [UInt8] {
            Array(#"{"specversion":"1.0","id":"\#(id)","source":"/s","type":"t"}"#.utf8)
        }
        let longest = String(repeating: "é", count: 256)
        #expect(try EventDecoder().decode(value: event(id: longest)).id == longest)
        let error = #expect(throws: EventError.self) { try EventDecoder().decode(value: event(id: longest + "x")) }
        #expect(error?.code == .badAttribute)
        #expect(error?.message == "attribute 'id' is 513 bytes long; at most 512 are accepted")
    }

    @Test("an event over the size limit is rejected as oversize before it is parsed")
    func oversize() {
        var decoder = EventDecoder()
        decoder.maxSize = 100
        let error = #expect(throws: EventError.self) { try decoder.decode(value: Array(structured.utf8)) }
        #expect(error?.code == .oversize)
    }

    @Test(
        "binary mode with data that is not JSON is not_json; a missing ce_type is missing_attribute; ce_data is refused"
    )
    func binaryErrors() {
        let headers = [header("ce_specversion", "1.0"), header("ce_id", "1"), header("ce_source", "/s")]
        let missing = #expect(throws: EventError.self) {
            try EventDecoder().decode(value: Array("{}".utf8), headers: headers)
        }
        #expect(missing?.code == .missingAttribute)
        let notJSON = #expect(throws: EventError.self) {
            try EventDecoder().decode(value: Array("oops".utf8), headers: headers + [header("ce_type", "t")])
        }
        #expect(notJSON?.code == .notJSON)
        // `data` is the record's value, never a header: kept as an extension it would be written
        // beside the data, and a kept event read back would take it for its data.
        for name in ["ce_data", "ce_data_base64"] {
            let refused = #expect(throws: EventError.self) {
                try EventDecoder().decode(
                    value: Array(#"{"a":1}"#.utf8),
                    headers: headers + [header("ce_type", "t"), header(name, "x")]
                )
            }
            #expect(refused?.code == .badAttribute)
            #expect(
                refused?.message == "header '\(name)' names no attribute: in binary mode the data is the record's value"
            )
        }
    }
}

@Suite("JSON parser")
struct JSONParserTests {
    func parse(_ text: String) throws -> JSONValue { try JSONParser().parse(Array(text.utf8)) }

    @Test("escapes, unicode and surrogate pairs decode; object order is kept")
    func strings() throws {
        let value = try parse(#"{"b":"tab\tquote\" slash\/ é 😀","a":"\u00e9\ud83d\ude00"}"#)
        #expect(value["b"] == .string("tab\tquote\" slash/ é 😀"))
        #expect(value["a"] == .string("é😀"))
        if case .object(let object) = value { #expect(object.members.map(\.key) == ["b", "a"]) }
    }

    @Test(
        "malformed input is rejected with a position",
        arguments: [
            "{\"a\":1,}", "[1 2]", "\"unterminated", "01", "1.", "-", "{\"a\" 1}", "\"\\x\"", "\"\\ud800\"", "tru",
            "{} {}", "\"control\u{01}char\"",
        ]
    )
    func malformed(text: String) {
        #expect(throws: JSONParser.Failure.self) { try parse(text) }
    }

    @Test("member look-ups find the first member of that name, of any length")
    func memberLookup() throws {
        let value = try parse(#"{"id":1,"ib":2,"idx":3,"":4,"id":5,"é":6,"a\u0000":7}"#)
        #expect(value["id"] == .number("1"))
        #expect(value["ib"] == .number("2"))
        #expect(value["idx"] == .number("3"))
        #expect(value[""] == .number("4"))
        #expect(value["é"] == .number("6"))
        #expect(value["a\u{0}"] == .number("7"))
        #expect(value["i"] == nil)
        #expect(value["idxx"] == nil)
    }

    @Test("strings read eight bytes at a time stop at every kind of byte, at every position")
    func stringScan() throws {
        // Each special piece at each position of strings up to 24 bytes, as a member value (more
        // JSON after it) and as the whole document (the end of the input right after it).
        let pieces: [(json: String, text: String)] = [
            (#"\""#, "\""), (#"\\"#, "\\"), (#"\n"#, "\n"), ("é", "é"), ("😀", "😀"), (#"\u00e9"#, "é"),
        ]
        for length in 0...24 {
            let plain = String(repeating: "a", count: length)
            #expect(try parse("\"\(plain)\"") == .string(plain))
            #expect(try parse("{\"k\":\"\(plain)\",\"z\":1}")["k"] == .string(plain))
            for position in 0...length {
                let before = String(plain.prefix(position))
                let after = String(plain.dropFirst(position))
                for piece in pieces {
                    let expected = JSONValue.string(before + piece.text + after)
                    #expect(try parse("\"\(before)\(piece.json)\(after)\"") == expected)
                    #expect(try parse("[\"\(before)\(piece.json)\(after)\",true]") == .array([expected, .bool(true)]))
                }
                // A raw control character is refused where it stands, wherever that is.
                let failure = #expect(throws: JSONParser.Failure.self) {
                    try parse("\"\(before)\u{01}\(after)\"")
                }
                #expect(failure?.offset == 1 + position)
                // So is a byte that is not UTF-8.
                let invalid = [0x22] + Array(before.utf8) + [0xFF] + Array(after.utf8) + [0x22, 0x20, 0x20, 0x20, 0x20]
                #expect(throws: JSONParser.Failure.self) { try JSONParser().parse(invalid) }
            }
        }
        // An unterminated string ends at the end of the input, found byte by byte.
        #expect(throws: JSONParser.Failure.self) { try parse(#""abcdefghijklmnopqrstuvwxyz"#) }
    }

    @Test("a string table hands back the strings a parse without one makes, across many documents")
    func stringTable() throws {
        // Every length the table keeps (1-16) and either side of it, ASCII, escaped and not ASCII;
        // strings that share a slot replace each other, so later documents must still read right.
        var texts: [String] = ["", "a", "é", "a\\\"b", "tab\tx", "ünï", String(repeating: "z", count: 17)]
        // Same length and first bytes, different last ones: only the whole of the bytes tells them apart.
        // Enough of them that some share a slot of the table.
        for number in 0..<600 {
            texts += ["ab", "abcd", "abcdefgh", "abcdefghijkl"].map { $0 + String(number, radix: 36) }
        }
        for length in 1...18 {
            for variant in 0..<40 {
                let letters = Array("abcdefghijklmnopqrstuvwxyz0123456789-._".utf8)
                texts.append(
                    String(
                        decoding: (0..<length).map { letters[($0 * 7 + variant * 13 + length) % letters.count] },
                        as: UTF8.self
                    )
                )
            }
        }
        let table = JSONStringTable()
        for round in 0..<2 {
            for (index, text) in texts.enumerated() {
                let other = texts[(index * 31 + round) % texts.count]
                let document = JSONValue.object(
                    JSONObject([(text, .string(other)), ("k\(index % 3)", .array([.string(text), .string(other)]))])
                ).serialized
                let bytes = Array(document.utf8)
                let plain = try bytes.withUnsafeBytes { try JSONParser().parse($0) }
                let tabled = try bytes.withUnsafeBytes { try JSONParser().parse($0, strings: table) }
                #expect(tabled == plain, "\(document)")
                guard case .object(let object) = tabled else { continue }
                #expect(object.members.first?.key.utf8.elementsEqual(text.utf8) == true, "\(document)")
                #expect(object[text] == .string(other), "\(document)")
            }
        }
    }

    @Test("invalid UTF-8 and deep nesting are rejected, not crashed on")
    func hostile() {
        #expect(throws: JSONParser.Failure.self) { try JSONParser().parse([0x22, 0xFF, 0xFE, 0x22]) }
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let failure = #expect(throws: JSONParser.Failure.self) { try parse(deep) }
        #expect(failure?.reason.contains("nested") == true)
    }

    func parseKeepingRaw(_ text: String, _ path: [String]) throws -> (value: JSONValue, raw: String?) {
        let bytes = Array(text.utf8)
        let (value, range) = try bytes.withUnsafeBytes { try JSONParser().parse($0, keepingRawAt: path) }
        return (value, range.map { String(decoding: bytes[$0], as: UTF8.self) })
    }

    @Test("a member kept raw comes back exactly as written, with null in the tree; the rest is parsed")
    func keptRaw() throws {
        let text = #"{"a":{"body": {"x" : [1, "é\n", {"y":null}] } ,"n":2},"body":"top","z":true}"#
        let (value, raw) = try parseKeepingRaw(text, ["a", "body"])
        #expect(raw == #"{"x" : [1, "é\n", {"y":null}] }"#)
        #expect(value["a"]?["body"] == .null)
        #expect(value["a"]?["n"] == .number("2"))
        // The same name elsewhere in the document is not the path.
        #expect(value["body"] == .string("top"))
        #expect(value["z"] == .bool(true))
        #expect(try parseKeepingRaw(#"{"a":{"other":1}}"#, ["a", "body"]).raw == nil)
        #expect(try parseKeepingRaw(#"{"a":[{"body":1}]}"#, ["a", "body"]).raw == nil)
        #expect(try parseKeepingRaw(#"{"a":{"body":"s"}}"#, ["a", "body"]).raw == #""s""#)
        // Repeated names: only the first member, the one lookups find, is on the path.
        let repeated = try parseKeepingRaw(#"{"a":{"x":1},"a":{"body":2,"body":3}}"#, ["a", "body"])
        #expect(repeated.raw == nil)
        let twice = try parseKeepingRaw(#"{"a":{"body":[1],"body":[2]}}"#, ["a", "body"])
        #expect(twice.raw == "[1]")
        #expect(twice.value["a"]?["body"] == .null)
    }

    @Test(
        "a member kept raw is still checked: malformed or too deep fails as the whole parse would",
        arguments: [
            #"{"a":{"body":{"x":1,}}}"#, #"{"a":{"body":[1 2]}}"#, #"{"a":{"body":"\x"}}"#, #"{"a":{"body":01}}"#,
            #"{"a":{"body":{"k" 1}}}"#, #"{"a":{"body":{"x":1}"#, "{\"a\":{\"body\":\"control\u{01}\"}}",
        ]
    )
    func keptRawMalformed(text: String) {
        #expect(throws: JSONParser.Failure.self) { try parseKeepingRaw(text, ["a", "body"]) }
    }

    @Test("a string kept raw is accepted exactly when parsing it would be: escapes, control bytes, every UTF-8 form")
    func keptRawStrings() throws {
        // Hand-picked edges of RFC 3629, then 20,000 random strings over the bytes that matter.
        var cases: [[UInt8]] = [
            [0xC3, 0xA9], [0xC0, 0xAF], [0xC1, 0xBF], [0xE0, 0x80, 0xAF], [0xE0, 0xA0, 0x80], [0xED, 0xA0, 0x80],
            [0xED, 0x9F, 0xBF], [0xF0, 0x8F, 0xBF, 0xBF], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],
            [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xE2, 0x82], [0x80], [0xFF],
            Array(#"\ud83d\ude00"#.utf8), Array(#"\ud83d"#.utf8), Array(#"\ude00"#.utf8), Array(#"\u00e9\n\/"#.utf8),
            Array(#"\x"#.utf8), Array(#"\u12"#.utf8), [0x01], [0x7F],
        ]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        let alphabet: [UInt8] = [
            0x41, 0x5C, 0x75, 0x30, 0x64, 0x38, 0x22, 0x1F, 0x7F, 0x80, 0xBF, 0xC2, 0xDF, 0xE0, 0xED, 0xF0, 0xF4, 0xFF,
            0xA0, 0x9F,
        ]
        for _ in 0..<20_000 {
            func next() -> Int {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                return Int(state % 1_000_003)
            }
            let bytes = (0...(next() % 6)).map { _ in alphabet[next() % alphabet.count] }
            cases.append(bytes)
        }
        var accepted = 0
        for content in cases {
            let document = Array(#"{"a":""#.utf8) + content + Array(#""}"#.utf8)
            let parses = (try? JSONParser().parse(document)) != nil
            let skips = (try? document.withUnsafeBytes { try JSONParser().parse($0, keepingRawAt: ["a"]) }) != nil
            #expect(parses == skips, "\(content.map { String($0, radix: 16) })")
            if parses { accepted += 1 }
        }
        // Both outcomes were exercised.
        #expect(accepted > 100 && accepted < cases.count - 100)
    }

    @Test("nesting inside a member kept raw counts toward the depth limit")
    func keptRawDepth() throws {
        var parser = JSONParser()
        parser.maxDepth = 4
        func parse(_ text: String) throws {
            _ = try Array(text.utf8).withUnsafeBytes { try parser.parse($0, keepingRawAt: ["a"]) }
        }
        // The outer object is depth 1; "a"'s value opens depth 2.
        try parse(#"{"a":[[[1]]]}"#)
        let failure = #expect(throws: JSONParser.Failure.self) { try parse(#"{"a":[[[[1]]]]}"#) }
        #expect(failure?.reason.contains("nested") == true)
        // The same limit as a full parse.
        #expect(throws: Never.self) { _ = try parser.parse(Array(#"{"a":[[[1]]]}"#.utf8)) }
        #expect(throws: JSONParser.Failure.self) { _ = try parser.parse(Array(#"{"a":[[[[1]]]]}"#.utf8)) }
    }
}

@Suite("RFC 3339 timestamps")
struct TimestampTests {
    @Test("offsets, fractions and leap years parse; impossible dates do not")
    func parsing() {
        #expect(Timestamp(rfc3339: "1970-01-01T00:00:00Z")?.epochMilliseconds == 0)
        #expect(Timestamp(rfc3339: "2026-11-21T13:00:00+01:00") == Timestamp(rfc3339: "2026-11-21T12:00:00Z"))
        #expect(Timestamp(rfc3339: "2024-02-29T00:00:00.5Z")?.epochMilliseconds == 1_709_164_800_500)
        #expect(Timestamp(rfc3339: "1969-12-31T23:59:59.999Z")?.epochMilliseconds == -1)
        for bad in [
            "2023-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-21T24:00:00Z", "2026-11-21 12:00", "",
            "2026-11-21T12:00:00",
            // Written with four-digit years, but moved by their offsets past what RFC 3339 can write.
            "0000-01-01T00:00:00+00:01", "9999-12-31T23:59:59.999-00:01",
        ] {
            #expect(Timestamp(rfc3339: bad) == nil, "\(bad)")
        }
        // The ends of the range parse and print as they were written.
        for edge in ["0000-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z"] {
            #expect(Timestamp(rfc3339: edge)?.description == edge)
        }
        #expect(Timestamp(rfc3339: "0000-01-01T00:00:00Z") == Timestamp.representable.lowerBound)
        #expect(Timestamp(rfc3339: "9999-12-31T23:59:59.999Z") == Timestamp.representable.upperBound)
    }

    @Test("a moment outside four-digit years prints as the nearest end of them instead of trapping")
    func printingOutOfRange() {
        // A year below 0 made a negative digit, which trapped: the worker crashed on such an event.
        for milliseconds: Int64 in [Timestamp.representable.lowerBound.epochMilliseconds - 60_000, -1 << 60, .min] {
            #expect(Timestamp(epochMilliseconds: milliseconds).description == "0000-01-01T00:00:00.000Z")
        }
        for milliseconds: Int64 in [Timestamp.representable.upperBound.epochMilliseconds + 1, 1 << 60, .max] {
            #expect(Timestamp(epochMilliseconds: milliseconds).description == "9999-12-31T23:59:59.999Z")
        }
    }

    @Test("prints RFC 3339 in UTC")
    func printing() {
        #expect(Timestamp(epochMilliseconds: 1_709_164_800_500).description == "2024-02-29T00:00:00.500Z")
        #expect(Timestamp(epochMilliseconds: -1).description == "1969-12-31T23:59:59.999Z")
        #expect(Timestamp(epochMilliseconds: -62_135_596_800_000).description == "0001-01-01T00:00:00.000Z")
        #expect(Timestamp(epochMilliseconds: 1_798_761_599_099).description == "2026-12-31T23:59:59.099Z")
    }

    @Test("a printed time is what Foundation prints (1970-2100), and parses back to itself (years 0000-9999)")
    func printingAgreesWithFoundation() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        var random = SeededRandom(seed: 2026)
        let range = Timestamp.representable
        for step in 0..<2000 {
            // Half of them from 1970 to 2100, where Foundation's formatter is the reference.
            let modern = step % 2 == 0
            let lower = modern ? 0 : range.lowerBound.epochMilliseconds
            let upper = modern ? 4_102_444_800_000 : range.upperBound.epochMilliseconds
            let time = Timestamp(epochMilliseconds: lower + Int64(random.next() % UInt64(upper - lower)))
            #expect(Timestamp(rfc3339: time.description) == time, "\(time.epochMilliseconds)")
            if modern {
                let date = Date(timeIntervalSince1970: Double(time.epochMilliseconds) / 1000)
                #expect(time.description == formatter.string(from: date), "\(time.epochMilliseconds)")
            }
        }
    }
}

@Suite("JSON writer")
struct JSONWriterTests {
    @Test("compact, ordered, / unescaped, control characters escaped; parses back to the same value")
    func roundTrip() throws {
        let value = JSONValue.object(
            JSONObject([
                ("z", .string("a/b \"q\" \\ é 😀\n\u{01}")), ("a", .array([.number("1.50"), .bool(true), .null])),
            ])
        )
        #expect(value.serialized == #"{"z":"a/b \"q\" \\ é 😀\n\u0001","a":[1.50,true,null]}"#)
        #expect(try JSONParser().parse(value.serializedBytes) == value)
    }

    @Test("each byte that must be escaped is found wherever it is in a string, and only those")
    func escapingAtEveryPosition() throws {
        let special: [UInt8] = [0x00, 0x01, 0x0A, 0x1F, UInt8(ascii: "\""), UInt8(ascii: "\\")]
        // Neighbours of the special bytes, and bytes of multi-byte characters, which must not count.
        let plain: [UInt8] = [0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7F, 0x80, 0xA2, 0xDC, 0xFF]
        // Up to 40: the 16-byte chunks, the last one overlapping, and the shorter overlapping words.
        for length in 1...40 {
            for position in 0..<length {
                for byte in special {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    bytes[position] = byte
                    #expect(
                        bytes.withUnsafeBytes { JSONWriter.needsEscaping($0) },
                        "\(byte) at \(position) of \(length)"
                    )
                }
                for byte in plain {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    bytes[position] = byte
                    #expect(
                        !bytes.withUnsafeBytes { JSONWriter.needsEscaping($0) },
                        "\(byte) at \(position) of \(length)"
                    )
                }
            }
        }
        #expect(![UInt8]().withUnsafeBytes { JSONWriter.needsEscaping($0) })
        #expect(JSONValue.string("").serialized == "\"\"")
        let long = String(repeating: "é", count: 9) + "\u{1}" + String(repeating: "x", count: 9)
        #expect(JSONValue.string(long).serialized == "\"" + String(repeating: "é", count: 9) + "\\u0001xxxxxxxxx\"")
    }

    @Test("the stream writer: literal and computed keys, every escape, integers to both ends, growth")
    func streamWriter() throws {
        var writer = JSONStreamWriter(capacity: 1)
        writer.beginObject()
        writer.member("literal", "v")
        writer.member("x", integer: 0)  // a one-scalar literal is not stored as bytes
        let computed = "com\"puted"
        writer.member(computed, "\u{00}\u{08}\t\n\r\u{1F}\\\"/é😀")
        writer.key("numbers")
        writer.beginArray()
        for number in [Int64.min, -1, 0, 7, 10, 1_234_567_890, Int64.max] {
            writer.element()
            writer.integer(number)
        }
        writer.endArray()
        writer.key("empty")
        writer.beginObject()
        writer.endObject()
        writer.key("flags")
        writer.beginArray()
        writer.element()
        writer.bool(true)
        writer.element()
        writer.bool(false)
        writer.element()
        writer.null()
        writer.endArray()
        writer.key("raw")
        writer.raw(Array(#"{"a":[1]}"#.utf8))
        let long = String(repeating: "0123456789", count: 500)
        writer.member("long", long)
        writer.endObject()
        let expected =
            #"{"literal":"v","x":0,"com\"puted":"\u0000\u0008\t\n\r\u001f\\\"/é😀","#
            + #""numbers":[-9223372036854775808,-1,0,7,10,1234567890,9223372036854775807],"#
            + #""empty":{},"flags":[true,false,null],"raw":{"a":[1]},"long":""# + long + #""}"#
        #expect(String(decoding: writer.bytes, as: UTF8.self) == expected)
        #expect(writer.count == expected.utf8.count)
        #expect(writer.withBytes { Array($0) } == Array(expected.utf8))
        // What was written parses back, member for member.
        let parsed = try JSONParser().parse(writer.bytes)
        #expect(parsed["com\"puted"]?.stringValue == "\u{00}\u{08}\t\n\r\u{1F}\\\"/é😀")
        #expect(
            parsed["numbers"]
                == .array([
                    .number("-9223372036854775808"), .number("-1"), .number("0"), .number("7"), .number("10"),
                    .number("1234567890"), .number("9223372036854775807"),
                ])
        )
    }

    @Test("a time is written as its description is, without the string")
    func streamWriterTimestamps() {
        for milliseconds: Int64 in [0, -1, 1_795_257_000_123, 253_402_300_799_999, -62_135_596_800_000] {
            let time = Timestamp(epochMilliseconds: milliseconds)
            var writer = JSONStreamWriter(capacity: 4)
            writer.beginObject()
            writer.member("at", timestamp: time)
            writer.endObject()
            #expect(String(decoding: writer.bytes, as: UTF8.self) == #"{"at":""# + time.description + #""}"#)
            #expect(Timestamp(rfc3339: time.description) == time)
        }
    }

    @Test("raw literal runs are written as they are between values, and the buffer grows for them")
    func streamWriterRawLiterals() throws {
        var writer = JSONStreamWriter(capacity: 1)
        writer.raw(literal: #"{"id":"bench-"#)
        writer.integer(42)
        writer.raw(literal: #"","ids":["#)
        writer.string("a\"b")
        writer.raw(literal: #"],"at":"#)
        writer.timestamp(Timestamp(epochMilliseconds: 0))
        writer.raw(literal: "}")
        let text = String(decoding: writer.bytes, as: UTF8.self)
        #expect(text == #"{"id":"bench-42","ids":["a\"b"],"at":"1970-01-01T00:00:00.000Z"}"#)
        let parsed = try JSONParser().parse(writer.bytes)
        #expect(parsed["id"]?.stringValue == "bench-42" && parsed["ids"] == .array([.string("a\"b")]))
    }

    /// Writes `times` with one writer (a small buffer, so it grows on the way) and expects each as
    /// its ``Timestamp/description`` says.
    func expectWrittenAsDescribed(_ times: [Int64], sourceLocation: SourceLocation = #_sourceLocation) {
        var writer = JSONStreamWriter(capacity: 8)
        writer.beginArray()
        for milliseconds in times {
            writer.element()
            writer.timestamp(Timestamp(epochMilliseconds: milliseconds))
        }
        writer.endArray()
        let expected =
            "[" + times.map { "\"\(Timestamp(epochMilliseconds: $0).description)\"" }.joined(separator: ",") + "]"
        #expect(String(decoding: writer.bytes, as: UTF8.self) == expected, sourceLocation: sourceLocation)
    }

    @Test("one writer remembers the times it wrote last: repeated, alternating and new ones are each written right")
    func streamWriterRepeatedTimes() {
        var times: [Int64] = [
            .min, 0, 1_795_257_000_123, 0, 1_795_257_000_123, 1_795_257_000_124, 0, 0, -1, 1_795_257_000_123, .min,
            .min, .max, .max,
        ]
        // A batch's time and an expiry per kind, in turn, more than the writer's table holds: each
        // slot is taken by several times, one after another.
        for round in 0..<3 {
            for kind in 0..<40 { times += [1_795_257_000_000, 1_795_257_000_000 + Int64(kind * 3_600_000 + round)] }
        }
        expectWrittenAsDescribed(times)
    }

    @Test("one writer writes 5,000 seeded times over three days and far off, each as its description says")
    func streamWriterRecentDays() {
        var random = SeededRandom(seed: 1_795)
        let day: Int64 = 86_400_000
        let base: Int64 = 1_795_219_200_000  // 2026-11-19T00:00:00Z
        let times: [Int64] = (0..<5_000).map { index in
            switch index % 5 {
            // Three neighbouring days in turn, their first and last milliseconds included.
            case 0, 1, 2:
                return base + Int64(index % 3) * day
                    + [0, day - 1, Int64.random(in: 0..<day, using: &random)][index % 3]
            // Before 1970, around year 0 and 9999, and anywhere between.
            case 3: return [-1, -day, -62_167_219_200_001, 253_402_300_799_999][Int.random(in: 0..<4, using: &random)]
            default: return Int64.random(in: -62_167_219_200_000...253_402_300_799_999, using: &random)
            }
        }
        expectWrittenAsDescribed(times)
    }

    @Test("strings and keys of every length up to 40 are copied whole, whichever way their bytes are moved")
    func streamWriterLengths() throws {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMN")
        for length in 0...40 {
            let text = String(alphabet[..<length])
            let escaped = text.isEmpty ? "q\"" : String(text.dropLast()) + "\""
            var writer = JSONStreamWriter(capacity: 1)
            writer.beginObject()
            writer.member(text, text)
            writer.member("e", escaped)
            writer.key("pair")
            writer.string(text, text)
            writer.endObject()
            let value = JSONValue.object(
                JSONObject([(text, .string(text)), ("e", .string(escaped)), ("pair", .string(text + text))])
            )
            #expect(writer.bytes == value.serializedBytes, "length \(length)")
            #expect(try JSONParser().parse(writer.bytes) == value, "length \(length)")
        }
    }

    @Test("literal values and integers written as strings, with and without a suffix")
    func streamWriterLiteralsAndIntegerStrings() {
        var writer = JSONStreamWriter(capacity: 2)
        writer.beginObject()
        writer.member("method", literal: "POST")
        writer.member("one", literal: "x")  // a one-scalar literal is not stored as bytes
        let high = false
        writer.member("priority", literal: high ? "HIGH" : "NORMAL")
        writer.key("ttl")
        writer.string(integer: 3600, suffix: "s")
        writer.key("negative")
        writer.string(integer: -42, suffix: "ms")
        writer.key("expiration")
        writer.string(integer: 1_795_257_000)
        writer.key("extremes")
        writer.beginArray()
        writer.element()
        writer.string(integer: .min)
        writer.element()
        writer.string(integer: .max, suffix: "é")
        writer.endArray()
        writer.endObject()
        let expected =
            #"{"method":"POST","one":"x","priority":"NORMAL","ttl":"3600s","negative":"-42ms","#
            + #""expiration":"1795257000","extremes":["-9223372036854775808","9223372036854775807é"]}"#
        #expect(String(decoding: writer.bytes, as: UTF8.self) == expected)
    }

    @Test("a value nested deeper than the writer's 64 member levels keeps its commas")
    func deepValue() throws {
        var value = JSONValue.array([.number("1"), .number("2")])
        for depth in 0..<100 {
            value =
                depth.isMultiple(of: 2)
                ? .object(JSONObject([("a", value), ("b", .null)])) : .array([value, .bool(false)])
        }
        // Written the slow, obvious way: commas between all elements and members, none elsewhere.
        func reference(_ value: JSONValue) -> String {
            switch value {
            case .array(let elements): "[" + elements.map(reference).joined(separator: ",") + "]"
            case .object(let object):
                "{" + object.members.map { "\"\($0.key)\":" + reference($0.value) }.joined(separator: ",") + "}"
            case .number(let text): text
            case .bool(let flag): flag ? "true" : "false"
            case .null: "null"
            case .string(let text): "\"\(text)\""
            }
        }
        #expect(value.serialized == reference(value))
        var parser = JSONParser()
        parser.maxDepth = 200
        #expect(try parser.parse(value.serializedBytes) == value)
    }
}
