import Foundation
import HeraldCatalog
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldSender
import HeraldSimulator
import HeraldStore
import HeraldWorker
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `herald bench scale`: many worker and sender processes on one PostgreSQL, checked at the
/// provider simulator.
///
/// The benchmark process hosts what a deployment gets from outside — the embedded broker, the
/// provider simulator and a feeder publishing `events` mixed events as the example services would —
/// and starts `workers` `herald run --role worker` and `senders` `herald run --role sender`
/// processes, exactly as a deployment runs them, on a fresh database. With `killWorker`, one worker
/// is killed with SIGKILL a third of the way through and a new one started.
///
/// What it checks, from what the pipeline itself publishes (the `herald.decisions` and
/// `herald.outbound` topics, read as they are written) and from what the simulator accepted:
/// - every event was decided (none lost with the killed worker);
/// - every provider call on `herald.outbound` was accepted by the simulator exactly once;
/// - no recipient got more notifications in a throttle window than the rule allows, although the
///   workers decided concurrently;
/// - every digest window that collected notifications produced exactly one digest.
///
/// The messages throttle is shortened (a copy of the catalog, `messagesLimit` per
/// `messagesWindow`) so that digests come due during the run.
public struct ScaleBenchmark: Sendable {
    public var events = 100_000
    public var users = 5_000
    public var partitions = 12
    public var workers = 3
    public var senders = 2
    public var killWorker = false
    /// A PostgreSQL URL; each run creates a database of its own on that server.
    public var storeURL: String
    public var catalogDirectory = "catalog"
    /// The `herald` executable the worker and sender processes run.
    public var executable: String
    public var messagesLimit = 2
    public var messagesWindow: Duration = .seconds(10)
    /// How many failed windows a report lists.
    public static let failuresShown = 10
    /// How far the feeder may run ahead of the decisions, in events.
    public var window = 10_000
    /// How far the provider calls on `herald.outbound` may run ahead of the simulator's acceptances:
    /// the embedded broker keeps only about 5 MiB per partition (some 3,000 calls), and a call
    /// dropped before a sender read it would be a loss of the benchmark's making. Calls
    /// are about 2 KiB on the topic.
    public var outboundWindow = 12_000
    /// How long the run may make no progress before it gives up.
    public var stallTimeout: Duration = .seconds(90)

    public init(storeURL: String, executable: String) {
        self.storeURL = storeURL
        self.executable = executable
    }

    public struct Report: Sendable {
        public var workers: Int
        public var senders: Int
        public var events: Int
        public var devices: Int
        /// From the first event published to the last event decided.
        public var seconds: Double
        /// From the first event published to the last provider call accepted (digests included).
        public var deliverySeconds: Double
        public var decidedEvents: Int
        public var outboundCalls: Int
        public var accepted: Int
        public var lostDeliveries: Int
        public var duplicatedDeliveries: Int
        public var throttleWindows: Int
        public var throttleViolations: Int
        public var digestsExpected: Int
        public var digestsMissing: Int
        public var digestsDuplicated: Int
        public var decisionsByReason: [String: Int]
        public var killed: String?
        /// The senders' call outcomes, retries and dead letters, summed over the senders.
        public var senderCounters: [String: Double]
        /// Calls that got no answer, by "provider: cause", from the senders' logs.
        public var unansweredCauses: [String: Int]
        public var completed: Bool
        public var logDirectory: String
        /// The windows that failed the throttle and digest checks, each with what was counted in
        /// it (the first few).
        public var failures: [String]

        public var lostEvents: Int { events - decidedEvents }
        public var eventsPerSecond: Double { Double(decidedEvents) / max(seconds, 0.001) }

        /// Calls that timed out or whose connection failed: the request may have arrived, and the
        /// retry may then deliver it a second time (at-least-once). Any other duplicate is a defect.
        public var unansweredCalls: Int {
            senderCounters.reduce(0) { sum, counter in
                let unanswered =
                    counter.key.hasPrefix("herald_provider_answers_total")
                    && (counter.key.contains("\"transport.timeout\"")
                        || counter.key.contains("\"transport.connection\""))
                return sum + (unanswered ? Int(counter.value) : 0)
            }
        }

