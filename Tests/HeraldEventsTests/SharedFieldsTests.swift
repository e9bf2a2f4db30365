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
        alone.fields.append(3)
        #expect(ObjectIdentifier(alone.box) == box && alone.fields == [1, 2, 3])
        var shared = alone
        shared.fields.append(4)
        #expect(ObjectIdentifier(shared.box) != box && alone.fields == [1, 2, 3] && shared.fields == [1, 2, 3, 4])
    }

    @Test("a change through a field is made in place: appending to an unshared array field copies nothing")
    func changesInPlace() {
        var value = SharedFields([Int]())
        value.fields.reserveCapacity(8)
        value.fields.append(1)
        let buffer = value.fields.withUnsafeBufferPointer { $0.baseAddress }
        value.fields.append(2)
        // Got, appended to and set back, the array would have been copied to a new buffer.
        #expect(value.fields.withUnsafeBufferPointer { $0.baseAddress } == buffer)
        #expect(value.fields == [1, 2])

        var event = CloudEvent(id: "e", source: "/s", type: "t")
        event.extensions.reserveCapacity(4)
        event.extensions["a"] = "1"
        event.extensions["b"] = "2"
        #expect(event.extensions == ["a": "1", "b": "2"])
    }
}
