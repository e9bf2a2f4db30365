import Foundation
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldStore
import HeraldTestSupport
import HeraldWorker
import Logging
import Synchronization
import Testing

@testable import HeraldApp

/// The worker's concurrency: a batch is built in parts on several cores while the store decides
/// the next one, and the parts' records still come out in consumption order.
@Suite("Parallel building")
struct ParallelBuildTests {
    @Test("turns are taken in order, whichever task arrives first")
    func turnstileOrder() async {
        let turns = Turnstile()
        let order = TurnLog()
        await withTaskGroup(of: Void.self) { group in
            // Later turns start first, and each waits for the ones before it.
            for turn in (0..<20).reversed() {
                group.addTask {
                    await turns.wait(until: turn)
                    order.turns.withLock { $0.append(turn) }
                    turns.finish(turn)
                }
            }
        }
        #expect(order.turns.withLock { $0 } == Array(0..<20))
    }

    @Test("parts run on the build threads, below the process's priority; more parts than threads all finish")
    func buildThreads() async {
        // Two threads kept for the rest of the test process, like the shared ones.
        let threads = BuildThreads(count: 2)
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        let process = getpriority(which, 0)
        let ran = await withTaskGroup(of: (part: Int, nice: Int32, thread: String).self) { group in
            for part in 0..<8 {
                group.addTask {
                    await threads.run { _ in (part, getpriority(which, 0), DedicatedThread.currentName) }
                }
            }
            var ran: [(part: Int, nice: Int32, thread: String)] = []
            for await one in group { ran.append(one) }
            return ran
        }
        #expect(ran.map(\.part).sorted() == Array(0..<8))
        #expect(ran.allSatisfy { $0.nice == min(process + BuildThreads.niceness, 19) })
        #expect(Set(ran.map(\.thread)).isSubset(of: ["herald.build.0", "herald.build.1"]))
    }

    @Test("a batch built in parts gives the same records, in the same order, as built in one go")
    func partsEqualWhole() async throws {
        let store = try SQLiteStore(path: ":memory:")
        let registeredAt = Timestamp(rfc3339: "2026-11-01T00:00:00Z")!
        var changes: [DirectoryEvent] = []
        let locales = ["nb-NO", "en-GB", "de-DE", "pl-PL", "ar-EG"]
        for user in 0..<200 {
            changes.append(
                .deviceRegistered(
                    DeviceRegistration(
                        userID: "u-\(user)",
                        deviceID: "phone",
                        platform: "android",
                        provider: .fcm,
                        token: "fcm-\(user):APA91bTest",
                        appID: "no.getdrop.app",
                        sandbox: false,
                        locale: locales[user % locales.count],
                        at: registeredAt
                    )
                )
            )
        }
        try await store.apply(changes)
        let processor = EventProcessor(
            catalog: exampleCatalog,
            policy: .defaults,
            store: store,
            clock: TestClock("2026-11-21T12:00:00Z"),
            topics: WorkerTopics(),
            unknownEventTypes: .deadLetter,
            statistics: WorkerStatistics(),
            logger: Logger(label: "test")
        )
        var messages: [KafkaMessage] = []
        for number in 0..<1000 {
            let user = "u-\(number % 250)"  // a fifth of them have no devices
            let value =
                number % 2 == 0
                ? #"{"specversion":"1.0","id":"e-\#(number)","source":"/chat","type":"message.received","time":"2026-11-21T12:00:00Z","data":{"recipientIds":["\#(user)"],"chatId":"c","senderName":"Ana","preview":"Hi \#(number)"}}"#
                : #"{"specversion":"1.0","id":"e-\#(number)","source":"/orders","type":"order.confirmed","time":"2026-11-21T12:00:00Z","data":{"userId":"\#(user)","orderId":"o-\#(number)","total":{"amount":12.5,"currency":"NOK"},"itemCount":1}}"#
            messages.append(
                KafkaMessage(
                    topic: "orders.events",
                    partition: 0,
                    offset: Int64(number),
                    timestampMilliseconds: 0,
                    key: nil,
                    value: KafkaBytes(number == 500 ? "not json" : value)
                )
            )
        }
        let decided = try await processor.decide(messages)
        let whole = processor.build(decided)
        let parts = await processor.build(decided, parts: 4)
        #expect(whole.count > 700)
        #expect(whole.contains { $0.topic == "herald.events.dlq" }, "the poison message is dead-lettered")
        #expect(parts.count == whole.count)
        #expect(parts.map(\.topic) == whole.map(\.topic))
        #expect(parts.map { $0.key.map(Array.init) } == whole.map { $0.key.map(Array.init) })
        #expect(parts.map { $0.value.map(Array.init) } == whole.map { $0.value.map(Array.init) })
        // As the parts made them, for the producer to queue one after another: joined, the same.
        let inParts = await processor.buildParts(decided, parts: 4)
        #expect(inParts.count == 5, "the batch's own records, then one array per part")
        #expect(inParts.joined().map(\.topic) == whole.map(\.topic))
        #expect(inParts.joined().map { $0.value.map(Array.init) } == whole.map { $0.value.map(Array.init) })
    }

