import HeraldKafka
import HeraldTestSupport
import Logging
import Testing

@Suite("The benchmarks' librdkafka passthrough", .serialized, .timeLimit(.minutes(2)))
struct BenchmarkBaselineTests {
    @Test(
        "with a shape it writes that many messages per message read, with the shape's key, value and headers, and completes",
        arguments: [1500, 500]
    )
    func shapedPassthrough(outputsPerThousand: Int) async throws {
        let env = try KafkaTestEnvironment(topics: ["shape.in": 2, "shape.out": 2])
        let bootstrap = env.cluster.bootstrapServers
        let count = 1000
        let shape = RDKafkaBenchmarkBaseline.Shape(
            outputsPerThousand: outputsPerThousand,
            key: Array("u-1".utf8),
            value: Array(repeating: UInt8(ascii: "v"), count: 300),
            headers: [("content-type", Array("application/json".utf8))]
        )
        let done = ProgressCounter()
        let feeding = Task {
            await DedicatedThread.run(name: "test.feeder") {
                Result { () throws(KafkaError) in
                    try RDKafkaBenchmarkBaseline.feed(
                        bootstrapServers: bootstrap,
                        topic: "shape.in",
                        partitions: 2,
                        count: count,
                        payload: Array(#"{"id":"000000000000"}"#.utf8),
                        idOffset: 7,
                        window: count,
                        consumed: { done.value }
                    )
                }
            }
        }
        let passing = await DedicatedThread.run(name: "test.passthrough") {
            Result { () throws(KafkaError) in
                try RDKafkaBenchmarkBaseline.passthrough(
                    bootstrapServers: bootstrap,
                    group: "shape-\(outputsPerThousand)",
                    input: "shape.in",
                    output: "shape.out",
                    partitions: 2,
                    count: count,
                    batchSize: 100,
                    fetchMaxWait: .milliseconds(10),
                    shape: shape,
                    done: done
                )
            }
        }
        _ = try passing.get()
        try await feeding.value.get()
        #expect(done.value == count)

        var written: [KafkaMessage] = []
        try await TopicReader(bootstrapServers: [bootstrap], topic: "shape.out", clientID: "shape-test").read(
            logger: env.logger
        ) { written += $0 }
        // Before it reads, the passthrough writes one message to warm its producer up (to
        // partition 0; the reader may hand partition 1 out first).
        #expect(written.filter { $0.value?.string == "warm-up" }.count == 1)
        written.removeAll { $0.value?.string == "warm-up" }
        #expect(written.count == count * outputsPerThousand / 1000)
        let odd = written.filter {
            $0.key?.string != "u-1" || $0.value?.count != 300
                || $0.header("content-type")?.string != "application/json"
        }
        #expect(
            odd.isEmpty,
            "\(odd.prefix(3).map { ($0.partition, $0.offset, $0.value?.string ?? "nil", $0.headers) })"
        )
    }
}
