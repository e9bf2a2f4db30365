import ArgumentParser
import Foundation
import HeraldApp
import HeraldKafka
import HeraldStore
import Logging

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure Herald's throughput on this machine.",
        subcommands: [
            KafkaBenchCommand.self, RenderBenchCommand.self, PayloadBenchCommand.self, DecisionBenchCommand.self,
            SenderBenchCommand.self, PipelineBenchCommand.self, ReplayBenchCommand.self, ScaleBenchCommand.self,
        ]
    )
}

struct KafkaBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kafka",
        abstract: "Consume→produce passthrough through HeraldKafka and through librdkafka's C API, in one run.",
        discussion: """
            The physical-limit baseline later benchmarks are compared with. Runs against the embedded
            cluster, fed by a producer running at the same time (the embedded cluster keeps only about
            5 MiB per partition, so the feed streams rather than preloads).
            """
    )

    @Option(help: "Messages through each passthrough.")
    var messages = 1_000_000

    @Option(help: "Partitions per topic.")
    var partitions = 12

    @Option(help: "Bytes per JSON event.")
    var messageSize = 400

    @Option(help: "Consumer batch size (both variants).")
    var batchSize = 1000

    @Option(help: "Rounds; each runs both variants, alternating which goes first. The ratio reported is the median.")
    var rounds = 5

    @Flag(help: "Print the result as JSON.")
    var json = false

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        guard messages >= 1 else { throw ValidationError("--messages must be at least 1") }
        guard partitions >= 1 else { throw ValidationError("--partitions must be at least 1") }
        guard messageSize >= 300 else { throw ValidationError("--message-size must be at least 300 (a CloudEvent)") }
        guard batchSize >= 1 else { throw ValidationError("--batch-size must be at least 1") }
        guard rounds >= 1 else { throw ValidationError("--rounds must be at least 1") }
    }

    func run() async throws {
        var logger = try global.bootstrapLogging(label: "herald.bench")
        if global.logLevel == nil { logger.logLevel = .warning }
        var benchmark = KafkaBenchmark()
        benchmark.messages = messages
        benchmark.partitions = partitions
        benchmark.messageSize = messageSize
        benchmark.batchSize = batchSize
        benchmark.rounds = rounds
        let quiet = json
        let report = try await benchmark.run(logger: logger) { line in
            if !quiet { FileHandle.standardError.write(Data("… \(line)\n".utf8)) }
        }
        if json {
            func describe(_ measurement: KafkaBenchmark.Measurement) -> [String: Any] {
                [
                    "messagesPerSecond": measurement.messagesPerSecond,
                    "megabytesPerSecond": measurement.megabytesPerSecond,
                    "seconds": measurement.seconds,
                ]
            }
            let object: [String: Any] = [
                "messages": messages, "partitions": partitions, "messageSize": messageSize,
                "rounds": report.rounds.map {
                    ["wrapper": describe($0.wrapper), "raw": describe($0.raw), "ratio": $0.ratio]
                },
                "wrapper": describe(report.overall(.wrapper)), "raw": describe(report.overall(.raw)),
                "ratio": report.ratio, "peakResidentMegabytes": report.peakResidentMegabytes,
            ]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
            return
        }
        print(
            "herald bench kafka: \(messages) messages of \(messageSize) bytes per variant and round, \(partitions) partitions, embedded broker"
        )
        for (index, round) in report.rounds.enumerated() {
            print("  round \(index + 1)")
            for measurement in [round.wrapper, round.raw] {
                print("    " + line(measurement))
            }
            print("    ratio HeraldKafka / raw:  \(format(round.ratio, 3))")
        }
        print("  all rounds")
        print("    " + line(report.overall(.wrapper)))
        print("    " + line(report.overall(.raw)))
        print("  median ratio HeraldKafka / raw: \(format(report.ratio, 3))")
        print("  peak RSS: \(format(report.peakResidentMegabytes, 0)) MB; allocator: \(MemoryAllocator.description)")
    }

    private func line(_ measurement: KafkaBenchmark.Measurement) -> String {
        "\(measurement.variant.rawValue.padding(toLength: 26, withPad: " ", startingAt: 0))"
            + "\(format(measurement.messagesPerSecond, 0)) msg/s  \(format(measurement.megabytesPerSecond, 1)) MB/s"
            + "  (\(format(measurement.seconds, 2)) s)"
    }

    private func format(_ value: Double, _ decimals: Int) -> String {
        String(format: "%.\(decimals)f", value)
    }
}

