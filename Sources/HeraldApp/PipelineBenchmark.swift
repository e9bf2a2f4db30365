import Foundation
import HeraldCatalog
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldStore
import HeraldWorker
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// `herald bench pipeline`: the whole worker, end to end, on the embedded broker.
///
/// A directory of `users` users with one to three devices each (APNs, FCM, Expo; five locales, some
/// with marketing opt-ins, some with quiet hours that start after the run ends, so that its work does
/// not depend on the hour it runs at) is written to the store, then a feeder streams `events`
/// mixed events of the example kinds into a domain topic while the worker — the same `Worker`
/// `herald run --role worker` runs — consumes them, decides, renders and produces the outbound
/// records. The feeder stays at most `window` events ahead of the worker, fewer with few
/// partitions: the embedded cluster keeps only about 5 MiB per partition. The run ends when every
/// event's records are acknowledged and its offset committable; it is timed from the worker's first
/// batch, as the raw passthrough is timed from its first message.
///
/// The raw librdkafka passthrough of `herald bench kafka` runs afterwards on the same cluster, with
/// events of the same size, so that the ratio between the two is measured on one machine in one run.
/// It runs several rounds and the ratio takes their median: one short round on this 2-core machine
/// varied from 467,000 to 813,000 messages/s between consecutive runs, which moved the ratio more
/// than any change to the worker did.
public struct PipelineBenchmark: Sendable {
    public var events = 1_000_000
    public var users = 100_000
    public var partitions = 12
    /// The worker's batch size: its default unless a run sets it.
    public var batchSize = HeraldConfiguration.Worker.defaultBatchSize
    /// How far the feeder may run ahead of the worker, in events. Event-to-outbound latency includes
    /// the time an event waits behind the window, so a smaller window gives lower latency at a
    /// little throughput.
    public var window = 20_000
    /// Messages through each round of the raw passthrough measured for the ratio; 0: not measured.
    /// Default 1,000,000: as many as `herald bench kafka` passes and as the benchmark's events.
    /// Rounds of 400,000 (the default until 2026-11-28) lasted about half a second and measured
    /// the passthrough a quarter below its rate in longer rounds, start-up included
    /// (docs/benchmarks.md), which flattered the ratio.
    public var rawMessages = 1_000_000
    /// Rounds of the raw passthrough; the ratio is taken against their median.
    public var rawRounds = 5
    public var catalogDirectory = "catalog"
    /// The `herald` executable to run the embedded broker with, in a process of its own (`herald
    /// broker`), so that the peak RSS reported is the worker's (with the feeder), as in a deployment
    /// where the broker runs elsewhere. `nil`: the broker runs in this process.
    public var brokerExecutable: String?
    /// Further librdkafka properties for the worker's Kafka clients, as `kafka.properties` sets them
    /// (`compression.type`, `linger.ms`, ...): to try a setting on this machine. The feeder and the
    /// passthroughs the ratios are taken against keep their own.
    public var kafkaProperties: [String: String] = [:]
    /// The feeder's events without CloudEvents' `time` (see ``EventGenerator/untimed``).
    public var untimedEvents = false
    /// The feeder's event ids as random UUIDs (see ``EventGenerator/randomIDs``).
    public var randomEventIDs = false
    /// SQLite's directory cache emptied once the directory is seeded, as after a worker's start:
    /// every user's first event then reads SQLite. Seeded through the store's `apply`, as the
    /// worker's directory consumer applies changes, the users are otherwise cached as written.
    public var coldDirectoryCache = false

    public init() {}

