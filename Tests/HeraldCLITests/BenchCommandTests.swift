import Foundation
import Testing

@Suite("herald bench pipeline", .timeLimit(.minutes(2)))
struct BenchCommandTests {
    @Test("the embedded broker runs in a child process whose peak RSS is reported apart, and it is gone afterwards")
    func brokerProcess() throws {
        let herald = try heraldExecutable().path
        let result = try run(
            herald,
            [
                "bench", "pipeline", "--events", "2000", "--users", "200", "--partitions", "3", "--batch-size", "200",
                "--window", "1000", "--raw-messages", "1000", "--catalog", "\(repositoryRoot)/catalog",
            ]
        )
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("2000 events"), "\(result.output)")
        #expect(result.output.contains("peak RSS (worker and feeder)"), "\(result.output)")
        let broker = result.output.split(separator: "\n").first {
            $0.contains("peak RSS of the embedded broker's process")
        }
        let megabytes = broker?.split(separator: " ").dropLast().last.flatMap { Double($0) }
        #expect((megabytes ?? 0) > 0, "\(result.output)")
        #expect(result.output.contains("ratio:"), "the passthrough ran on the broker process: \(result.output)")
        // The executable's allocator, as the package's traits built it (jemalloc by default on Linux).
        #if Jemalloc && os(Linux)
        #expect(result.output.contains("allocator: jemalloc 5."), "\(result.output)")
        #elseif os(Linux)
        #expect(result.output.contains("allocator: glibc"), "\(result.output)")
        #else
        #expect(result.output.contains("allocator: the C library's malloc"), "\(result.output)")
        #endif
        // The broker the bench started is stopped with it.
        let leftover = try run("/usr/bin/pgrep", ["-f", "broker --log-level warning --topic bench.events:3"])
        #expect(leftover.output.isEmpty, "a broker process is still running: \(leftover.output)")
    }
}

@Suite("herald bench decisions", .timeLimit(.minutes(2)))
struct DecisionBenchCommandTests {
    @Test(
        "with random event ids every pair is decided once: the ids are distinct, so none is taken for a redelivery",
        arguments: [false, true]
    )
    func decisions(randomEventIDs: Bool) throws {
        let result = try run(
            try heraldExecutable().path,
            ["bench", "decisions", "--devices", "2000", "--decisions", "3000", "--batch-size", "250", "--rounds", "1"]
                + (randomEventIDs ? ["--random-event-ids"] : [])
        )
        #expect(result.status == 0, "\(result.error)")
        #expect(
            result.output.contains(randomEventIDs ? "random event ids" : "sequential event ids"),
            "\(result.output)"
        )
        let reasons = result.output.split(separator: "\n").first { $0.contains("decisions by reason:") }
        let counts = (reasons?.split(separator: ":").last ?? "").split(separator: ",").map {
            (
                $0.split(separator: " ").first.map(String.init) ?? "",
                $0.split(separator: " ").last.flatMap { Int($0) } ?? 0
            )
        }
        #expect(counts.reduce(0) { $0 + $1.1 } == 3000, "\(result.output)")
        #expect(!counts.contains { $0.0 == "duplicate" }, "\(result.output)")
        #expect(counts.contains { $0.0 == "sent" && $0.1 > 2000 }, "\(result.output)")
    }
}
