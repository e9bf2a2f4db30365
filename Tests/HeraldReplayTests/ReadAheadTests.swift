import HeraldKafka
import Synchronization
import Testing

@testable import HeraldReplay

/// Reading ahead of the batch being decided: in order, bounded, and stopping on either side's error.
@Suite("Replay reads ahead")
struct ReadAheadTests {
    struct Failure: Error, Equatable {
        var side: String
    }

    final class Count: Sendable {
        let value = Mutex(0)
    }

    /// Chunks of one record each, numbered by the record's offset; counts what it has handed out.
    struct CountingSource: RecordSource {
        let chunks: Int
        var failAt: Int?
        let count = Count()
        var name: String { "counting" }

        func read(_ body: ([ReplayRecord]) async throws -> Void) async throws {
            for number in 0..<chunks {
                if number == failAt { throw Failure(side: "source") }
                let message = KafkaMessage(topic: "t", partition: 0, offset: Int64(number), key: nil, value: nil)
                count.value.withLock { $0 += 1 }
                try await body([ReplayRecord(message: message, event: nil, time: nil)])
            }
        }
    }

    @Test("every chunk arrives in order, and the reader is never more than its window ahead")
    func inOrderAndBounded() async throws {
        let source = CountingSource(chunks: 50)
        var seen: [Int64] = []
        var furthestAhead = 0
        try await Replayer.readAhead(source) { chunk in
            seen.append(chunk[0].message.offset)
            // Give the reader time to run as far ahead as it may.
            try await Task.sleep(for: .milliseconds(2))
            furthestAhead = max(furthestAhead, source.count.value.withLock { $0 } - seen.count)
        }
        #expect(seen == (0..<50).map(Int64.init))
        #expect(furthestAhead > 0, "the reader never ran ahead")
        #expect(furthestAhead <= Replayer.chunksAhead + 1)
    }

    @Test("an error while processing a chunk stops the reader and is what the caller sees")
    func processingFails() async throws {
        let source = CountingSource(chunks: 1_000)
        var taken = 0
        let error = await #expect(throws: Failure.self) {
            try await Replayer.readAhead(source) { _ in
                taken += 1
                if taken == 3 { throw Failure(side: "body") }
            }
        }
        #expect(error == Failure(side: "body"))
        #expect(source.count.value.withLock { $0 } <= 3 + Replayer.chunksAhead + 1)
    }

    @Test("an error reading the source reaches the caller after the chunks before it")
    func readingFails() async throws {
        var source = CountingSource(chunks: 100)
        source.failAt = 5
        var taken = 0
        let error = await #expect(throws: Failure.self) {
            try await Replayer.readAhead(source) { _ in taken += 1 }
        }
        #expect(error == Failure(side: "source"))
        #expect(taken == 5)
    }
}