    public struct Report: Sendable {
        public var store: String
        public var events: Int
        public var users: Int
        public var devices: Int
        public var seedSeconds: Double
        /// From the feeder's start to the worker's first batch: the feeder's producer connecting,
        /// and the first events reaching the worker. Not in ``seconds``: the raw passthrough's
        /// clock, too, starts at its first message (until 2026-12-01 the pipeline's started here).
        public var startupSeconds: Double
        /// From the worker's first batch to the last event handled.
        public var seconds: Double
        /// CPU seconds this process used from the feeder's start to the last event handled: the
        /// worker and the feeder (and the broker, if it ran in this process). Steadier than
        /// `seconds` on a host whose load comes and goes.
        public var cpuSeconds: Double
        /// The event rate after the first ``warmFraction`` of the events were handled: the directory's
        /// cache starts empty, and its first look-up of each user reads SQLite (most of them early
        /// in a run). Informational: the run's rate and ratio are over all the events. `nil`: the
        /// run was too short to tell (under a second after that point).
        public var warmEventsPerSecond: Double?
        public var counters: WorkerStatistics.Counters
        /// Peak resident memory of the process when the pipeline finished, before the raw
        /// passthrough ran: the worker and the feeder, and the broker unless it ran in a process of
        /// its own.
        public var peakResidentMegabytes: Double
        /// The broker process's peak resident memory when the pipeline finished, if it ran in one.
        public var brokerPeakResidentMegabytes: Double?
        /// Resident memory when the pipeline finished, by kind (`RssAnon`, `RssFile`, `RssShmem` of
        /// `/proc/self/status`): file-backed pages are mostly SQLite's memory-mapped database,
        /// which the kernel can drop at any time.
        public var residentByKind: [(kind: String, megabytes: Double)]
        /// How SQLite's directory cache served the run's look-ups; `nil` for PostgreSQL.
        public var directoryCache: DirectoryCacheStatistics?
        public var averageEventBytes: Int
        /// The raw passthrough's rounds, in the order they ran; empty: not measured.
        public var raw: [KafkaBenchmark.Measurement]
        /// The outbound traffic per event the pipeline wrote: records per event, and their average
        /// size (value and headers); `nil`: not measured.
        public var outboundShape: (recordsPerEvent: Double, recordBytes: Int)?
        /// Rounds of the raw passthrough writing `outboundShape` for each event it reads instead of
        /// a copy: librdkafka alone moving this run's traffic, each measurement's `messages` (and
        /// `bytes`) the events read. Empty: not measured (no raw rounds, or no outbound record).
        public var shaped: [KafkaBenchmark.Measurement]

        /// The median round of the raw passthrough by message rate, or `nil` if it was not measured.
        public var rawMedian: KafkaBenchmark.Measurement? { KafkaBenchmark.Measurement.median(of: raw) }
        /// The median round of the shaped passthrough by event rate, or `nil` if it was not measured.
        public var shapedMedian: KafkaBenchmark.Measurement? { KafkaBenchmark.Measurement.median(of: shaped) }
        /// The pipeline's event rate as a fraction of what librdkafka alone moves of the same traffic.
        public var shapedRatio: Double? { shapedMedian.map { eventsPerSecond / $0.messagesPerSecond } }

        public var eventsPerSecond: Double { Double(events) / seconds }
        public var outbound: Int { counters.outboundByProvider.values.reduce(0, +) }
        public var outboundPerSecond: Double { Double(outbound) / seconds }
        /// The pipeline's event rate as a fraction of the raw passthrough's median message rate.
        public var ratio: Double? { rawMedian.map { eventsPerSecond / $0.messagesPerSecond } }
    }

    /// The clock of a run: see ``Report/startupSeconds``, ``Report/seconds`` and ``Report/cpuSeconds``.
    struct Timing {
        var startup: Double
        var seconds: Double
        var cpuSeconds: Double
    }

    /// The share of the events after which ``Report/warmEventsPerSecond`` is measured: with the
    /// default 100,000 users, by 300,000 events nearly every user has been looked up once.
    public static let warmFraction = 0.3

    /// `events` handled from `start` to `end` per second; `nil` for less than a second, too short
    /// to say much on this host.
    static func rate(of events: Int, from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) -> Double? {
        let span = (end - start).inSeconds
        return span >= 1 ? Double(events) / span : nil
    }

    /// The domain topic the feeder writes and the worker reads.
    static let eventsTopic = "bench.events"

    /// The worker's configuration: the defaults, with the benchmark's topic, batch size and Kafka
    /// properties.
    public func workerConfiguration() -> HeraldConfiguration {
        var configuration = HeraldConfiguration()
        configuration.worker.domainTopics = [Self.eventsTopic]
        configuration.worker.batchSize = batchSize
        configuration.worker.groupID = "herald-bench-pipeline"
        configuration.kafka.properties = kafkaProperties
        return configuration
    }

