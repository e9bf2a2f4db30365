import HeraldEvents
import HeraldKafka
import Testing

@testable import HeraldWorker

/// The worker writes the values of a build's records into shared buffers, handed over to the
/// records without a copy: each record must still get exactly its own bytes, in order, whatever was
/// dropped or failed between them and whatever was written after them.
@Suite("Record writer")
struct RecordWriterTests {
    struct Refused: Error {}

    @Test("each record gets its own value across several shared arrays; dropped and failed writes leave nothing")
    func valuesAcrossArenas() throws {
        var writer = RecordWriter()
        var expected: [(topic: String, value: String?)] = []
        // Enough records of a few hundred bytes each to fill several arrays.
        for index in 0..<1000 {
            switch index % 7 {
            case 3:
                // A write that gives up part-way (a device no provider accepts) adds no record.
                let written: Int? = writer.append(topic: "out", key: nil) { json in
                    json.beginObject()
                    json.member("dropped", "\(index)")
                    return nil
                }
                #expect(written == nil)
            case 5:
                // A write that throws deep inside an object (a payload over its limit) adds none
                // either, and the next value starts cleanly.
                #expect(throws: Refused.self) {
                    try writer.append(topic: "out", key: nil) { json throws(Refused) -> Int? in
                        json.beginObject()
                        json.key("nested")
                        json.beginArray()
                        json.element()
                        json.string("half")
                        throw Refused()
                    }
                }
            case 6:
                // A record made elsewhere keeps its place in the order.
                writer.append(KafkaProducerRecord(topic: "dlq", value: KafkaBytes("dead \(index)")))
                expected.append(("dlq", "dead \(index)"))
            default:
                // Every hundredth value is larger than a buffer's room past ``arenaSize``: the
                // writer grows its buffer in the middle of it, and hands over the larger one.
                let text = String(repeating: "x", count: index % 100 == 0 ? 3 * RecordWriter.arenaSize : 100 + index)
                let written: Int? = writer.append(topic: "out", key: KafkaBytes("user-\(index)")) { json in
                    json.beginObject()
                    json.member("index", integer: Int64(index))
                    json.member("text", text)
                    json.endObject()
                    return index
                }
                #expect(written == index)
                expected.append(("out", #"{"index":\#(index),"text":"\#(text)"}"#))
            }
        }
        let records = writer.finish()
        #expect(records.map(\.topic) == expected.map(\.topic))
        #expect(records.map { $0.value?.string } == expected.map(\.value))
        // The bytes written exceed one shared array several times over.
        #expect(records.reduce(0) { $0 + ($1.value?.count ?? 0) } > 4 * RecordWriter.arenaSize)
        #expect(records.filter { $0.topic == "out" }.allSatisfy { $0.key != nil })
    }

    @Test("a writer with nothing written finishes with no records")
    func empty() {
        let writer = RecordWriter()
        #expect(writer.finish().isEmpty)
    }
}