        public var passed: Bool {
            completed && lostEvents == 0 && lostDeliveries == 0 && duplicatedDeliveries <= unansweredCalls
                && throttleViolations == 0 && digestsMissing == 0 && digestsDuplicated == 0
        }
    }

    public func run(logger: Logger, progress: @escaping @Sendable (String) -> Void) async throws -> Report {
        let work = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("herald-scale-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let catalogCopy = try Self.shortenedCatalog(
            from: catalogDirectory,
            into: work.appendingPathComponent("catalog"),
            limit: messagesLimit,
            window: messagesWindow
        )
        let catalog = try CatalogLoader.load(directory: catalogCopy).catalog
        let policy = Policy(catalog: catalog)

        // A database of its own, seeded through the same `apply` path a directory consumer uses.
        let databaseURL = try await Self.freshDatabase(on: storeURL, logger: logger)
        let location = try StoreLocation(databaseURL)
        // Quiet hours that start after the run, as the pipeline benchmark's: the workers keep them
        // by the wall clock, and what a run does would otherwise depend on the hour it runs at.
        let runStarted = Date()
        let devices = try await location.withStore(logger: logger) { store in
            try await PipelineBenchmark.seedDirectory(store, users: users) { timeZone in
                PipelineBenchmark.quietHours(after: runStarted, timeZone: timeZone)
            }
        }
        progress("\(workers) worker(s), \(senders) sender(s): seeded \(users) users with \(devices) devices")

        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: logger)
        let topic = "scale.events"
        for name in [
            topic, "herald.directory", "herald.outbound", "herald.decisions", "herald.events.dlq",
            "herald.outbound.dlq",
        ] + (1...4).map({ "herald.outbound.retry.\($0)" }) {
            try cluster.createTopic(name, partitions: partitions)
        }
        let simulated = try SimulatedProviders(host: "127.0.0.1", port: 0, logger: logger)
        let server = simulated.server
        let serving = Task { try await server.run() }
        defer { serving.cancel() }
        let providersFile = try await simulated.writeCredentials(to: work.appendingPathComponent("simulator").path)
        let configurationFile = work.appendingPathComponent("herald.yaml")
        try Self.configuration(
            bootstrap: cluster.bootstrapServers,
            topic: topic,
            store: databaseURL,
            catalog: catalogCopy
        ).write(to: configurationFile, atomically: true, encoding: .utf8)

        let observed = ScaleObservations(policy: policy, catalog: catalog)
        let observer = try Self.observer(bootstrap: cluster.bootstrapServers, logger: logger)
        let observing = Task { try await observer.run() }
        let recording = Task {
            for await batch in observer.messages {
                observed.record(batch)
                observer.markDone(batch)
            }
        }
        defer {
            observer.triggerShutdown()
            recording.cancel()
            observing.cancel()
        }

        ChildProcesses.stopOnSignals()
        let processes = ScaleProcesses(
            executable: executable,
            configuration: configurationFile.path,
            providers: providersFile,
            logs: work
        )
        defer { processes.stopAll() }
        for _ in 0..<senders { try processes.start(role: "sender") }
        for _ in 0..<workers { try processes.start(role: "worker") }
        progress("metrics: " + processes.metrics.joined(separator: ", "))

        var producerConfiguration = KafkaProducerConfiguration()
        producerConfiguration.client.bootstrapServers = [cluster.bootstrapServers]
        let producer = try KafkaProducer(configuration: producerConfiguration, logger: logger)
        let producing = Task { try await producer.run() }
        defer {
            producer.triggerShutdown()
            producing.cancel()
        }