    @Test("herald bench pipeline streams every event through the worker and counts what came out")
    func pipelineBenchmark() async throws {
        var benchmark = PipelineBenchmark()
        benchmark.events = 3000
        benchmark.users = 300
        benchmark.partitions = 3
        benchmark.batchSize = 200
        benchmark.window = 1000
        benchmark.rawMessages = 2000
        benchmark.rawRounds = 3
        benchmark.catalogDirectory = repositoryRoot.appendingPathComponent("catalog").path
        let store = try SQLiteStore(path: ":memory:")
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let report = try await benchmark.run(store: store, storeName: "sqlite::memory:", logger: logger) { _ in }
        #expect(report.counters.handledEvents == 3000)
        #expect(report.counters.eventsByType.values.reduce(0, +) == 3000)
        #expect(report.counters.deadLettersByCode.isEmpty, "\(report.counters.deadLettersByCode)")
        // Whatever the hour: the users with quiet hours are not in them while the run lasts.
        #expect(
            report.counters.decisionsByReason["deferred.quiet_hours"] == nil,
            "\(report.counters.decisionsByReason)"
        )
        #expect(report.devices == 100 * 1 + 100 * 2 + 100 * 3)
        let sent = report.counters.decisionsByReason["sent"] ?? 0
        // Every sent decision reaches each of the user's one to three devices.
        #expect(sent > 1000)
        #expect(report.outbound >= sent && report.outbound <= 3 * sent)
        #expect(report.counters.latencies.count == 3000)
        #expect(report.eventsPerSecond > 0)
        // The clock starts at the worker's first batch, after the feeder started: had the worker not
        // noted its first batch, the start-up would be zero (the clock then falls back to the feeder's
        // start).
        #expect(report.startupSeconds > 0 && report.startupSeconds < 30, "\(report.startupSeconds)")
        // Every recipient looked up (an offer has two), each found in the cache: the directory was
        // seeded through the store's `apply`, which caches the users it writes.
        let cache = try #require(report.directoryCache)
        #expect(cache.hits >= 3000 && cache.misses == 0 && cache.users == 300, "\(cache)")
        try #require(report.raw.count == 3)
        #expect(report.raw.allSatisfy { $0.messages == 2000 && $0.messagesPerSecond > 0 })
        // The ratio is taken against the middle round, not the fastest or the slowest.
        let rates = report.raw.map(\.messagesPerSecond).sorted()
        #expect(report.rawMedian?.messagesPerSecond == rates[1])
        #expect(report.ratio == report.eventsPerSecond / rates[1])
    }

    @Test("the pipeline benchmark's quiet hours start after the run would end, at any hour and across DST changes")
    func benchmarkQuietHours() throws {
        // Every half hour of 2026-03-28 to 30 and 2026-10-24 to 26 (both European DST changes, and
        // Cairo's, 2026-04-23 to 25 and 2026-10-28 to 30).
        let days: [Double] = [1_774_656_000, 1_792_800_000, 1_776_902_400, 1_793_145_600]
        for day in days {
            for step in 0..<(3 * 48) {
                let start = Date(timeIntervalSince1970: day + Double(step) * 1800)
                for profile in EventGenerator.profiles {
                    let quiet = try #require(PipelineBenchmark.quietHours(after: start, timeZone: profile.timeZone))
                    let startMilliseconds = Int64(start.timeIntervalSince1970 * 1000)
                    // A run of an hour is never in them; five hours in, it would be.
                    for minute in stride(from: 0, through: 60, by: 5) {
                        let moment = Timestamp(epochMilliseconds: startMilliseconds + Int64(minute) * 60_000)
                        #expect(!quiet.contains(moment), "\(profile.timeZone) at \(start)")
                    }
                    #expect(
                        quiet.contains(Timestamp(epochMilliseconds: startMilliseconds + 5 * 3_600_000)),
                        "\(profile.timeZone) at \(start): \(quiet.startText)-\(quiet.endText)"
                    )
                }
            }
        }
    }

    @Test("the rate after the warm-up is the events handled since, per second, and none for under a second")
    func warmRate() {
        let start = ContinuousClock.now
        #expect(PipelineBenchmark.rate(of: 700_000, from: start, to: start + .seconds(7)) == 100_000)
        #expect(PipelineBenchmark.rate(of: 700_000, from: start, to: start + .milliseconds(999)) == nil)
    }

    @Test("herald bench pipeline's Kafka properties reach the worker's clients, and only with the option")
    func pipelineBenchmarkKafkaProperties() {
        var benchmark = PipelineBenchmark()
        benchmark.kafkaProperties = ["compression.type": "lz4", "linger.ms": "20"]
        let options = WorkerApp.clientOptions(benchmark.workerConfiguration().kafka, bootstrapServers: ["b:9092"])
        #expect(options.properties["compression.type"] == "lz4")
        #expect(options.properties["linger.ms"] == "20")
        #expect(options.bootstrapServers == ["b:9092"])
        #expect(
            WorkerApp.clientOptions(PipelineBenchmark().workerConfiguration().kafka, bootstrapServers: []).properties[
                "compression.type"
            ] == nil
        )
    }
}

