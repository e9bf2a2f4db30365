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
