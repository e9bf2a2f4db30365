import Testing

@testable import HeraldCatalog

@Suite("Text templates")
struct TextTemplateTests {
    let values = [
        "id": "ord-7", "long": "an-order-id-longer-than-fifteen-bytes", "city": "Kraków", "empty": "",
        "slash": "a/b",
    ]

    func render(_ text: String, encode: @escaping (String) -> String = { $0 }) throws -> String? {
        try #require(TextTemplate(text), "\(text) should parse").render({ values[$0] }, encode: encode)
    }

    @Test("pieces are joined in order: literals, values short and long, non-ASCII, and a value alone")
    func joined() throws {
        #expect(try render("order-{id}") == "order-ord-7")
        #expect(try render("/orders/{id}/tracking") == "/orders/ord-7/tracking")
        #expect(try render("{long}") == "an-order-id-longer-than-fifteen-bytes")
        #expect(try render("{id}{long}-{city}!") == "ord-7an-order-id-longer-than-fifteen-bytes-Kraków!")
        #expect(try render("/{city}/{long}/{id}") == "/Kraków/an-order-id-longer-than-fifteen-bytes/ord-7")
        #expect(
            try render("just text, long enough to need its own storage")
                == "just text, long enough to need its own storage"
        )
    }

    @Test("a missing or empty value renders nothing; values are encoded, literals not")
    func missingAndEncoded() throws {
        #expect(try render("/orders/{absent}/tracking") == nil)
        #expect(try render("{long}/{empty}") == nil)
        #expect(try render("/{slash}/x", encode: DeepLinkPattern.encodeSegment) == "/a%2Fb/x")
        #expect(try render("/{city}", encode: DeepLinkPattern.encodeSegment) == "/Krak%C3%B3w")
    }
}
