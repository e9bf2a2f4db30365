import HeraldEvents
import Testing

@testable import HeraldCatalog

@Suite("Field paths")
struct FieldPathTests {
    let event = CloudEvent(
        id: "evt-1",
        source: "/orders",
        type: "order.confirmed",
        time: Timestamp(rfc3339: "2026-11-26T12:30:00Z"),
        subject: "ord-7",
        data: try! JSONParser().parse(
            Array(
                (#"{"order":{"id":"ord-7","items":[{"sku":"a-1"},{"sku":"b-2"}],"note":null},"#
                    + #""userIds":["u-1","u-2"],"count":3}"#).utf8
            )
        )
    )

    func value(_ path: String) throws -> JSONValue? {
        try #require(FieldPath(path), "\(path) should parse").value(in: event)
    }

    @Test("each event attribute is read from the event, not from its data")
    func attributes() throws {
        #expect(try value("id") == .string("evt-1"))
        #expect(try value("source") == .string("/orders"))
        #expect(try value("type") == .string("order.confirmed"))
        #expect(try value("subject") == .string("ord-7"))
        #expect(try value("time") == .string("2026-11-26T12:30:00.000Z"))
        let bare = CloudEvent(id: "e", source: "/s", type: "t")
        #expect(FieldPath("subject")?.value(in: bare) == nil)
        #expect(FieldPath("time")?.value(in: bare) == nil)
        #expect(FieldPath("data.count")?.value(in: bare) == nil)
    }

    @Test("keys and indexes walk into data; a missing member, an index past the end, a null or the wrong type is nil")
    func dataPaths() throws {
        #expect(try value("data.order.id") == .string("ord-7"))
        #expect(try value("data.order.items[1].sku") == .string("b-2"))
        #expect(try value("data.userIds[0]") == .string("u-1"))
        #expect(try value("data.count") == .number("3"))
        #expect(try value("data.order.items")?.typeName == "array")
        #expect(try value("data.order.missing") == nil)
        #expect(try value("data.order.items[2].sku") == nil)
        #expect(try value("data.order.note") == nil)
        // A key into an array, an index into an object, a key into a string.
        #expect(try value("data.userIds.first") == nil)
        #expect(try value("data.order[0]") == nil)
        #expect(try value("data.order.id.length") == nil)
    }

    @Test("malformed paths and paths below an attribute other than data are refused")
    func malformed() {
        let malformed = [
            "", "order.id", "data..id", "data.", ".data", "data[x]", "data[-1]", "data[+1]", "data[]", "data[1",
            "data.[0]", "[0]", "data[0]x", "data.items[0]sku", "data.items[0]..sku", "data.items[0].", "id.value",
            "time[0]",
        ]
        for text in malformed {
            #expect(FieldPath(text) == nil, "\(text)")
        }
        #expect(FieldPath("data")?.segments.isEmpty == true)
        #expect(FieldPath("data.items[3]")?.segments == [.key("items"), .index(3)])
        // A key after an index, as docs/catalog.md shows: it was refused as malformed.
        #expect(FieldPath("data.items[0].sku")?.segments == [.key("items"), .index(0), .key("sku")])
        #expect(FieldPath("data.matrix[1][2].x")?.segments == [.key("matrix"), .index(1), .index(2), .key("x")])
        #expect(FieldPath("data[0]")?.segments == [.index(0)])
    }
}