    public func run(
        store: any StateStore,
        storeName: String,
        logger: Logger,
        progress: @escaping @Sendable (String) -> Void
    ) async throws -> Report {
        let catalog = try CatalogLoader.load(directory: catalogDirectory).catalog
        let seeded = ContinuousClock.now
        let runStarted = Date()
        let devices = try await Self.seedDirectory(store, users: users) { timeZone in
            Self.quietHours(after: runStarted, timeZone: timeZone)
        }
        if coldDirectoryCache, let sqlite = store as? SQLiteStore { try await sqlite.emptyDirectoryCache() }
        let seedSeconds = (ContinuousClock.now - seeded).inSeconds
        progress("seeded \(users) users with \(devices) devices in \(String(format: "%.1f", seedSeconds)) s")

        let topic = Self.eventsTopic
        let configuration = workerConfiguration()
        let topics = [
            (topic, partitions), (configuration.worker.topics.directory, partitions),
            (configuration.worker.topics.outbound, partitions), (configuration.worker.topics.eventsDeadLetter, 1),
        ].map { TopicSpecification(name: $0.0, partitions: $0.1) }
        let cluster: any BenchmarkCluster
        var brokerProcess: BrokerProcess?
        if let brokerExecutable {
            // A broker process cannot create topics later: the passthrough's are created now too.
            let passthroughTopics = (0..<rawRounds).flatMap { round in
                let raw = KafkaBenchmark.topics(.raw, round: round)
                let shaped = KafkaBenchmark.topics(.raw, round: round, shaped: true)
                return [raw.input, raw.output, shaped.input, shaped.output].map {
                    TopicSpecification(name: $0, partitions: partitions)
                }
            }
            brokerProcess = try await BrokerProcess(executable: brokerExecutable, topics: topics + passthroughTopics)
            cluster = brokerProcess!
        } else {
            let embedded = try EmbeddedKafkaCluster(brokers: 1, logger: logger)
            for topic in topics { try embedded.createTopic(topic.name, partitions: topic.partitions) }
            cluster = embedded
        }
        // A failed run stops the broker here; a finished one waits for it below.
        defer { brokerProcess?.terminate() }
        let worker = try WorkerApp.makeWorker(
            configuration: configuration,
            bootstrapServers: [cluster.bootstrapServers],
            catalog: catalog,
            store: store,
            logger: logger
        ) { worker in
            // As in `herald bench kafka`: the embedded cluster holds an empty fetch for the whole
            // wait instead of answering when data arrives.
            worker.consumer.fetchMaxWait = KafkaBenchmark.fetchMaxWait
            // No statistics: nothing here reads them, and librdkafka writes them on the wall clock
            // (every 5 s), which callgrind slows many times over: they added 2% to
            // `scripts/instructions-per-event pipeline` that a real run does not pay.
            worker.consumer.client.statisticsInterval = nil
        }
        let statistics = worker.statistics
        var configured = EventGenerator(users: users, partitions: Int32(partitions))
        configured.untimed = untimedEvents
        configured.randomIDs = randomEventIDs
        let generator = configured
        let window = feederWindow(largestEvent: generator.largestEvent(among: min(events, 10_000)))
        let (events, bootstrap) = (events, cluster.bootstrapServers)
        let totalBytes = ProgressCounter()

        let (timing, warmRate, counters) = try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await worker.run() }
            // Feed only once the worker holds its partitions: joining the group is start-up, not
            // throughput.
            let joining = ContinuousClock.now
            while worker.readiness.assignedPartitions == 0 {
                guard ContinuousClock.now - joining < Self.stallTimeout else {
                    throw PipelineBenchmarkError.stalled("the worker got no partitions")
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            let started = ContinuousClock.now
            let cpuBefore = ProcessUsage.cpuSeconds()
            group.addTask {
                let result = await DedicatedThread.run(name: "herald.feeder") {
                    Result { () throws(KafkaError) in
                        var json = JSONStreamWriter(capacity: 512)
                        return try RDKafkaBenchmarkBaseline.feed(
                            bootstrapServers: bootstrap,
                            topic: topic,
                            count: events,
                            window: window,
                            consumed: { statistics.handledEvents }
                        ) { number, key, value in
                            let partition = generator.write(number, key: &key, value: &value, using: &json)
                            totalBytes.add(value.count)
                            return partition
                        }
                    }
                }
                try result.get()
            }
            var last = (instant: started, handled: 0)
            var progressed = (instant: started, handled: 0)
            var warm: (instant: ContinuousClock.Instant, handled: Int)?
            let warmAfter = Int(Double(events) * Self.warmFraction)
            while true {
                // Often enough that the run's end is seen within a few milliseconds, as the raw
                // passthrough sees its last delivery (every 100 ms added 50 ms to a run on average).
                try await Task.sleep(for: .milliseconds(5))
                let handled = statistics.handledEvents
                if warm == nil && handled >= warmAfter { warm = (ContinuousClock.now, handled) }
                if handled >= events { break }
                let now = ContinuousClock.now
                // A failed worker or feeder surfaces only when the group is awaited: without progress,
                // stop waiting and say how far it got instead of hanging.
                if handled > progressed.handled {
                    progressed = (now, handled)
                } else if now - progressed.instant >= Self.stallTimeout {
                    throw PipelineBenchmarkError.stalled(
                        "no event handled for \(Self.stallTimeout); \(handled) of \(events) handled"
                    )
                }
                if now - last.instant >= .seconds(5) {
                    let rate = Double(handled - last.handled) / (now - last.instant).inSeconds
                    progress("\(handled) of \(events) events handled, \(Int(rate)) events/s")
                    last = (now, handled)
                }
            }
            let finished = ContinuousClock.now
            // From the worker's first batch, as the raw passthrough counts from its first message
            // (not before the feeder's start: a batch of `herald.directory` may come earlier).
            let first = max(statistics.firstBatchReceived ?? started, started)
            let timing = Timing(
                startup: (first - started).inSeconds,
                seconds: (finished - first).inSeconds,
                cpuSeconds: ProcessUsage.cpuSeconds() - cpuBefore
            )
            let warmRate = warm.flatMap { Self.rate(of: events - $0.handled, from: $0.instant, to: finished) }
            group.cancelAll()
            try await group.waitForAll()
            return (timing, warmRate, statistics.snapshot)
        }
        let peak = ProcessUsage.peakResidentMegabytes()
        let brokerPeak = brokerProcess?.peakResidentMegabytes
        let residentByKind = Self.residentByKind()
        let directoryCache = (store as? SQLiteStore)?.directoryCacheStatistics
        let averageBytes = totalBytes.value / max(events, 1)
        var passthrough: [KafkaBenchmark.Measurement] = []
        var shaped: [KafkaBenchmark.Measurement] = []
        var outboundShape: (recordsPerEvent: Double, recordBytes: Int)?
        if rawMessages > 0 {
            // A run that wrote no outbound record (a catalog or directory that sends nothing) has
            // no traffic to copy: its raw ratio is still measured and reported.
            let outbound = counters.outboundByProvider.values.reduce(0, +)
            let shape =
                outbound == 0
                ? nil
                : try await Self.outboundShape(
                    of: configuration.worker.topics.outbound,
                    on: cluster,
                    records: outbound,
                    events: events,
                    logger: logger
                )
            if let shape {
                outboundShape = (Double(shape.outputsPerThousand) / 1000, shape.value.count + shape.keyAndHeaderBytes)
            }
            var baseline = KafkaBenchmark()
            baseline.messages = rawMessages
            baseline.partitions = partitions
            baseline.messageSize = averageBytes
            baseline.batchSize = batchSize
            // Alternated round by round, so that both see the host in the same moods.
            for round in 0..<rawRounds {
                progress(
                    "raw librdkafka passthrough, round \(round + 1) of \(rawRounds): \(rawMessages) messages of \(averageBytes) bytes"
                )
                passthrough.append(try await baseline.measure(.raw, round: round, on: cluster, logger: logger))
                guard let shape else { continue }
                progress(
                    "librdkafka alone writing the pipeline's outbound traffic, round \(round + 1) of \(rawRounds)"
                )
                shaped.append(try await baseline.measure(.raw, round: round, on: cluster, shape: shape, logger: logger))
            }
        }
        await brokerProcess?.stop()
        return Report(
            store: storeName,
            events: events,
            users: users,
            devices: devices,
            seedSeconds: seedSeconds,
            startupSeconds: timing.startup,
            seconds: timing.seconds,
            cpuSeconds: timing.cpuSeconds,
            warmEventsPerSecond: warmRate,
            counters: counters,
            peakResidentMegabytes: peak,
            brokerPeakResidentMegabytes: brokerPeak,
            residentByKind: residentByKind,
            directoryCache: directoryCache,
            averageEventBytes: averageBytes,
            raw: passthrough,
            outboundShape: outboundShape,
            shaped: shaped
        )
    }

