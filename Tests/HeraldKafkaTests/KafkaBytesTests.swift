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

/// The worker's outbound buffers go back to a pool when their last record is gone, and come out of
/// it again: a buffer given back too early, or handed out twice, would put one record's bytes under
/// another's.
@Suite("Kafka buffer pool")
struct KafkaBufferPoolTests {
    @Test("a buffer given back is handed out again; past the limit buffers are freed, not kept")
    func takeAndGive() {
        let pool = KafkaBufferPool(bufferSize: 64, limit: 2)
        let first = pool.take()
        let second = pool.take()
        let third = pool.take()
        #expect(Set([first, second, third]).count == 3)
        #expect(pool.count == 0)
        pool.give(first)
        pool.give(second)
        pool.give(third)
        #expect(pool.count == 2, "the limit is 2")
        // Last given, first taken: the buffers most recently in use, and so most likely cached.
        #expect(pool.take() == second)
        #expect(pool.take() == first)
        #expect(pool.count == 0)
    }

    @Test("a handed-over buffer goes back to its pool when the last part using it is gone, and not before")
    func partsHoldTheBuffer() {
        let pool = KafkaBufferPool(bufferSize: 32, limit: 8)
        let base = pool.take()
        let text = Array("0123456789abcdefghij".utf8)
        text.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        var part: KafkaBytes? = KafkaBytes(
            KafkaByteBuffer(adopting: base, count: text.count, capacity: 32, returningTo: pool),
            10..<20
        )
        #expect(pool.count == 0, "the part still uses the buffer")
        #expect(part?.string == "abcdefghij")
        part = nil
        #expect(pool.count == 1)
        #expect(pool.take() == base)
    }

    @Test("a buffer that is not of the pool's size (a writer's output that grew) is freed, not given back")
    func otherSizesFreed() {
        let pool = KafkaBufferPool(bufferSize: 32, limit: 8)
        let grown = UnsafeMutableRawPointer.allocate(byteCount: 48, alignment: 1)
        var buffer: KafkaByteBuffer? = KafkaByteBuffer(adopting: grown, count: 40, capacity: 48, returningTo: pool)
        #expect(buffer?.count == 40)
        buffer = nil
        #expect(pool.count == 0)
    }
}