struct RenderBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render",
        abstract: "Decode + render of a typical order.confirmed event on one core, and memory over the run."
    )

    @Option(help: "Events to decode and render per round.")
    var events = 200_000

    @Option(help: "Rounds (the median and the best are reported).")
    var rounds = 5

    @Option(help: "The catalog directory.")
    var catalog = "catalog"

    @Option(help: "The event file.")
    var event = "catalog/events/order.confirmed.json"

    func run() throws {
        var benchmark = RenderBenchmark()
        benchmark.events = events
        benchmark.rounds = rounds
        benchmark.catalogDirectory = catalog
        benchmark.eventFile = event
        let report = try benchmark.run()
        print("herald bench render: \(report.rounds) rounds of \(report.events) events, one thread, locales rotating")
        print("  rounds: " + report.roundRates.map { String(format: "%.0f", $0) }.joined(separator: ", ") + " events/s")
        print(
            "  median \(String(format: "%.0f", report.medianEventsPerSecond)) events/s (\(String(format: "%.2f", 1e6 / report.medianEventsPerSecond)) µs per decode + render), best \(String(format: "%.0f", report.bestEventsPerSecond))"
        )
        print("  decode only (same run): \(String(format: "%.0f", report.decodeOnlyEventsPerSecond)) events/s")
        print(
            "  resident memory: \(String(format: "%.1f", report.residentAfterWarmUp)) MiB after warm-up, \(String(format: "%.1f", report.residentAtEnd)) MiB at the end"
        )
    }
}

struct PayloadBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "payload",
        abstract: "APNs and FCM request builds per second on one core, for a typical notification."
    )

    @Option(help: "Builds per round and provider.")
    var builds = 500_000

    @Option(help: "Rounds (the median is reported).")
    var rounds = 5

    func run() throws {
        var benchmark = PayloadBenchmark()
        benchmark.builds = builds
        benchmark.rounds = rounds
        let report = try benchmark.run()
        func list(_ rates: [Double]) -> String { rates.map { String(format: "%.0f", $0) }.joined(separator: ", ") }
        print("herald bench payload: \(rounds) rounds of \(builds) builds per provider, one thread")
        print(
            "  APNs: median \(String(format: "%.0f", report.apnsMedian)) builds/s  (rounds \(list(report.apnsRates)))"
        )
        print("  FCM:  median \(String(format: "%.0f", report.fcmMedian)) builds/s  (rounds \(list(report.fcmRates)))")
    }
}