    /// The outbound traffic the pipeline wrote, for the passthrough to write the same: `records`
    /// per `events`, each a value of the average size of the records still on `topic` (the
    /// embedded cluster keeps the last few MiB of each partition) with the key and headers of the
    /// first (a user id; outbound records have no headers).
    static func outboundShape(
        of topic: String,
        on cluster: any BenchmarkCluster,
        records: Int,
        events: Int,
        logger: Logger
    ) async throws -> RDKafkaBenchmarkBaseline.Shape {
        var sample: (count: Int, bytes: Int, key: [UInt8], value: [UInt8], headers: [(name: String, value: [UInt8])]) =
            (0, 0, [], [], [])
        let reader = TopicReader(
            bootstrapServers: [cluster.bootstrapServers],
            topic: topic,
            clientID: "herald-bench-outbound-shape"
        )
        try await reader.read(logger: logger) { batch in
            for message in batch {
                guard let value = message.value else { continue }
                // The sample is the first record with bytes: the value is made by repeating it.
                if sample.value.isEmpty && !value.isEmpty {
                    sample.key = message.key.map(Array.init) ?? []
                    sample.value = Array(value)
                    sample.headers = message.headers.map { ($0.name, $0.value.map(Array.init) ?? []) }
                }
                sample.count += 1
                sample.bytes += value.count
            }
        }
        guard sample.count > 0, !sample.value.isEmpty else {
            throw PipelineBenchmarkError.unmeasured("no outbound record with a value on \(topic)")
        }
        // The first record's bytes, repeated or cut to the average size.
        let size = sample.bytes / sample.count
        let value = (0..<size).map { sample.value[$0 % sample.value.count] }
        return RDKafkaBenchmarkBaseline.Shape(
            outputsPerThousand: records * 1000 / max(events, 1),
            key: sample.key,
            value: value,
            headers: sample.headers
        )
    }

