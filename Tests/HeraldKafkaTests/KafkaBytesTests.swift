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
        let texts = (0..<100).map { "value \($0) " + String(repeating: "y", count: 200) }
        // Only the parts hold their buffers from here on.
        let parts = texts.map { KafkaBytes(Self.buffer($0), 0..<$0.utf8.count) }
        // Memory of the same sizes, written over: a buffer freed while a part still used it would
        // be handed out again here and its bytes overwritten.
        let overwriting = (0..<400).map { _ in Self.buffer(String(repeating: "z", count: 210)) }
        let overwritten = zip(parts, texts).filter { $0.string != $1 }.count
        #expect(overwritten == 0, "\(overwritten) of \(parts.count) parts no longer hold their bytes")
        #expect(overwriting.allSatisfy { KafkaBytes($0, 0..<210).allSatisfy { $0 == UInt8(ascii: "z") } })
    }
}
