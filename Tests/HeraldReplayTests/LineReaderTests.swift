import HeraldTestSupport
import Testing

@testable import HeraldReplay

@Suite("Reading a log's lines")
struct LineReaderTests {
    let scratch = ScratchDirectory()

    /// Every line `reader` hands out, as text.
    func lines(_ reader: LineReader) throws -> [String] {
        var lines: [String] = []
        while let line = try reader.nextLine({ String(decoding: $0, as: UTF8.self) }) { lines.append(line) }
        return lines
    }

    @Test("lines longer than the buffer are read whole; CRLF and a last line without a break are lines")
    func lines() throws {
        let long = String(repeating: "x", count: 300)
        let path = try scratch.file("log.jsonl", "a\r\n\(long)\n\nb")
        let reader = try LineReader(path: path, bufferSize: 64, maximumLineBytes: 1000)
        #expect(try lines(reader) == ["a", long, "", "b"])
        #expect(reader.lineNumber == 4)
    }

    @Test("a line over the limit is handed out cut to one byte more than it, and the next line follows")
    func overlongLines() throws {
        // Not a log at all: a megabyte without a line break, then lines again; and one at the end.
        let path = try scratch.file(
            "log.jsonl",
            "first\n" + String(repeating: "x", count: 1_000_000) + "\nsecond\n" + String(repeating: "y", count: 5000)
        )
        let reader = try LineReader(path: path, bufferSize: 64, maximumLineBytes: 1000)
        let read = try lines(reader)
        #expect(read.count == 4)
        #expect(read[0] == "first" && read[2] == "second")
        #expect(read[1] == String(repeating: "x", count: 1001))
        #expect(read[3] == String(repeating: "y", count: 1001))
        #expect(reader.lineNumber == 4)
    }
}