    static func residentByKind() -> [(kind: String, megabytes: Double)] {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return [] }
        return status.split(separator: "\n").compactMap { line in
            let parts = line.split(whereSeparator: { $0 == ":" || $0 == " " || $0 == "\t" })
            guard parts.count >= 2, parts[0].hasPrefix("Rss"), parts[0] != "Rss", let kilobytes = Double(parts[1])
            else {
                return nil
            }
            return (String(parts[0].dropFirst(3)).lowercased(), kilobytes / 1024)
        }
    }

    /// How long the run waits without progress before it gives up.
    static let stallTimeout: Duration = .seconds(60)

    /// ``window``, or fewer events where that many of `largestEvent` bytes would hold more than
    /// ``KafkaBenchmark/feederBytesPerPartition`` in a partition, as with few partitions. Past its
    /// 5 MiB the embedded cluster drops events the worker has not read: `--partitions 1` stalled
    /// short of its last events (196,664 of 200,000 handled).
    func feederWindow(largestEvent: Int) -> Int {
        KafkaBenchmark.feederWindow(window, partitions: partitions, messageBytes: largestEvent)
    }

    /// Quiet hours that no user of a run starting at `start` is in while it lasts: nine hours from the
    /// local hour three hours after it, in `timeZone` (at least an hour after it even where clocks go
    /// back and an hour comes twice). The worker decides quiet hours by the wall clock, so with the
    /// usual 22:00–07:00 a tenth of the users' notifications were deferred from 20:00 UTC on (Cairo
    /// first, then Oslo's at 21:00), and a run after that made 1.72 outbound messages per event
    /// instead of 1.87: what a run measured depended on the hour it ran at.
    static func quietHours(after start: Date, timeZone: String) -> QuietHours? {
        guard let zone = TimeZone(identifier: timeZone) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        func localHour(_ date: Date) -> String {
            let hour = calendar.component(.hour, from: date)
            return (hour < 10 ? "0" : "") + "\(hour):00"
        }
        return QuietHours(
            start: localHour(start.addingTimeInterval(3 * 3600)),
            end: localHour(start.addingTimeInterval(12 * 3600)),
            timeZone: timeZone
        )
    }

    /// Writes the directory through the same `apply` path a `herald.directory` consumer uses, and
    /// returns how many devices it registered. A tenth of the users have the quiet hours
    /// `quietHours` gives for their time zone (22:00–07:00 unless told).
    static func seedDirectory(
        _ store: any StateStore,
        users: Int,
        quietHours: (String) -> QuietHours? = { QuietHours(start: "22:00", end: "07:00", timeZone: $0) }
    ) async throws -> Int {
        let registeredAt = Timestamp(epochMilliseconds: 1_763_000_000_000)
        var changes: [DirectoryEvent] = []
        changes.reserveCapacity(5000)
        var devices = 0
        for user in 0..<users {
            let userID = EventGenerator.userID(user)
            let profile = EventGenerator.profiles[user % EventGenerator.profiles.count]
            for device in 0..<EventGenerator.deviceCount(of: user) {
                let (platform, provider): (String, PushProvider) =
                    switch device {
                    case 0: ("ios", .apns)
                    case 1: ("android", .fcm)
                    default: ("android", .expo)
                    }
                changes.append(
                    .deviceRegistered(
                        DeviceRegistration(
                            userID: userID,
                            deviceID: "device-\(device)",
                            platform: platform,
                            provider: provider,
                            token: EventGenerator.token(user: user, device: device, provider: provider),
                            appID: "no.getdrop.app",
                            sandbox: false,
                            // Every seventh user's second device speaks English whatever the profile says.
                            locale: device == 1 && user % 7 == 0 ? "en-GB" : nil,
                            at: registeredAt
                        )
                    )
                )
                devices += 1
            }
            changes.append(
                .profileUpdated(userID: userID, locale: profile.locale, timeZone: profile.timeZone, at: registeredAt)
            )
            if user % 4 == 0 || user % 10 == 3 {
                changes.append(
                    .preferencesUpdated(
                        userID: userID,
                        preferences: Preferences(
                            categories: ["marketing": user % 4 == 0],
                            quietHours: user % 10 == 3 ? quietHours(profile.timeZone) : nil
                        ),
                        at: registeredAt
                    )
                )
            }
            if changes.count >= 5000 {
                try await store.apply(changes)
                changes.removeAll(keepingCapacity: true)
            }
        }
        if !changes.isEmpty { try await store.apply(changes) }
        try await store.analyze()
        return devices
    }
}