        let generator = EventGenerator(users: users, partitions: Int32(partitions))
        let started = ContinuousClock.now
        var published = 0
        var killed: String?
        var lastProgress = (instant: started, events: 0, accepted: 0)
        var lastReport = started
        var decidedAt: ContinuousClock.Instant?
        var settledAt: ContinuousClock.Instant?
        var completed = false
        while true {
            let snapshot = observed.snapshot
            // Different calls accepted: a call accepted twice must not stand in for one not yet sent.
            let accepted = simulated.simulator.distinctAccepted
            let now = ContinuousClock.now
            if published < events && published - snapshot.decidedEvents < window
                && snapshot.outboundCalls - accepted < outboundWindow
            {
                var records: [KafkaProducerRecord] = []
                var key: [UInt8] = []
                var value: [UInt8] = []
                for number in published..<min(events, published + 500) {
                    let partition = generator.write(number, key: &key, value: &value)
                    records.append(
                        KafkaProducerRecord(
                            topic: topic,
                            partition: partition,
                            key: KafkaBytes(key),
                            value: KafkaBytes(value)
                        )
                    )
                }
                if let failure = try await producer.enqueue(records).failures().first { throw failure.error }
                published += records.count
                continue
            }
            if killWorker && killed == nil && snapshot.decidedEvents >= events / 3 {
                let pid = try processes.killWorker()
                try processes.start(role: "worker")
                killed =
                    "worker pid \(pid) killed (SIGKILL) after \(snapshot.decidedEvents) events decided; a new one started"
                progress(killed!)
            }
            if decidedAt == nil && snapshot.decidedEvents >= events { decidedAt = now }
            // Done once every event is decided, every digest window that collected something has
            // closed and been flushed, and every call on herald.outbound has been accepted.
            let digestsDue = snapshot.latestDigestDue.map { WallClock().now().epochMilliseconds > $0 + 3000 } ?? true
            if decidedAt != nil && digestsDue && accepted >= observed.distinctCallCount && snapshot.outboundCalls > 0 {
                if settledAt == nil { settledAt = now }
                // A moment more, to catch anything sent twice.
                if now - settledAt! >= .seconds(2) {
                    completed = true
                    break
                }
            } else {
                settledAt = nil
            }
            if snapshot.decidedEvents != lastProgress.events || accepted != lastProgress.accepted {
                lastProgress = (now, snapshot.decidedEvents, accepted)
            } else if now - lastProgress.instant >= stallTimeout {
                let answers = simulated.simulator.statistics
                progress(
                    "no progress for \(stallTimeout): \(snapshot.decidedEvents) of \(events) events decided, \(accepted) of \(snapshot.outboundCalls) calls accepted; the simulator answered \(answers.answers.sorted { $0.key < $1.key }) \(answers.reasons.sorted { $0.key < $1.key }); logs in \(work.path)"
                )
                break
            }
            if let exited = processes.unexpectedExit() {
                progress("\(exited) exited on its own; logs in \(work.path)")
                break
            }
            if now - lastReport >= .seconds(5) {
                progress(
                    "\(snapshot.decidedEvents) of \(events) events decided, \(accepted) of \(snapshot.outboundCalls) provider calls accepted"
                )
                lastReport = now
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let finished = ContinuousClock.now
        let result = observed.verify(acceptedCount: simulated.simulator.acceptedCount(id:))
        let senderCounters = processes.senderCounters([
            "herald_provider_calls_total", "herald_retries_total", "herald_provider_answers_total",
            "herald_outbound_dead_letters_total", "herald_sends_skipped_delivered_total",
        ])
        let decidedEvents = observed.snapshot.decidedEvents
        let report = Report(
            workers: workers,
            senders: senders,
            events: events,
            devices: devices,
            seconds: ((decidedAt ?? finished) - started).inSeconds,
            deliverySeconds: ((settledAt ?? finished) - started).inSeconds,
            decidedEvents: decidedEvents,
            outboundCalls: observed.distinctCallCount,
            accepted: simulated.simulator.statistics.accepted,
            lostDeliveries: result.lost,
            duplicatedDeliveries: result.duplicated,
            throttleWindows: result.throttleWindows,
            throttleViolations: result.throttleViolations,
            digestsExpected: result.digestsExpected,
            digestsMissing: result.digestsMissing,
            digestsDuplicated: result.digestsDuplicated,
            decisionsByReason: observed.decisionsByReason,
            killed: killed,
            senderCounters: senderCounters,
            unansweredCauses: processes.unansweredCauses(),
            completed: completed,
            logDirectory: work.path,
            failures: Array(result.failures.prefix(Self.failuresShown))
        )
        // The processes' logs and configuration are kept only for a run that needs looking into.
        if report.passed { try? FileManager.default.removeItem(at: work) }
        return report
    }

    /// The worker's and the sender's configuration, as a deployment writes it.
    static func configuration(bootstrap: String, topic: String, store: String, catalog: String) -> String {
        """
        # Written by `herald bench scale`.
        kafka:
          bootstrap_servers: [\(bootstrap)]
          # A killed worker's partitions move after this long.
          session_timeout: 6s
        worker:
          group_id: herald-scale-worker
          topics: [\(topic)]
          decisions_topic: herald.decisions
        analytics:
          # The benchmark matches decisions to the outbound calls, which name users by their ids.
          recipient: clear
        sender:
          group_id: herald-scale-sender
        providers:
          # Seven processes share the machine's cores with the broker and PostgreSQL. A call that times
          # out is retried, and may then arrive twice (the provider had accepted it): the deadline is
          # longer than production's so that an overloaded machine is not mistaken for a lost answer.
          apns:
            request_timeout: 30s
          fcm:
            request_timeout: 30s
          expo:
            request_timeout: 30s
        store:
          url: "\(store)"
        catalog:
          directory: "\(catalog)"
        http:
          listen: ""
        log:
          level: warning
          format: json

        """
    }

    /// A copy of the catalog whose messages throttle is `limit` per `window`, then a digest.
    static func shortenedCatalog(
        from source: String,
        into destination: URL,
        limit: Int,
        window: Duration
    ) throws
        -> String
    {
        try FileManager.default.copyItem(atPath: source, toPath: destination.path)
        let file = destination.appendingPathComponent("catalog.yaml")
        let text = try String(contentsOf: file, encoding: .utf8)
        let rule = "- { limit: 100, window: 1h, overLimit: digest }"
        guard text.contains(rule) else {
            throw ConfigurationError(
                "\(source)/catalog.yaml: expected the example catalog's messages rule '\(rule)' to shorten"
            )
        }
        let shortened = text.replacingOccurrences(
            of: rule,
            with: "- { limit: \(limit), window: \(window.milliseconds / 1000)s, overLimit: digest }"
        )
        try shortened.write(to: file, atomically: true, encoding: .utf8)
        return destination.path
    }

    /// Creates `herald_scale_<n>` on the server `url` names and returns its URL.
    static func freshDatabase(on url: String, logger: Logger) async throws -> String {
        guard var components = URLComponents(string: url) else {
            throw ConfigurationError("--store: not a PostgreSQL URL")
        }
        let configuration = try PostgresStore.Configuration(url: url)
        let store = PostgresStore(configuration: configuration, logger: logger)
        let name = "herald_scale_\(UInt32.random(in: 0...UInt32.max))"
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.run() }
            defer { group.cancelAll() }
            try await store.createDatabase(named: name)
        }
        components.path = "/" + name
        return components.string ?? url
    }

    static func observer(bootstrap: String, logger: Logger) throws -> KafkaConsumer {
        var configuration = KafkaConsumerConfiguration(
            groupID: "herald-scale-observer",
            topics: ["herald.decisions", "herald.outbound"]
        )
        configuration.client.bootstrapServers = [bootstrap]
        configuration.autoOffsetReset = .earliest
        configuration.fetchMaxWait = .milliseconds(100)
        return try KafkaConsumer(configuration: configuration, logger: logger)
    }
}