struct DecisionBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decisions",
        abstract: "Recipient lookup + policy + decide, batch by batch, against a directory of N devices.",
        discussion: """
            Seeds the directory first (two devices per user), then runs rounds of decisions on one task. \
            With SQLite (the default: a temporary file) everything runs on one core; with \
            --store postgres://… each batch is one lookup and one decide round trip.
            """
    )

    @OptionGroup var storeOptions: BenchStoreOptions

    @Option(help: "Devices in the directory.")
    var devices = 1_000_000

    @Option(help: "Decisions per round.")
    var decisions = 200_000

    @Option(help: "Decisions per batch (one lookup and one decide call each).")
    var batchSize = 500

    @Option(help: "Rounds (the median is reported).")
    var rounds = 3

    @Flag(
        name: .customLong("random-event-ids"),
        help: """
            Random event ids (UUIDv4, as most CloudEvents SDKs make them) instead of sequential ones \
            (which sort as UUIDv7 or ULIDs do): each insert goes to a random place in the decision ledger.
            """
    )
    var randomEventIDs = false

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        guard devices >= 2, decisions >= 1, rounds >= 1 else {
            throw ValidationError("--devices must be at least 2; --decisions and --rounds at least 1")
        }
        try PipelineBenchCommand.checkBatchSize(batchSize)
    }

    func run() async throws {
        var logger = try global.bootstrapLogging(label: "herald.bench")
        if global.logLevel == nil { logger.logLevel = .warning }
        var benchmark = DecisionBenchmark()
        benchmark.devices = devices
        benchmark.decisions = decisions
        benchmark.batchSize = batchSize
        benchmark.rounds = rounds
        benchmark.randomEventIDs = randomEventIDs
        let report = try await storeOptions.withStore(logger: logger) { store, name in
            try await benchmark.run(store: store, storeName: name) { line in
                FileHandle.standardError.write(Data("… \(line)\n".utf8))
            }
        }
        print(
            "herald bench decisions: \(report.store), \(report.devices) devices, \(report.decisions) decisions per round, "
                + "batches of \(report.batchSize), \(randomEventIDs ? "random" : "sequential") event ids"
        )
        for (index, seconds) in report.roundSeconds.enumerated() {
            print(
                "  round \(index + 1): \(String(format: "%.0f", Double(report.decisions) / seconds)) decisions/s"
                    + "  (\(String(format: "%.2f", seconds)) s, process CPU \(String(format: "%.2f", report.roundCPUSeconds[index])) s)"
            )
        }
        print("  median: \(String(format: "%.0f", report.medianDecisionsPerSecond)) decisions/s")
        let total = Double(report.decisions * report.roundSeconds.count)
        print(
            "  per decision: lookup \(String(format: "%.1f", report.lookupSeconds / total * 1e6)) µs, "
                + "plan \(String(format: "%.1f", report.planSeconds / total * 1e6)) µs, "
                + "decide \(String(format: "%.1f", report.decideSeconds / total * 1e6)) µs"
        )
        print(
            "  decide per batch: p50 \(String(format: "%.1f", report.decideCall(percentile: 0.5) * 1e3)) ms, "
                + "p99 \(String(format: "%.1f", report.decideCall(percentile: 0.99) * 1e3)) ms, "
                + "slowest \(String(format: "%.1f", report.decideCall(percentile: 1) * 1e3)) ms"
        )
        print("  seeding the directory took \(String(format: "%.1f", report.seedSeconds)) s")
        print(
            "  directory cache: \(storeOptions.directoryCache) users; "
                + "SQLite memory map \(storeOptions.sqliteMemoryMapMegabytes) MB, "
                + "page cache \(storeOptions.sqlitePageCacheMegabytes) MiB; "
                + "peak RSS \(String(format: "%.0f", ProcessUsage.peakResidentMegabytes())) MB; "
                + "allocator: \(MemoryAllocator.description)"
        )
        print(
            "  decisions by reason: "
                + report.reasons.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        )
    }
}