/// The feeder's events: the example kinds in a fixed mix, for users picked by a seeded generator,
/// keyed and partitioned by user as producers of domain events usually do.
struct EventGenerator: Sendable {
    let users: Int
    let partitions: Int32
    /// Events without CloudEvents' `time` (an optional attribute), unless ``write(_:time:key:value:using:)``
    /// is given one.
    var untimed = false
    /// Event ids as random UUIDs (version 4, as most CloudEvents SDKs make them) instead of
    /// `bench-N`, which sort almost in the order they are made.
    var randomIDs = false

    static let profiles: [(locale: String, timeZone: String)] = [
        ("nb-NO", "Europe/Oslo"), ("en-GB", "Europe/London"), ("de-DE", "Europe/Berlin"),
        ("pl-PL", "Europe/Warsaw"), ("ar-EG", "Africa/Cairo"),
    ]

    static func userID(_ user: Int) -> String { "u-\(user)" }

    /// The size of the largest of events `0..<count`, in bytes.
    func largestEvent(among count: Int) -> Int {
        var (key, value) = ([UInt8](), [UInt8]())
        var json = JSONStreamWriter(capacity: 512)
        var largest = 0
        for number in 0..<count {
            _ = write(number, key: &key, value: &value, using: &json)
            largest = max(largest, value.count)
        }
        return largest
    }

    static func deviceCount(of user: Int) -> Int { 1 + user % 3 }

    static func token(user: Int, device: Int, provider: PushProvider) -> String {
        switch provider {
        case .apns:
            // 32 bytes in hex, as APNs device tokens are.
            let digits = String(user, radix: 16)
            return String(repeating: "0", count: 64 - digits.count) + digits
        case .fcm: return "fcm-\(user)-\(device):APA91bBenchmarkRegistrationToken"
        case .expo: return "ExponentPushToken[bench-\(user)-\(device)]"
        }
    }

    /// Writes event `number` into `value` and its user id into `key`; returns its partition.
    ///
    /// Written with ``JSONStreamWriter`` rather than interpolated into strings first: the feeder
    /// writes every event of `herald bench pipeline` on the cores the worker is measured on.
    ///
    /// - Parameter time: the event's time; default: now, so that expiry and quiet hours follow the
    ///   wall clock (none if the generator is ``untimed``).
    func write(_ number: Int, time: Timestamp? = nil, key: inout [UInt8], value: inout [UInt8]) -> Int32 {
        var json = JSONStreamWriter(capacity: 512)
        return write(number, time: time, key: &key, value: &value, using: &json)
    }