/// What the pipeline published, as the benchmark read it.
final class ScaleObservations: Sendable {
    struct Snapshot: Sendable {
        var decidedEvents = 0
        var outboundCalls = 0
        /// The latest window end a digested notification waits for, in epoch milliseconds.
        var latestDigestDue: Int64?
    }

    struct Result {
        var lost = 0
        var duplicated = 0
        var throttleWindows = 0
        var throttleViolations = 0
        var digestsExpected = 0
        var digestsMissing = 0
        var digestsDuplicated = 0
        /// What failed the throttle and digest checks, a line for each window.
        var failures: [String] = []
    }

    private struct State: Sendable {
        var decidedEvents: Set<String> = []
        var decisionsByReason: [String: Int] = [:]
        /// Sent decisions already counted: a redelivered event is decided again with the same answer.
        var sent: Set<String> = []
        /// The sent decisions counted in each throttle window ("recipient|rule|window start"), as
        /// a failed check shows them.
        var sentPerWindow: [String: [String]] = [:]
        /// Windows that digested something, by "recipient|rule|window start".
        var digestWindows: Set<String> = []
        var latestDigestDue: Int64?
        /// Provider calls by the id the simulator counts them under.
        var calls: Set<String> = []
        /// Digest events produced per "recipient|rule|window start".
        var digestEvents: [String: Set<String>] = [:]
    }

