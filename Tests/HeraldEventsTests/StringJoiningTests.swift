import Testing

@testable import HeraldEvents

@Suite("Joining strings in one allocation")
struct StringJoiningTests {
    @Test("parts are joined in order, small and large, ASCII and not")
    func joined() {
        #expect(String(joining: "https://", "getdrop.no", "/orders/ord-7") == "https://getdrop.no/orders/ord-7")
        #expect(String(joining: "drop", ":/") == "drop:/")
        #expect(String(joining: "", "", "") == "")
        let parts = [
            "Bestilling ", "ord-0", " er sendt med ", "Posten", ". Forventet levert tirsdag 24. november 2026.",
        ]
        let size = parts.reduce(0) { $0 + $1.utf8.count }
        let joined = String(byteCount: size) { append in parts.forEach(append) }
        #expect(joined == parts.joined())
        #expect(String(joining: "ünï", "😀", "é") == "ünï😀é")
    }

    @Test("parts past the byte count are cut short, never written past it")
    func cutShort() {
        #expect(
            String(byteCount: 5) { append in
                append("abc")
                append("defg")
            } == "abcde"
        )
        #expect(String(byteCount: 0) { append in append("abc") } == "")
    }
}

@Suite("Reading a string's UTF-8 in place")
struct StringUTF8Tests {
    @Test("utf8Contains finds a byte anywhere, in small, large and empty strings")
    func contains() {
        #expect(!"".utf8Contains(0))
        #expect("a\u{0}b".utf8Contains(0))
        #expect(!"evt-123".utf8Contains(0))
        let long = String(repeating: "x", count: 100)
        #expect(!long.utf8Contains(UInt8(ascii: "_")))
        #expect((long + "_").utf8Contains(UInt8(ascii: "_")))
        #expect("nb_NO".utf8Contains(UInt8(ascii: "_")))
        #expect("é".utf8Contains(0xA9))
    }

    @Test("hasUTF8 is byte-for-byte equality with a literal")
    func hasUTF8() {
        #expect("deepLink".hasUTF8("deepLink"))
        #expect(!"deepLinK".hasUTF8("deepLink"))
        #expect(!"deepLinks".hasUTF8("deepLink"))
        #expect(!"aps ".hasUTF8("aps"))
        #expect("herald_notification_id".hasUTF8("herald_notification_id"))
        #expect(!"herald_notification_ix".hasUTF8("herald_notification_id"))
        // Canonically equivalent (`==`), but not the same bytes: a different member name in JSON.
        #expect("\u{212A}ey" == "Key")
        #expect(!"\u{212A}ey".hasUTF8("Key"))
    }

    @Test("hasUTF8Prefix is a byte-for-byte prefix of a literal, in small and large strings")
    func hasUTF8Prefix() {
        #expect("google.sent_time".hasUTF8Prefix("google."))
        #expect("google.".hasUTF8Prefix("google."))
        #expect(!"google".hasUTF8Prefix("google."))
        #expect(!"Google.x".hasUTF8Prefix("google."))
        #expect("gcm.n.e".hasUTF8Prefix("gcm."))
        #expect(!"gcm_n".hasUTF8Prefix("gcm."))
        let long = "gcm." + String(repeating: "x", count: 40)
        #expect(long.hasUTF8Prefix("gcm."))
        #expect(!("x" + long).hasUTF8Prefix("gcm."))
        // `hasPrefix` compares canonical equivalents; member names compare by their bytes.
        #expect("\u{212A}ey.x".hasPrefix("Key."))
        #expect(!"\u{212A}ey.x".hasUTF8Prefix("Key."))
    }
}