struct SenderBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sender",
        abstract:
            "Provider calls through the sender against the simulator, compared with h2load on the same simulator.",
        discussion: """
            The sender runs as in production (embedded broker, SQLite delivery ledger, APNs over HTTP/2 and TLS \
            with a signed provider token); h2load (Debian nghttp2-client) first drives the same simulator \
            directly with the same request. Reports both rates and their ratio.
            """
    )

    @Option(help: "Provider calls to make (and h2load requests).")
    var calls = 200_000

    @Option(help: "h2load connections.")
    var h2loadClients = 2

    @Option(help: "h2load concurrent streams per connection.")
    var h2loadStreams = 256

    @Flag(inversion: .prefixedNo, help: "Drive the simulator with h2load first, for the ratio.")
    var h2load = true

    @Option(help: "The APNs transport (providers.apns.transport): frames or async-http-client.")
    var transport = "frames"

    @Option(help: "APNs requests in flight at once (providers.apns.concurrency). Default: the configuration's.")
    var concurrency: Int?

    @Option(help: "HTTP/2 connections to the simulator (providers.apns.connections). Default: the configuration's.")
    var connections: Int?

    @Option(
        help: """
            Seconds an APNs request may take before it is a transport.timeout \
            (providers.apns.request_timeout). Default: the configuration's.
            """
    )
    var requestTimeout: Double?

    @OptionGroup var global: GlobalOptions

    /// The configuration's ranges: a count it would refuse (an APNs pool of 10^18 connections)
    /// traps the benchmark as it would the sender.
    func validate() throws {
        guard calls >= 1, h2loadClients >= 1, h2loadStreams >= 1 else {
            throw ValidationError("--calls, --h2load-clients and --h2load-streams must be at least 1")
        }
        if let concurrency, !(1...HeraldConfiguration.maximumConcurrency).contains(concurrency) {
            throw ValidationError("--concurrency must be from 1 to \(HeraldConfiguration.maximumConcurrency)")
        }
        if let connections, !(1...HeraldConfiguration.maximumConnections).contains(connections) {
            throw ValidationError("--connections must be from 1 to \(HeraldConfiguration.maximumConnections)")
        }
        if let requestTimeout, !(requestTimeout > 0 && requestTimeout.isFinite) {
            throw ValidationError("--request-timeout must be a positive number of seconds")
        }
        guard ["frames", "async-http-client"].contains(transport) else {
            throw ValidationError("--transport must be frames or async-http-client")
        }
    }

    func run() async throws {
        let logger = try global.bootstrapLogging(label: "herald.bench")
        var benchmark = SenderBenchmark()
        benchmark.calls = calls
        benchmark.h2loadClients = h2loadClients
        benchmark.h2loadStreams = h2loadStreams
        benchmark.runsH2load = h2load
        if let concurrency { benchmark.concurrency = concurrency }
        if let connections { benchmark.connections = connections }
        if let requestTimeout { benchmark.requestTimeout = .seconds(requestTimeout) }
        benchmark.usesFrameConnections = transport == "frames"
        let report = try await benchmark.run(logger: logger) { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
        print("herald bench sender: \(report.calls) APNs calls against the provider simulator")
        print(
            "  sender: \(String(format: "%.0f", report.senderCallsPerSecond)) calls/s (\(String(format: "%.1f", report.senderSeconds)) s)"
        )
        let perCall = { (seconds: Double) in String(format: "%.0f", seconds / Double(report.calls) * 1e6) }
        if let h2load = report.h2loadRequestsPerSecond, let ratio = report.ratio {
            print("  h2load: \(String(format: "%.0f", h2load)) requests/s")
            print("  ratio: \(String(format: "%.2f", ratio)) of h2load")
            print(
                "  CPU per call: \(perCall(report.senderCPUSeconds)) µs in the sender run (sender, simulator and broker);"
                    + " \(perCall(report.h2loadSimulatorCPUSeconds + report.h2loadCPUSeconds)) µs in the h2load run"
                    + " (simulator \(perCall(report.h2loadSimulatorCPUSeconds)), h2load \(perCall(report.h2loadCPUSeconds)))"
            )
        } else if h2load {
            print("  h2load: not measured (install nghttp2-client)")
        } else {
            print("  h2load: not run (--no-h2load)")
            print("  CPU per call: \(perCall(report.senderCPUSeconds)) µs (sender, simulator and broker)")
        }
        print(
            "  peak RSS \(String(format: "%.0f", report.peakResidentMegabytes)) MB; non-success answers: \(report.failures); "
                + "allocator: \(MemoryAllocator.description)"
        )
    }
}