    private let state = Mutex(State())
    let policy: Policy
    /// The category of each kind.
    let categories: [String: String]

    init(policy: Policy, catalog: Catalog) {
        self.policy = policy
        self.categories = Dictionary(catalog.kinds.map { ($0.name, $0.category) }, uniquingKeysWith: { a, _ in a })
    }

    var snapshot: Snapshot {
        state.withLock {
            Snapshot(
                decidedEvents: $0.decidedEvents.count,
                outboundCalls: $0.calls.count,
                latestDigestDue: $0.latestDigestDue
            )
        }
    }

    var distinctCallCount: Int { state.withLock { $0.calls.count } }
    var decisionsByReason: [String: Int] { state.withLock { $0.decisionsByReason } }

    /// One decision record, parsed.
    struct DecisionRecord: Sendable {
        var eventID: String
        var kind: String
        var recipient: String
        var reason: String
        var decidedAt: Int64
        var dueAt: Int64?
        /// For a `duplicate`: the reason decided the first time.
        var recorded: String?
        /// For a `duplicate`: when it was decided the first time.
        var recordedAt: Int64?
    }

    /// One provider call, with the id the simulator counts it under.
    struct CallRecord: Sendable {
        var id: String
        var eventID: String
        var kind: String
        var recipient: String
    }

    /// Parses the batch first and only then takes the lock: the benchmark's loop reads the counts
    /// while the next batch is parsed, and the simulator in this process must not wait behind either.
    func record(_ batch: [KafkaMessage]) {
        var decisions: [DecisionRecord] = []
        var calls: [CallRecord] = []
        for message in batch {
            guard let value = message.value else { continue }
            if message.topic == "herald.decisions" {
                if let decision = Self.decision(value) { decisions.append(decision) }
            } else if let call = try? OutboundMessage(decoding: value) {
                let id =
                    call.provider == .apns
                    ? call.request.headers.first { $0.name == "apns-id" }?.value ?? call.notificationID
                    : call.notificationID
                calls.append(CallRecord(id: id, eventID: call.eventID, kind: call.kind, recipient: call.recipient))
            }
        }
        state.withLock { state in
            for decision in decisions { record(decision, into: &state) }
            for call in calls { record(call, into: &state) }
        }
    }

    static func decision(_ value: KafkaBytes) -> DecisionRecord? {
        guard case .object(let object)? = try? JSONParser().parse(Array(value)),
            let eventID = object["eventId"]?.stringValue, let kind = object["kind"]?.stringValue,
            let recipient = object["recipient"]?.stringValue, let reason = object["reason"]?.stringValue,
            let decidedAt = object["decidedAt"]?.stringValue.flatMap(Timestamp.init(rfc3339:))
        else { return nil }
        return DecisionRecord(
            eventID: eventID,
            kind: kind,
            recipient: recipient,
            reason: reason,
            decidedAt: decidedAt.epochMilliseconds,
            dueAt: object["dueAt"]?.stringValue.flatMap(Timestamp.init(rfc3339:))?.epochMilliseconds,
            recorded: object["recorded"]?.stringValue,
            recordedAt: object["recordedAt"]?.stringValue.flatMap(Timestamp.init(rfc3339:))?.epochMilliseconds
        )
    }

    private func record(_ decision: DecisionRecord, into state: inout State) {
        state.decisionsByReason[decision.reason, default: 0] += 1
        if !decision.eventID.hasPrefix("digest:") { state.decidedEvents.insert(decision.eventID) }
        // A redelivered event's decision is the one recorded the first time.
        switch decision.reason == "duplicate" ? decision.recorded ?? "" : decision.reason {
        case "sent":
            guard state.sent.insert("\(decision.eventID)|\(decision.kind)|\(decision.recipient)").inserted,
                let category = categories[decision.kind]
            else { return }
            for rule in policy.categories[category]?.throttle ?? [] where rule.kind == nil || rule.kind == decision.kind
            {
                // In the window it was counted in: a redelivery's is the first decision's, which a
                // worker killed before its records went out never wrote (the redelivery can come
                // a window or more later).
                let counted = decision.recordedAt ?? decision.decidedAt
                let window = rule.window.milliseconds
                let start = counted - counted % window
                state.sentPerWindow["\(decision.recipient)|\(rule.name)|\(start)", default: []].append(
                    Self.describe(decision)
                )
            }
        case "throttled.digested":
            guard let due = decision.dueAt, let category = categories[decision.kind],
                let rule = policy.categories[category]?.throttle.first(where: {
                    $0.overLimit == .digest && ($0.kind == nil || $0.kind == decision.kind)
                })
            else { return }
            // The window from when the digest is due, not from when this record was written: a
            // redelivery (labelled `duplicate`) can be decided in a later window than the first time.
            let start = due - Policy.digestGrace.milliseconds - rule.window.milliseconds
            state.digestWindows.insert("\(decision.recipient)|\(rule.name)|\(start)")
            state.latestDigestDue = max(state.latestDigestDue ?? 0, due)
        default:
            return
        }
    }

