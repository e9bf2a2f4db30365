import HeraldEvents
import Testing

/// A writer hands its output over, memory and all, and goes on in a buffer it is given (the
/// worker's outbound records, whose buffers come back from a pool): what was handed over must stay
/// as written, and what follows must start a new document at the start of the new buffer.
@Suite("JSON writer: handing the output over")
struct JSONStreamWriterHandOverTests {
    @Test(
        "the output handed over keeps its bytes and says how large its buffer is; writing goes on in the buffer given"
    )
    func handOverIntoGivenBuffer() {
        var writer = JSONStreamWriter(capacity: 16)
        writer.beginObject()
        writer.member("key", "a value longer than the sixteen bytes the writer began with")
        writer.endObject()
        let given = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 1)
        let first = writer.handOver(startingOverIn: given, capacity: 64)
        defer { first.base.deallocate() }
        let firstText = Self.text(first.base, first.count)
        #expect(firstText == #"{"key":"a value longer than the sixteen bytes the writer began with"}"#)
        #expect(first.capacity >= first.count && first.capacity > 16, "the buffer grew past its first 16 bytes")
        writer.beginObject()
        writer.member("n", integer: 7)
        writer.endObject()
        let second = writer.handOver(startingOverIn: .allocate(byteCount: 16, alignment: 1), capacity: 16)
        defer { second.base.deallocate() }
        #expect(second.base == given, "the second document was written in the buffer given")
        #expect(second.capacity == 64)
        #expect(Self.text(second.base, second.count) == #"{"n":7}"#)
        #expect(Self.text(first.base, first.count) == firstText, "the first output is untouched by the second")
    }

    static func text(_ base: UnsafeMutableRawPointer, _ count: Int) -> String {
        String(decoding: UnsafeRawBufferPointer(start: base, count: count), as: UTF8.self)
    }
}