struct PipelineBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pipeline",
        abstract: "The whole worker end to end: mixed events in, outbound provider calls out, on the embedded broker.",
        discussion: """
            Seeds a directory of --users users (one to three devices each), then streams --events events of \
            the example kinds into the embedded broker while the worker runs, until every event is handled. \
            Reports events/s, outbound messages/s, event-to-outbound latency and peak RSS, and then the raw \
            librdkafka passthrough of `herald bench kafka` on the same cluster with events of the same size, \
            alternated with the same passthrough writing the run's outbound traffic for each event it reads \
            (what Kafka alone costs for it).
            """
    )

    @OptionGroup var storeOptions: BenchStoreOptions

    @Option(help: "Events to stream through the worker.")
    var events = 1_000_000

    @Option(help: "Users in the directory (one to three devices each).")
    var users = 100_000

    @Option(help: "Partitions of the domain and outbound topics.")
    var partitions = 12

    @Option(help: "The worker's batch size (worker.batch_size).")
    var batchSize = HeraldConfiguration.Worker.defaultBatchSize

    @Option(help: "How far the feeder may run ahead of the worker, in events.")
    var window = 20_000

    @Option(
        help:
            "Messages (events) through each round of the raw passthrough and of the one writing the run's outbound traffic (0: skip both)."
    )
    var rawMessages = 1_000_000

    @Option(help: "Rounds of each passthrough; the ratios are taken against their medians.")
    var rawRounds = 5

    @Option(help: "The catalog directory.")
    var catalog = "catalog"

    @Flag(
        help:
            "Run the embedded broker in this process instead of a child process (`herald broker`); the peak RSS then includes the broker's."
    )
    var brokerInProcess = false

    @Flag(help: "Events without CloudEvents' optional `time` attribute.")
    var untimedEvents = false

    @Flag(
        name: .customLong("random-event-ids"),
        help: "Random event ids (UUIDv4, as most CloudEvents SDKs make them) instead of sequential ones."
    )
    var randomEventIDs = false

    @Flag(
        help:
            "Empty SQLite's directory cache once the directory is seeded: every user's first event reads SQLite, as after a worker's start."
    )
    var coldDirectoryCache = false

    @Option(
        name: .customLong("kafka-property"),
        help: ArgumentHelp(
            "A librdkafka property for the worker's Kafka clients, as kafka.properties sets it (repeatable).",
            valueName: "name=value"
        )
    )
    var kafkaProperties: [String] = []

    @OptionGroup var global: GlobalOptions

    /// `--kafka-property` as names and values, each checked as `kafka.properties` checks it. Spaces
    /// around a name or value are ignored, as in `HERALD_KAFKA_PROPERTIES`.
    func workerKafkaProperties() throws -> [String: String] {
        var properties: [String: String] = [:]
        for entry in kafkaProperties {
            let name = entry.prefix { $0 != "=" }.trimmingCharacters(in: .whitespaces)
            guard name.count < entry.count, !name.isEmpty else {
                throw ValidationError("--kafka-property expects name=value")
            }
            let value = entry.drop { $0 != "=" }.dropFirst()
            properties[name] = value.trimmingCharacters(in: .whitespaces)
        }
        do {
            try HeraldConfiguration.checkKafkaProperties(properties, source: "--kafka-property")
        } catch {
            throw ValidationError(error.message)
        }
        return properties
    }

    func validate() throws {
        _ = try workerKafkaProperties()
        try Self.checkBatchSize(batchSize)
        guard events >= 1, users >= 2, partitions >= 1, window >= batchSize else {
            throw ValidationError(
                "--events must be at least 1, --users at least 2, --partitions at least 1, --window at least --batch-size"
            )
        }
        guard rawMessages >= 0, rawRounds >= 1 else {
            throw ValidationError("--raw-messages must not be negative, --raw-rounds must be at least 1")
        }
    }

    func run() async throws {
        var logger = try global.bootstrapLogging(label: "herald.bench")
        if global.logLevel == nil { logger.logLevel = .warning }
        var benchmark = PipelineBenchmark()
        benchmark.events = events
        benchmark.users = users
        benchmark.partitions = partitions
        benchmark.batchSize = batchSize
        benchmark.window = window
        benchmark.rawMessages = rawMessages
        benchmark.rawRounds = rawRounds
        benchmark.catalogDirectory = catalog
        benchmark.kafkaProperties = try workerKafkaProperties()
        benchmark.untimedEvents = untimedEvents
        benchmark.randomEventIDs = randomEventIDs
        benchmark.coldDirectoryCache = coldDirectoryCache
        if !brokerInProcess {
            benchmark.brokerExecutable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        }
        let report = try await storeOptions.withStore(logger: logger) { store, name in
            try await benchmark.run(store: store, storeName: name, logger: logger) { line in
                FileHandle.standardError.write(Data("… \(line)\n".utf8))
            }
        }
        let counters = report.counters
        let eventShape = (untimedEvents ? ", without `time`" : "") + (randomEventIDs ? ", random ids" : "")
        print(
            "herald bench pipeline: \(report.events) events (\(report.averageEventBytes) bytes on average\(eventShape)), \(report.users) users, \(report.devices) devices, \(report.store)"
                + (coldDirectoryCache ? "; the directory cache emptied after seeding" : "")
        )
        print(
            "  pipeline: \(String(format: "%.0f", report.eventsPerSecond)) events/s, \(String(format: "%.0f", report.outboundPerSecond)) outbound messages/s (\(report.outbound) in \(String(format: "%.1f", report.seconds)) s from the worker's first batch; the feeder started \(String(format: "%.2f", report.startupSeconds)) s before it)"
        )
        let latency = counters.latencies
        let bound = { (fraction: Double) -> String in
            latency.quantile(fraction).map { $0.isFinite ? "≤ \(Int($0 * 1000)) ms" : "> 10 s" } ?? "n/a"
        }
        print(
            "  event-to-outbound latency: p50 \(bound(0.5)), p99 \(bound(0.99)), mean \(String(format: "%.0f", latency.sum / Double(max(latency.count, 1)) * 1000)) ms"
        )
        if !benchmark.kafkaProperties.isEmpty {
            let properties = benchmark.kafkaProperties.sorted { $0.key < $1.key }.map {
                KafkaClientOptions.isSecret($0.key) ? "\($0.key)=(secret)" : "\($0.key)=\($0.value)"
            }
            print("  the worker's Kafka clients with: " + properties.joined(separator: ", "))
        }
        let cpuOwner = report.brokerPeakResidentMegabytes == nil ? "worker, feeder and broker" : "worker and feeder"
        print(
            "  process CPU (\(cpuOwner)): \(String(format: "%.1f", report.cpuSeconds)) s, "
                + "\(String(format: "%.1f", report.cpuSeconds / Double(max(report.events, 1)) * 1e6)) µs per event, "
                + "\(String(format: "%.2f", report.cpuSeconds / (report.startupSeconds + report.seconds))) cores busy; "
                + "allocator: \(MemoryAllocator.description)"
        )
        print(
            "  worker stages: deciding (decode, directory, store) \(String(format: "%.1f", counters.decideTime.inSeconds)) s, building (render, payloads) \(String(format: "%.1f", counters.buildTime.inSeconds)) s, overlapping"
        )
        if let warm = report.warmEventsPerSecond {
            print(
                "  after the first \(Int(PipelineBenchmark.warmFraction * 100))% of the events (the directory cache warm): "
                    + "\(String(format: "%.0f", warm)) events/s (informational: the rate and ratio above count every event)"
            )
        }
        if let cache = report.directoryCache {
            let lookups = cache.hits + cache.misses
            print(
                "  directory cache: \(lookups) users looked up, \(String(format: "%.1f", Double(cache.hits) / Double(max(lookups, 1)) * 100))% "
                    + "found in it; it holds \(cache.users) of \(cache.capacity) (store.directory_cache)"
            )
        }
        let process = report.brokerPeakResidentMegabytes == nil ? "worker, feeder and broker" : "worker and feeder"
        print(
            "  peak RSS (\(process)) \(String(format: "%.0f", report.peakResidentMegabytes)) MB; at the end: "
                + report.residentByKind.map { "\($0.kind) \(String(format: "%.0f", $0.megabytes)) MB" }.joined(
                    separator: ", "
                )
        )
        if let broker = report.brokerPeakResidentMegabytes {
            print("  peak RSS of the embedded broker's process: \(String(format: "%.0f", broker)) MB")
        }
        if let median = report.rawMedian, let ratio = report.ratio {
            let rounds = report.raw.map { String(format: "%.0f", $0.messagesPerSecond) }.joined(separator: ", ")
            print(
                "  raw librdkafka passthrough: median \(String(format: "%.0f", median.messagesPerSecond)) messages/s of \(report.raw.count) rounds of \(median.messages) messages (\(rounds))"
            )
            print("  ratio: \(String(format: "%.3f", ratio)) of the raw passthrough's median")
        }
        if !report.raw.isEmpty && report.outboundShape == nil {
            print("  librdkafka alone writing this traffic: not measured (the run wrote no outbound records)")
        }
        if let shape = report.outboundShape, let median = report.shapedMedian, let ratio = report.shapedRatio {
            let rounds = report.shaped.map { String(format: "%.0f", $0.messagesPerSecond) }.joined(separator: ", ")
            print(
                "  librdkafka alone writing this traffic (\(String(format: "%.2f", shape.recordsPerEvent)) outbound records of \(shape.recordBytes) bytes per event read): median \(String(format: "%.0f", median.messagesPerSecond)) events/s (\(rounds)); the pipeline ran at \(String(format: "%.2f", ratio)) of it"
            )
        }
        print("  decisions: " + Self.line(counters.decisionsByReason))
        print("  outbound: " + Self.line(counters.outboundByProvider))
        print("  events: " + Self.line(counters.eventsByType))
        if !counters.deadLettersByCode.isEmpty { print("  dead letters: " + Self.line(counters.deadLettersByCode)) }
        print("  seeding the directory took \(String(format: "%.1f", report.seedSeconds)) s")
    }

    /// A batch size the configuration would take (`worker.batch_size`): a consumer allocates room
    /// for its batches up front.
    static func checkBatchSize(_ batchSize: Int) throws {
        guard HeraldConfiguration.batchSizes.contains(batchSize) else {
            throw ValidationError("--batch-size must be from 1 to \(HeraldConfiguration.batchSizes.upperBound)")
        }
    }

    static func line(_ counts: [String: Int]) -> String {
        counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }
}