    private func record(_ call: CallRecord, into state: inout State) {
        state.calls.insert(call.id)
        // "digest:<rule>:<window start>:<first event>"
        let parts = call.eventID.split(separator: ":", maxSplits: 3)
        guard parts.count == 4, parts[0] == "digest", let start = Int64(parts[2]) else { return }
        state.digestEvents["\(call.recipient)|\(parts[1])|\(start)", default: []].insert(call.eventID)
    }

    /// A sent decision as a failed check lists it: the event, when it was decided, and for a
    /// redelivery when it was first decided.
    static func describe(_ decision: DecisionRecord) -> String {
        var text = "\(decision.eventID) decided \(Timestamp(epochMilliseconds: decision.decidedAt))"
        if decision.reason == "duplicate" {
            text += " (a redelivery; first decided "
            text += decision.recordedAt.map { "\(Timestamp(epochMilliseconds: $0)))" } ?? "at a time not recorded)"
        }
        return text
    }

    func verify(acceptedCount: (String) -> Int) -> Result {
        state.withLock { state in
            var result = Result()
            for id in state.calls {
                let count = acceptedCount(id)
                if count == 0 { result.lost += 1 }
                if count > 1 { result.duplicated += 1 }
            }
            result.throttleWindows = state.sentPerWindow.count
            for (key, sent) in state.sentPerWindow {
                let parts = key.split(separator: "|")
                let limit =
                    policy.categories.values.lazy.flatMap(\.throttle).first { $0.name == parts[1] }?.limit ?? Int.max
                guard sent.count > limit else { continue }
                result.throttleViolations += 1
                result.failures.append("window \(key) over its limit of \(limit): \(sent.joined(separator: "; "))")
            }
            result.digestsExpected = state.digestWindows.count
            for window in state.digestWindows {
                let produced = state.digestEvents[window] ?? []
                if produced.isEmpty {
                    result.digestsMissing += 1
                    result.failures.append("no digest for window \(window)")
                }
                if produced.count > 1 {
                    result.digestsDuplicated += 1
                    result.failures.append("\(produced.count) digests for window \(window): \(produced.sorted())")
                }
            }
            // A digest nobody's decisions asked for is a duplicate too.
            for (window, produced) in state.digestEvents where !state.digestWindows.contains(window) {
                result.digestsDuplicated += 1
                result.failures.append("a digest no decision asked for, window \(window): \(produced.sorted())")
            }
            result.failures.sort()
            return result
        }
    }
}

/// The worker and sender processes of a run.
final class ScaleProcesses: @unchecked Sendable {
    // @unchecked: used from the benchmark's one task only; `stopAll` runs in its `defer`.
    let executable: String
    let configuration: String
    let providers: String
    let logs: URL
    private var running: [(role: String, process: Process)] = []
    private var killed: Set<Int32> = []

    init(executable: String, configuration: String, providers: String, logs: URL) {
        self.executable = executable
        self.configuration = configuration
        self.providers = providers
        self.logs = logs
    }

