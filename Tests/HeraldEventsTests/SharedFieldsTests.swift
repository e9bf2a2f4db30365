import Testing

@testable import HeraldEvents

@Suite("Shared fields (copy on write)")
struct SharedFieldsTests {
    @Test("a copy shares the fields until one side writes; values compare and hash by their fields")
    func copyOnWrite() {
        var original = CloudEvent(id: "e-1", source: "/orders", type: "order.confirmed", extensions: ["a": "1"])
        let copy = original
        original.extensions["b"] = "2"
        original.subject = "ord-7"
        #expect(copy.extensions == ["a": "1"] && copy.subject == nil, "the copy kept its fields")
        #expect(original.extensions == ["a": "1", "b": "2"] && original.subject == "ord-7")
        #expect(copy != original)

        // Equal fields in separate boxes: equal, with equal hashes.
        let twin = CloudEvent(id: "e-1", source: "/orders", type: "order.confirmed", extensions: ["a": "1"])
        #expect(twin == copy)
        #expect(Set([twin, copy]).count == 1)

        // A value whose box is not shared is changed in place, not copied.
        var alone = SharedFields([1, 2])
        let box = ObjectIdentifier(alone.box)
        alone.modify { $0.append(3) }
        #expect(ObjectIdentifier(alone.box) == box && alone.fields == [1, 2, 3])
        var shared = alone
        shared.modify { $0.append(4) }
        #expect(ObjectIdentifier(shared.box) != box && alone.fields == [1, 2, 3] && shared.fields == [1, 2, 3, 4])
    }
}