/// The store options the benchmarks that decide share, with the worker's defaults.
struct BenchStoreOptions: ParsableArguments {
    @Option(
        help: """
            The state store: sqlite:PATH (or a path; :memory: for SQLite in memory) or \
            postgres://user@host:port/db. Default: a temporary SQLite file, removed afterwards.
            """
    )
    var store: String?

    @Option(help: "Users whose recipient record SQLite keeps in memory (store.directory_cache; 0: none).")
    var directoryCache = HeraldConfiguration().directoryCache

    @Option(
        name: .customLong("sqlite-mmap-mb"),
        help: "How much of the SQLite file is read through a memory map (store.sqlite_mmap_mb; 0: none)."
    )
    var sqliteMemoryMapMegabytes = HeraldConfiguration().sqliteMemoryMapMegabytes

    @Option(
        name: .customLong("sqlite-cache-mb"),
        help: "The most memory SQLite's page cache holds (store.sqlite_cache_mb)."
    )
    var sqlitePageCacheMegabytes = HeraldConfiguration().sqlitePageCacheMegabytes

    @Option(
        name: .customLong("sqlite-sync"),
        help: "When a SQLite commit reaches the disk: full or normal (store.sqlite_sync)."
    )
    var sqliteSynchronous = HeraldConfiguration().sqliteSynchronous