@Suite("Benchmark medians")
struct BenchmarkMedianTests {
    static func measurement(_ messagesPerSecond: Int) -> KafkaBenchmark.Measurement {
        KafkaBenchmark.Measurement(variant: .raw, messages: messagesPerSecond, bytes: 0, elapsed: .seconds(1))
    }

    @Test("the raw passthrough's median is the middle round by rate, whatever order the rounds ran in")
    func medianOfRounds() {
        let rates = { (rounds: [Int]) in
            KafkaBenchmark.Measurement.median(of: rounds.map(Self.measurement)).map { Int($0.messagesPerSecond) }
        }
        // An outlier on either side does not move it.
        #expect(rates([900_000, 500_000, 620_000, 610_000, 100]) == 610_000)
        #expect(rates([3, 1, 2]) == 2)
        // An even count: the lower middle round, one that ran, not an average of two.
        #expect(rates([40, 10, 30, 20]) == 20)
        #expect(rates([7]) == 7)
        #expect(rates([]) == nil)
    }
}

@Suite("The Kafka benchmark's feeder")
struct KafkaBenchmarkFeederTests {
    @Test("its window holds at most 2 MiB a partition, and small events keep the 60,000 the ratios were measured with")
    func windowBoundedByBytes() {
        var benchmark = KafkaBenchmark()
        let ahead = { (size: Int) in
            benchmark.messageSize = size
            return benchmark.feederWindow
        }
        #expect(ahead(400) == 60_000)
        // The pipeline's 287-byte events: the raw passthrough it is compared with is unchanged.
        #expect(ahead(287) == 60_000)
        for size in [1199, 2000, 64 * 1024] {
            let window = ahead(size)
            #expect(window < 60_000)
            #expect(window * size / benchmark.partitions <= KafkaBenchmark.feederBytesPerPartition)
            // And no fewer than fit: one more would not.
            #expect((window + 1) * size > benchmark.partitions * KafkaBenchmark.feederBytesPerPartition)
        }
        // However large a message, the feeder may still send one.
        #expect(ahead(100 * 1024 * 1024) == 1)
        benchmark.messageSize = 400
        benchmark.window = 1000
        #expect(benchmark.feederWindow == 1000)
    }

    @Test("the pipeline's feeder keeps its window with 12 partitions and at most 2 MiB a partition with fewer")
    func pipelineWindow() {
        var benchmark = PipelineBenchmark()
        let largest = EventGenerator(users: 100, partitions: 12).largestEvent(among: 2000)
        #expect((250...600).contains(largest))
        #expect(benchmark.feederWindow(largestEvent: largest) == benchmark.window)
        benchmark.partitions = 1
        let window = benchmark.feederWindow(largestEvent: largest)
        #expect(window < benchmark.window)
        #expect(window * largest <= KafkaBenchmark.feederBytesPerPartition)
        #expect((window + 1) * largest > KafkaBenchmark.feederBytesPerPartition)
    }
}

final class TurnLog: Sendable {
    let turns = Mutex<[Int]>([])
}