    /// ``write(_:time:key:value:)`` with a writer the caller keeps from one event to the next (its
    /// buffer then allocated once), and the ids' numbers written as digits in place instead of as
    /// strings of their own: the feeder's cost per event is the benchmark's too.
    func write(
        _ number: Int,
        time: Timestamp? = nil,
        key: inout [UInt8],
        value: inout [UInt8],
        using json: inout JSONStreamWriter
    ) -> Int32 {
        var random = UInt64(truncatingIfNeeded: number) &+ 0x5DEE_CE66
        random = SeededRandom.first(seed: random)
        let user = Int(random % UInt64(users))
        key.removeAll(keepingCapacity: true)
        key.append(contentsOf: "u-".utf8)
        Self.appendDigits(of: user, to: &key)
        // Written as its constant runs whole and its values in between: the feeder writes every
        // event on the cores the worker is measured on, and member by member, each value checked
        // for escapes, this cost about 3,800 instructions an event, against about 2,100 now (a third
        // of them the key, the copy out and the clock). The bytes are those the member-by-member
        // writer wrote (`EventGeneratorTests.sameBytes`).
        let kind = Kind(mix: (random >> 40) % 100)
        json.truncate(to: 0)
        json.raw(literal: #"{"specversion":"1.0","id":"#)
        if randomIDs {
            // Drawn from the event's number, so that the same event has the same id in every run.
            var ids = SeededRandom(seed: UInt64(truncatingIfNeeded: number) ^ 0x1D5_EED5)
            json.string(DecisionBenchmark.uuid(ids.next(), ids.next()))
        } else {
            json.raw(literal: #""bench-"#)
            json.integer(Int64(number))
            json.raw(literal: #"""#)
        }
        json.raw(literal: #","source":""#)
        json.raw(literal: kind.source)
        json.raw(literal: #"","type":""#)
        json.raw(literal: kind.type)
        json.raw(literal: #"""#)
        if let time = time ?? (untimed ? nil : WallClock().now()) {
            json.raw(literal: #","time":"#)
            json.timestamp(time)
        }
        json.raw(literal: #","datacontenttype":"application/json","data":{"#)
        let user64 = Int64(user)
        switch kind {
        case .messageReceived:
            json.raw(literal: #""recipientIds":["u-"#)
            json.integer(user64)
            json.raw(literal: #""],"chatId":"chat-"#)
            json.integer(Int64(number % 997))
            json.raw(literal: #"","senderName":"Ana","preview":"Are we still on for dinner?","unreadCount":"#)
            json.integer(Int64(1 + number % 9))
        case .orderConfirmed:
            json.raw(literal: #""userId":"u-"#)
            json.integer(user64)
            json.raw(literal: #"","orderId":"ord-"#)
            json.integer(Int64(number))
            json.raw(literal: #"","total":{"amount":1234.50,"currency":"NOK"},"itemCount":"#)
            json.integer(Int64(1 + number % 5))
            json.raw(literal: #","deliveryNote":"Leave at the door""#)
        case .orderShipped:
            json.raw(literal: #""userId":"u-"#)
            json.integer(user64)
            json.raw(literal: #"","orderId":"ord-"#)
            json.integer(Int64(number))
            json.raw(
                literal:
                    #"","carrier":"Posten","estimatedDelivery":"2026-11-24T15:00:00Z","trackingUrl":"https://sporing.posten.no/ord-"#
            )
            json.integer(Int64(number))
            json.raw(literal: #"""#)
        case .paymentReceived:
            // A string amount: producers send both, and the catalog reads both.
            json.raw(literal: #""userId":"u-"#)
            json.integer(user64)
            json.raw(literal: #"","paymentId":"pay-"#)
            json.integer(Int64(number))
            json.raw(literal: #"","amount":{"amount":"5000","currency":"NOK"},"senderName":"Ahmad Karimi""#)
        case .paymentFailed:
            json.raw(literal: #""userId":"u-"#)
            json.integer(user64)
            json.raw(literal: #"","paymentId":"pay-"#)
            json.integer(Int64(number))
            json.raw(literal: #"","amount":{"amount":249.90,"currency":"EUR"},"reason":"card_declined""#)
        case .securityLogin:
            json.raw(literal: #""userId":"u-"#)
            json.integer(user64)
            json.raw(literal: #"","deviceName":"iPhone 15","location":"Oslo, Norway""#)
        case .promoOffer:
            json.raw(literal: #""userIds":["u-"#)
            json.integer(user64)
            json.raw(literal: #"","u-"#)
            json.integer(Int64((user + 1) % users))
            json.raw(
                literal:
                    #""],"offerId":"black-friday","headline":"Black Friday","discountPercent":30,"validUntil":"2026-11-30T23:59:00Z""#
            )
            // Half the offers carry a banner: a rich notification with an image on every provider.
            if number % 2 == 0 { json.raw(literal: #","imageUrl":"https://getdrop.no/img/black-friday.jpg""#) }
        case .accountSynced:
            json.raw(literal: #""userId":"u-"#)
            json.integer(user64)
            json.raw(literal: #"","accountId":"acc-"#)
            json.integer(user64)
            json.raw(literal: #"","balance":{"amount":10250.75,"currency":"NOK"}"#)
        case .messagesRead:
            json.raw(literal: #""userId":"u-"#)
            json.integer(user64)
            json.raw(literal: #"","chatId":"chat-"#)
            json.integer(Int64(number % 997))
            json.raw(literal: #"","unreadCount":"#)
            json.integer(Int64(number % 9))
        }
        json.raw(literal: "}}")
        value.removeAll(keepingCapacity: true)
        json.withBytes { value.append(contentsOf: $0) }
        return Int32(user % Int(partitions))
    }

    /// Appends `number`'s decimal digits (it is not negative).
    static func appendDigits(of number: Int, to bytes: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            let count = digits(of: number, into: buffer)
            bytes.append(contentsOf: UnsafeMutableBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// Writes `number`'s decimal digits (it is not negative) at the start of `buffer` (20 bytes at
    /// least); returns how many.
    private static func digits(of number: Int, into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        precondition(number >= 0, "a negative number in a benchmark id")
        var remaining = number
        var count = 0
        repeat {
            buffer[count] = UInt8(ascii: "0") + UInt8(remaining % 10)
            remaining /= 10
            count += 1
        } while remaining > 0
        var digits = UnsafeMutableBufferPointer(rebasing: buffer[..<count])
        digits.reverse()
        return count
    }

    /// The example kinds in the feeder's mix, by a number below 100: 38% chat messages, every kind of
    /// the example catalog represented (2% messages read, badge-only; 4% silent balance refreshes).
    enum Kind {
        case messageReceived, orderConfirmed, orderShipped, paymentReceived, paymentFailed, securityLogin, promoOffer
        case accountSynced, messagesRead

        init(mix: UInt64) {
            self =
                switch mix {
                case 0..<38: .messageReceived
                case 38..<40: .messagesRead
                case 40..<52: .orderConfirmed
                case 52..<62: .orderShipped
                case 62..<70: .paymentReceived
                case 70..<76: .paymentFailed
                case 76..<86: .securityLogin
                case 86..<96: .promoOffer
                default: .accountSynced
                }
        }

        var type: StaticString {
            switch self {
            case .messageReceived: "message.received"
            case .orderConfirmed: "order.confirmed"
            case .orderShipped: "order.shipped"
            case .paymentReceived: "payment.received"
            case .paymentFailed: "payment.failed"
            case .securityLogin: "security.login"
            case .promoOffer: "promo.offer"
            case .accountSynced: "account.balance_updated"
            case .messagesRead: "message.read"
            }
        }

        var source: StaticString {
            switch self {
            case .messageReceived, .messagesRead: "/chat"
            case .orderConfirmed, .orderShipped: "/orders"
            case .paymentReceived, .paymentFailed, .accountSynced: "/payments"
            case .securityLogin: "/identity"
            case .promoOffer: "/marketing"
            }
        }
    }
}

/// Why `herald bench pipeline` gave up.
public enum PipelineBenchmarkError: Error, CustomStringConvertible {
    case stalled(String)
    case unmeasured(String)

    public var description: String {
        switch self {
        case .stalled(let what): "the pipeline stalled: \(what)"
        case .unmeasured(let what): "the benchmark could not measure the outbound traffic: \(what)"
        }
    }
}