    func validate() throws {
        guard directoryCache >= 0, sqliteMemoryMapMegabytes >= 0 else {
            throw ValidationError("--directory-cache and --sqlite-mmap-mb must not be negative")
        }
        guard (1...SQLiteStore.maximumPageCacheMegabytes).contains(sqlitePageCacheMegabytes) else {
            throw ValidationError("--sqlite-cache-mb must be from 1 to \(SQLiteStore.maximumPageCacheMegabytes)")
        }
        // `bench replay --store` names a kind of store (`memory`, `sqlite`); here it is a location,
        // and either word would quietly become a SQLite file of that name in the working directory,
        // which the next run then reuses, ledger and all (docs/benchmarks.md, the fourteenth session).
        if let store, ReplayBenchmark.Store(rawValue: store) != nil {
            throw ValidationError(
                "--store takes a location here, not a kind of store: sqlite:PATH (:memory: for SQLite in memory) or a postgres:// URL; sqlite:\(store) for a file named \(store)"
            )
        }
    }

    /// Runs `body` with the store named by `--store`, or with a temporary SQLite file that is
    /// removed afterwards.
    func withStore<R: Sendable>(
        logger: Logger,
        _ body: (any StateStore, String) async throws -> R
    ) async throws -> R {
        let temporary = store == nil ? NSTemporaryDirectory() + "herald-bench-\(getpid()).sqlite" : nil
        defer {
            if let temporary {
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: temporary + suffix) }
            }
        }
        let location: StoreLocation
        do {
            location = try StoreLocation(store ?? "sqlite:\(temporary!)")
        } catch {
            throw ValidationError("--store: \(error.message)")
        }
        return try await location.withStore(
            logger: logger,
            directoryCache: directoryCache,
            sqliteMemoryMapMegabytes: sqliteMemoryMapMegabytes,
            sqlitePageCacheMegabytes: sqlitePageCacheMegabytes,
            sqliteSynchronous: sqliteSynchronous
        ) { store in
            // The setting that moves a SQLite run most (a flush per commit) goes with its name.
            let name =
                if case .sqlite = location { "\(location) (sqlite_sync \(sqliteSynchronous.rawValue))" } else {
                    "\(location)"
                }
            return try await body(store, name)
        }
    }
}