    func start(role: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments =
            ["run", "--role", role, "--config", configuration] + (role == "sender" ? ["--config", providers] : [])
        let log = logs.appendingPathComponent("\(role)-\(running.count).log")
        // A file that cannot be created fails the open below, naming it.
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: log)
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        // Each process serves /metrics on a port of its own, for looking inside a run.
        let port = try Self.freePort()
        var environment = ProcessInfo.processInfo.environment
        environment["HERALD_HTTP_LISTEN"] = "127.0.0.1:\(port)"
        process.environment = environment
        try process.run()
        ChildProcesses.register(process.processIdentifier)
        running.append((role, process))
        metrics.append("\(role) pid \(process.processIdentifier): http://127.0.0.1:\(port)/metrics")
        endpoints.append((role, process, "http://127.0.0.1:\(port)/metrics"))
    }

    /// Where each process started so far serves its metrics.
    private(set) var metrics: [String] = []
    private var endpoints: [(role: String, process: Process, url: String)] = []

    /// The running senders' counters whose names start with one of `prefixes`, summed over the
    /// senders ("herald_retries_total{step=\"1\"}" → 12), read with curl.
    func senderCounters(_ prefixes: [String]) -> [String: Double] {
        var sums: [String: Double] = [:]
        for endpoint in endpoints where endpoint.role == "sender" && endpoint.process.isRunning {
            let curl = Process()
            curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            curl.arguments = ["-s", "--max-time", "5", endpoint.url]
            let output = Pipe()
            curl.standardOutput = output
            curl.standardError = FileHandle.nullDevice
            guard (try? curl.run()) != nil else { continue }
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            curl.waitUntilExit()
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                guard prefixes.contains(where: { line.hasPrefix($0) }), let space = line.lastIndex(of: " "),
                    let value = Double(line[line.index(after: space)...])
                else { continue }
                sums[String(line[..<space]), default: 0] += value
            }
        }
        return sums
    }

    /// The senders' ``Sender/unansweredCallsMessage`` warnings summed by "provider: cause".
    func unansweredCauses() -> [String: Int] {
        var causes: [String: Int] = [:]
        for (index, started) in running.enumerated() where started.role == "sender" {
            let log = logs.appendingPathComponent("sender-\(index).log")
            guard let text = try? String(contentsOf: log, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") where line.contains(Sender.unansweredCallsMessage) {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    object["msg"] as? String == Sender.unansweredCallsMessage,
                    let provider = object["provider"] as? String, let cause = object["cause"] as? String,
                    let calls = (object["calls"] as? String).flatMap({ Int($0) })
                else { continue }
                causes["\(provider): \(cause)", default: 0] += calls
            }
        }
        return causes
    }

    /// A TCP port nothing listens on at the moment.
    static func freePort() throws -> Int {
        guard let port = LoopbackPort.unused() else { throw ConfigurationError("cannot find a free port on 127.0.0.1") }
        return port
    }

    /// Kills the first running worker with SIGKILL; returns its process id.
    func killWorker() throws -> Int32 {
        guard let worker = running.first(where: { $0.role == "worker" && $0.process.isRunning })?.process else {
            throw ConfigurationError("no worker is running to kill")
        }
        let pid = worker.processIdentifier
        killed.insert(pid)
        kill(pid, SIGKILL)
        worker.waitUntilExit()
        return pid
    }

    /// A process that exited without being told to, if any.
    func unexpectedExit() -> String? {
        for (role, process) in running where !process.isRunning && !killed.contains(process.processIdentifier) {
            return "the \(role) (pid \(process.processIdentifier), status \(process.terminationStatus))"
        }
        return nil
    }

    /// SIGTERM to every process, then SIGKILL to any still running after 30 s.
    func stopAll() {
        for (_, process) in running where process.isRunning { process.terminate() }
        let deadline = Date().addingTimeInterval(30)
        for (_, process) in running {
            while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
    }
}

/// The worker and sender processes a benchmark started: stopped with it when it is interrupted
/// (Ctrl-C, or SIGTERM from a timeout), so that none is left consuming from a broker that is gone.
enum ChildProcesses {
    private static let pids = Mutex<Set<Int32>>([])
    // Written once, under `installing`; kept only so that the sources stay alive.
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []
    private static let installing = Mutex(false)

    static func register(_ pid: Int32) { pids.withLock { _ = $0.insert(pid) } }

    static func stopOnSignals() {
        installing.withLock { installed in
            guard !installed else { return }
            installed = true
            for number in [SIGINT, SIGTERM] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler {
                    for pid in pids.withLock({ $0 }) { kill(pid, SIGKILL) }
                    exit(128 + number)
                }
                source.resume()
                sources.append(source)
            }
        }
    }
}
