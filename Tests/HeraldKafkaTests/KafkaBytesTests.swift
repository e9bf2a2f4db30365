import HeraldKafka
import Testing

/// A record's bytes live in an array or in a buffer a writer handed over (the worker's outbound
/// values): both must read, compare and hash alike, so that no reader can tell them apart.
@Suite("Kafka bytes")
struct KafkaBytesTests {
    /// A buffer holding `text`, allocated as a writer allocates its output.
    static func buffer(_ text: String) -> KafkaByteBuffer {
        let bytes = Array(text.utf8)
        let base = UnsafeMutableRawPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
        bytes.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        return KafkaByteBuffer(adopting: base, count: bytes.count)
    }

    @Test("parts of a handed-over buffer read, compare and hash as the same bytes in an array")
    func bufferAndArrayAlike() {
        let buffer = Self.buffer(#"{"a":1}{"bb":22}"#)
        let first = KafkaBytes(buffer, 0..<7)
        let second = KafkaBytes(buffer, 7..<16)
        #expect(first.string == #"{"a":1}"#)
        #expect(second.string == #"{"bb":22}"#)
        #expect(Array(second) == Array(#"{"bb":22}"#.utf8))
        #expect(second[0] == UInt8(ascii: "{") && second[8] == UInt8(ascii: "}"))
        #expect(first == KafkaBytes(#"{"a":1}"#))
        #expect(first != second)
        #expect(Set([first, KafkaBytes(#"{"a":1}"#), second]).count == 2)
        #expect(KafkaBytes(buffer, 3..<3).isEmpty)
        let contiguous = second.withContiguousStorageIfAvailable { Array($0) }
        #expect(contiguous == Array(#"{"bb":22}"#.utf8))
    }

    @Test("a part of a buffer keeps the buffer's bytes alive after the buffer itself is let go")
    func partsOutliveTheirBuffer() {
        var parts: [KafkaBytes] = []
        for index in 0..<100 {
            let text = "value \(index) " + String(repeating: "y", count: index)
            parts.append(KafkaBytes(Self.buffer(text), 0..<text.utf8.count))
        }
        #expect(
            parts.enumerated().allSatisfy {
                $0.element.string == "value \($0.offset) " + String(repeating: "y", count: $0.offset)
            }
        )
    }
}