struct ReplayBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Replay a recorded log of mixed events with the in-memory store, streaming it from a file.",
        discussion: """
            Writes --events events of the example kinds (one per millisecond of event time) to a temporary \
            file, seeds --users users into the store (replay's in-memory store, or with --store sqlite an \
            in-memory SQLite database), and replays the file through the worker's code. Reports events/s, \
            notifications/s and resident memory before and after.
            """
    )

    @Option(help: "The store: memory (replay's default) or sqlite (an in-memory SQLite database).")
    var store = ReplayBenchmark.Store.memory

    @Option(help: "Events in the log.")
    var events = 1_000_000

    @Option(help: "Users in the directory (one to three devices each).")
    var users = 100_000

    @Option(help: "Events decided together.")
    var batchSize = 1000

    @Option(help: "Parts of a batch rendered concurrently. Default: one per core.")
    var parallelism: Int?

    @Flag(help: "Write and read the log gzip-compressed.")
    var gzip = false

    @Option(help: "Where the outbound messages go (default /dev/null: replay without the disk).")
    var out = "/dev/null"

    @Option(help: "The catalog directory.")
    var catalog = "catalog"

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        guard events >= 1, users >= 2 else { throw ValidationError("--events must be at least 1, --users at least 2") }
        try PipelineBenchCommand.checkBatchSize(batchSize)
        if let parallelism, !(1...256).contains(parallelism) {
            throw ValidationError("--parallelism must be from 1 to 256")
        }
    }

    func run() async throws {
        var logger = try global.bootstrapLogging(label: "herald.bench")
        if global.logLevel == nil { logger.logLevel = .warning }
        var benchmark = ReplayBenchmark()
        benchmark.events = events
        benchmark.users = users
        benchmark.batchSize = batchSize
        if let parallelism { benchmark.parallelism = parallelism }
        benchmark.gzip = gzip
        benchmark.out = out
        benchmark.catalogDirectory = catalog
        benchmark.store = store
        let report = try await benchmark.run(logger: logger) { line in
            FileHandle.standardError.write(Data("… \(line)\n".utf8))
        }
        let replay = report.replay
        print(
            "herald bench replay: \(replay.records) events (\(report.logBytes / 1_000_000) MB\(gzip ? ", gzip" : "")), \(users) users, \(store == .memory ? "in-memory store" : "in-memory SQLite")"
        )
        print(
            "  replay: \(String(format: "%.0f", report.eventsPerSecond)) events/s, \(String(format: "%.0f", report.outboundPerSecond)) notifications/s (\(replay.outbound) in \(String(format: "%.1f", report.seconds)) s)"
        )
        print(
            "  process CPU: \(String(format: "%.1f", report.cpuSeconds)) s, "
                + "\(String(format: "%.1f", report.cpuSeconds / Double(max(replay.records, 1)) * 1e6)) µs per event, "
                + "\(String(format: "%.2f", report.cpuSeconds / report.seconds)) cores busy; "
                + "allocator: \(MemoryAllocator.description)"
        )
        print(
            "  resident memory: \(String(format: "%.0f", report.residentBeforeMegabytes)) MB before (directory seeded), peak \(String(format: "%.0f", report.peakResidentMegabytes)) MB"
        )
        print("  decisions: " + PipelineBenchCommand.line(replay.decisionsByReason))
        print("  notifications: " + PipelineBenchCommand.line(replay.outboundByProvider))
    }
}

extension ReplayBenchmark.Store: ExpressibleByArgument {}

extension SQLiteStore.Synchronous: ExpressibleByArgument {}
