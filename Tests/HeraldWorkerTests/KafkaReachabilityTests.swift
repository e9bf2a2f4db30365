import HeraldKafka
import HeraldStore
import HeraldTestSupport
import HeraldWorker
import Synchronization
import Testing

@testable import HeraldApp

/// A process whose consumers reach no Kafka broker says so at `warning`, and when one answers again:
/// librdkafka's own lines about it are at `info`.
@Suite("Kafka unreachable")
struct KafkaReachabilityTests {
    @Test("broker connections are read from librdkafka's statistics: internal and logical brokers are not counted")
    func connections() {
        let statistics = """
            {"name": "c#consumer-1", "type": "consumer", "brokers": {
              "127.0.0.1:9092/bootstrap": {"source": "configured", "state": "UP", "nodeid": -1},
              "127.0.0.1:9092/1": {"source": "learned", "state": "DOWN", "nodeid": 1},
              "127.0.0.1:9093/2": {"source": "learned", "state": "CONNECT", "nodeid": 2},
              "GroupCoordinator": {"source": "logical", "state": "UP", "nodeid": 1},
              ":0/internal": {"source": "internal", "state": "UP", "nodeid": -1}}}
            """
        #expect(KafkaBrokerConnections(statistics: statistics) == KafkaBrokerConnections(up: 1, known: 3))
        let down = statistics.replacingOccurrences(
            of: #""configured", "state": "UP""#,
            with: #""configured", "state": "DOWN""#
        )
        #expect(KafkaBrokerConnections(statistics: down) == KafkaBrokerConnections(up: 0, known: 3))
        #expect(KafkaBrokerConnections(statistics: "not json") == nil)
        #expect(KafkaBrokerConnections(statistics: #"{"type": "consumer"}"#) == nil)
    }

    @Test(
        "a warning once a consumer has had no broker for the threshold, repeated while it lasts; a notice when one answers"
    )
    func warnings() {
        let capture = LogCapture()
        let reading = Mutex<KafkaBrokerConnections?>(nil)
        let start = ContinuousClock.now
        let watch = KafkaReachability(
            consumers: [.init(name: "worker") { reading.withLock { $0 } }],
            servers: ["kafka-1:9092", "kafka-2:9092"],
            threshold: .seconds(30),
            repeatEvery: .seconds(60),
            logger: capture.logger(label: "test"),
            start: start
        )
        func lines() -> [String] { capture.recent.filter { $0.contains("Kafka") } }

        // No statistics yet (a bootstrap server that never answers): quiet until the threshold.
        watch.check(now: start + .seconds(10))
        #expect(lines().isEmpty)
        watch.check(now: start + .seconds(31))
        #expect(lines().count == 1)
        let warning = lines().last ?? ""
        #expect(warning.contains("warning cannot reach Kafka"), "\(warning)")
        #expect(warning.contains("bootstrap=kafka-1:9092,kafka-2:9092"))
        #expect(warning.contains("consumer=worker") && warning.contains("unreachable_s=31"))
        // Repeated every minute while it lasts, not at every check.
        reading.withLock { $0 = KafkaBrokerConnections(up: 0, known: 2) }
        watch.check(now: start + .seconds(60))
        #expect(lines().count == 1)
        watch.check(now: start + .seconds(91))
        #expect(lines().count == 2)
        #expect(lines().last?.contains("kafka.brokers_known=2 ") == true)
        #expect(lines().last?.contains("unreachable_s=91") == true)

        // A broker answers: a notice says for how long none did.
        reading.withLock { $0 = KafkaBrokerConnections(up: 1, known: 2) }
        watch.check(now: start + .seconds(95))
        #expect(lines().count == 3)
        #expect(lines().last?.contains("notice Kafka reachable again") == true, "\(lines())")
        #expect(lines().last?.contains("unreachable_s=95") == true)
        watch.check(now: start + .seconds(200))
        #expect(lines().count == 3, "nothing more while it is reachable")

        // A brief loss (a broker restarting) passes unremarked; a long one is warned of again.
        reading.withLock { $0 = KafkaBrokerConnections(up: 0, known: 2) }
        watch.check(now: start + .seconds(220))
        #expect(lines().count == 3)
        reading.withLock { $0 = KafkaBrokerConnections(up: 1, known: 2) }
        watch.check(now: start + .seconds(225))
        #expect(lines().count == 3, "no notice after no warning")
        reading.withLock { $0 = KafkaBrokerConnections(up: 0, known: 2) }
        watch.check(now: start + .seconds(256))
        #expect(lines().last?.contains("unreachable_s=31") == true, "\(lines())")
    }
}

extension KafkaReachabilityTests {
    /// Tests that take the embedded broker down: they run in a phase of their own (see `BrokerOutage`
    /// in the Makefile).
    @Suite("Kafka broker outages", .serialized)
    struct BrokerOutage {
        @Test(
            "a worker whose broker goes down: herald_kafka_brokers_up falls to 0, a warning says so, a notice when it is back"
        )
        func brokerDown() async throws {
            let pipeline = try Pipeline()
            let capture = LogCapture()
            let store = try SQLiteStore(path: ":memory:")
            let worker = try pipeline.worker(
                store: store,
                clock: TestClock("2026-11-21T08:00:00Z"),
                statisticsInterval: .milliseconds(200)
            )
            /// The worker's `herald_kafka_brokers_up` on `/metrics`, if there is one. The bootstrap
            /// server and the broker learned from it are one broker at one address, with a connection
            /// each: 1 or 2 while it is up.
            func brokersUp() -> Int? {
                let body = HTTPEndpoints.metrics(
                    worker: (worker.statistics.snapshot, [:]),
                    sender: nil,
                    brokers: worker.brokerConnections.map { [("worker", $0)] } ?? []
                )
                let prefix = "herald_kafka_brokers_up{consumer=\"worker\"} "
                return body.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap {
                    Int($0.dropFirst(prefix.count))
                }
            }
            try await withRunningServices([worker]) {
                try await eventually("the worker's consumer reaches its broker") { (brokersUp() ?? 0) >= 1 }
                // Watched from here: how long a loaded host takes to start the worker is not the test.
                let watch = KafkaReachability(
                    consumers: [.init(name: "worker") { worker.brokerConnections }],
                    servers: [pipeline.environment.cluster.bootstrapServers],
                    interval: .milliseconds(100),
                    threshold: .seconds(2),
                    logger: capture.logger(label: "test")
                )
                try await withRunningServices([watch]) {
                    try await Task.sleep(for: .milliseconds(300))
                    #expect(!capture.recent.contains { $0.contains("Kafka") }, "\(capture.recent)")
                    try pipeline.environment.cluster.setBrokerDown(1)
                    try await eventually("no broker up") { brokersUp() == 0 }
                    try await eventually("the warning") {
                        capture.recent.contains { $0.contains("warning cannot reach Kafka") }
                    }
                    try pipeline.environment.cluster.setBrokerUp(1)
                    try await eventually("the notice") {
                        capture.recent.contains { $0.contains("notice Kafka reachable again") }
                    }
                    #expect((brokersUp() ?? 0) >= 1)
                }
            }
        }
    }
}
