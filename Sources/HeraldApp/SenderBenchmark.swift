import Foundation
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldProviders
import HeraldSender
import HeraldSimulator
import HeraldStore
import HeraldWorker
import Logging

/// `herald bench sender`: APNs calls through the sender against the provider simulator, compared in
/// the same run with `h2load` driving the same simulator directly (the most a client can get out of
/// it on this machine).
///
/// The sender consumes `herald.outbound` on the embedded broker, checks and writes its delivery
/// ledger (SQLite), calls the simulator over HTTP/2 and TLS with a signed provider token, and
/// commits, as in production. A feeder produces the outbound messages while it runs, at most
/// `window` ahead of what the simulator has accepted (the embedded broker keeps about 5 MiB per
/// partition). The messages are encoded before the clock starts: a sender beside a real cluster
/// does not pay for making its input.
public struct SenderBenchmark: Sendable {
    public var calls = 200_000
    public var window = 30_000
    /// h2load's connections and streams per connection.
    public var h2loadClients = 2
    public var h2loadStreams = 256
    /// Whether h2load drives the simulator first. Off to profile the sender alone: the simulator
    /// runs in this process, so its answers to h2load would be counted with the sender's work, and
    /// valgrind cannot start h2load anyway.
    public var runsH2load = true
    /// The APNs client's frame-level transport (the default), or async-http-client.
    public var usesFrameConnections = true
    /// APNs requests in flight and frame connections; nil: the configuration's defaults.
    public var concurrency: Int?
    public var connections: Int?
    /// How long an APNs request may take before it is a `transport.timeout`; nil: the
    /// configuration's. The simulator answers in this process: a host too busy to run it times
    /// calls out as if the provider had not answered.
    public var requestTimeout: Duration?

    public init() {}

    public struct Report: Sendable {
        public var calls: Int
        public var senderSeconds: Double
        /// nil if h2load was not run, not installed or failed.
        public var h2loadRequestsPerSecond: Double?
        /// The h2load command line (its token elided), nil if h2load was not run.
        public var h2loadCommand: String?
        public var peakResidentMegabytes: Double
        public var failures: [String: Int]
        /// CPU seconds (user + system) while the sender ran: this process, simulator and embedded
        /// broker included.
        public var senderCPUSeconds: Double = 0
        /// CPU seconds while h2load ran: the simulator (this process) and h2load.
        public var h2loadSimulatorCPUSeconds: Double = 0
        public var h2loadCPUSeconds: Double = 0

        public var senderCallsPerSecond: Double { Double(calls) / senderSeconds }
        public var ratio: Double? { h2loadRequestsPerSecond.map { senderCallsPerSecond / $0 } }
    }

    static let bundleID = "no.getdrop.app"

    /// One APNs outbound message; every message has its own token and notification id.
    static func message(_ index: Int) throws -> OutboundMessage {
        let hex = String(index, radix: 16)
        let token = String(repeating: "a", count: 64 - hex.count) + hex
        let device = Device(token: token, appID: bundleID)
        let push = PushMessage(
            notificationID: "bench-\(index)",
            kind: "order.confirmed",
            title: "Order confirmed",
            body: "Your order ord-\(index) of 1 234,50 kr is confirmed and on its way.",
            deepLink: "https://getdrop.no/orders/ord-\(index)",
            createdAt: Timestamp(epochMilliseconds: 1_763_726_400_000)
        )
        let request = try APNsPayloadBuilder.build(push, for: device)
        return OutboundMessage(
            notificationID: push.notificationID,
            eventID: "event-\(index)",
            kind: push.kind,
            category: "transactional",
            recipient: "user-\(index % 100_000)",
            provider: .apns,
            app: bundleID,
            environment: .production,
            token: token,
            request: .init(
                path: request.path,
                headers: request.headers.map { .init($0.name, $0.value) },
                body: request.body
            ),
            createdAt: push.createdAt,
            expiresAt: nil
        )
    }

    public func run(logger: Logger, log: @escaping @Sendable (String) -> Void) async throws -> Report {
        let providers = try SimulatedProviders(logger: logger)
        let server = providers.server
        let serving = Task { try await server.run() }
        defer { serving.cancel() }
        let baseURL = await server.baseURL()

        // h2load first, against the same simulator, unless the sender is measured alone.
        let h2load = runsH2load ? try runH2load(providers: providers, baseURL: baseURL, log: log) : nil

        // The sender on the embedded broker.
        let cluster = try EmbeddedKafkaCluster(logger: logger)
        for (topic, partitions) in [
            ("herald.outbound", 12), ("herald.outbound.retry.1", 4), ("herald.outbound.retry.2", 4),
            ("herald.outbound.retry.3", 4), ("herald.outbound.retry.4", 4), ("herald.outbound.dlq", 4),
            ("herald.directory", 4),
        ] {
            try cluster.createTopic(topic, partitions: partitions)
        }
        let ledgerPath = FileManager.default.temporaryDirectory.appendingPathComponent(
            "herald-bench-ledger-\(getpid()).sqlite"
        ).path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: ledgerPath + suffix) }
        }
        let ledger = try SQLiteStore(path: ledgerPath)
        var configuration = HeraldConfiguration()
        configuration.providers = try await providers.providers()
        configuration.providers.expo.enabled = false
        configuration.providers.apns.usesFrameConnections = usesFrameConnections
        if let concurrency { configuration.providers.apns.concurrency = concurrency }
        if let connections { configuration.providers.apns.frameConnections = connections }
        if let requestTimeout { configuration.providers.apns.requestTimeout = requestTimeout }
        let clients = try SenderApp.providerClients(configuration.providers, clock: WallClock())
        do {
            var report = try await measure(
                clients: clients,
                cluster: cluster,
                ledger: ledger,
                configuration: configuration,
                providers: providers,
                log: log,
                logger: logger
            )
            if let h2load {
                report.h2loadRequestsPerSecond = h2load.requestsPerSecond
                report.h2loadCommand = h2load.command
                report.h2loadSimulatorCPUSeconds = h2load.simulatorCPUSeconds
                report.h2loadCPUSeconds = h2load.cpuSeconds
            }
            return report
        } catch {
            await clients.shutdown()
            throw error
        }
    }

    private func measure(
        clients: ProviderClients,
        cluster: EmbeddedKafkaCluster,
        ledger: SQLiteStore,
        configuration: HeraldConfiguration,
        providers: SimulatedProviders,
        log: @escaping @Sendable (String) -> Void,
        logger: Logger
    ) async throws -> Report {
        let sender = try SenderApp.makeSender(
            configuration: configuration,
            bootstrapServers: [cluster.bootstrapServers],
            providers: clients,
            ledger: ledger,
            logger: logger
        ) { sender in
            sender.consumer.fetchMaxWait = .milliseconds(20)
        }
        var producerConfiguration = KafkaProducerConfiguration()
        producerConfiguration.client.bootstrapServers = [cluster.bootstrapServers]
        let producer = try KafkaProducer(configuration: producerConfiguration, logger: logger)
        let simulator = providers.simulator
        let sending = Task {
            do { try await sender.run() } catch { log("sender failed: \(error)") }
        }
        let waitStarted = ContinuousClock.now
        let producing = Task { try await producer.run() }
        defer {
            sending.cancel()
            producing.cancel()
        }
        // Wait for the sender's partitions before the clock starts.
        log("sender: waiting for partitions")
        while sender.assignedPartitions == 0 {
            try await Task.sleep(for: .milliseconds(20))
            if ContinuousClock.now - waitStarted > .seconds(60) { throw SenderBenchmarkError.stalled(accepted: 0) }
        }
        log("sender: \(sender.assignedPartitions) partitions")

        let records = try (0..<calls).map { index in
            let message = try Self.message(index)
            return KafkaProducerRecord(
                topic: "herald.outbound",
                key: KafkaBytes(message.recipient),
                value: KafkaBytes(message.encoded())
            )
        }
        // h2load's requests were accepted too: count from here.
        let baseline = simulator.statistics.accepted
        let started = ContinuousClock.now
        let cpuBefore = ProcessUsage.cpuSeconds(RUSAGE_SELF)
        var produced = 0
        var lastReport = started
        while simulator.statistics.accepted - baseline < calls {
            let accepted = simulator.statistics.accepted - baseline
            if produced < calls && produced - accepted < window {
                let count = min(5000, calls - produced)
                _ = try await producer.enqueue(Array(records[produced..<(produced + count)]))
                produced += count
            } else {
                try await Task.sleep(for: .milliseconds(5))
            }
            if ContinuousClock.now - lastReport > .seconds(5) {
                lastReport = ContinuousClock.now
                let done = simulator.statistics.accepted - baseline
                log("… \(done) accepted, \(Int(Double(done) / (lastReport - started).inSeconds)) calls/s")
            }
            if ContinuousClock.now - started > .seconds(600) { throw SenderBenchmarkError.stalled(accepted: accepted) }
        }
        let elapsed = (ContinuousClock.now - started).inSeconds
        let cpu = ProcessUsage.cpuSeconds(RUSAGE_SELF) - cpuBefore
        let counters = sender.statistics.snapshot
        // The sender and the producer close while the embedded broker is still up (it goes when
        // this returns), so their last commits and flushes reach it.
        sending.cancel()
        await sending.value
        producing.cancel()
        _ = try? await producing.value
        await clients.shutdown()
        return Report(
            calls: calls,
            senderSeconds: elapsed,
            peakResidentMegabytes: ProcessUsage.peakResidentMegabytes(),
            failures: counters.answersByReason,
            senderCPUSeconds: cpu
        )
    }

    /// What h2load made of the simulator: its command line, shown without the token; its rate, nil
    /// if it is not installed or failed; and the CPU it and the simulator spent.
    struct H2loadRun {
        var command: String
        var requestsPerSecond: Double?
        var simulatorCPUSeconds: Double
        var cpuSeconds: Double
    }

    /// Drives the simulator with h2load, with a real provider token and the sender's payload.
    private func runH2load(
        providers: SimulatedProviders,
        baseURL: String,
        log: @Sendable (String) -> Void
    ) throws -> H2loadRun {
        let sample = try Self.message(0)
        let bodyFile = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-\(getpid()).json")
        try Data(sample.request.body).write(to: bodyFile)
        defer { try? FileManager.default.removeItem(at: bodyFile) }
        let token = try providers.apnsKey.token(issuedAt: WallClock().now())
        var arguments = [
            "-n", String(calls), "-c", String(h2loadClients), "-m", String(h2loadStreams), "-d", bodyFile.path,
            "-H", "authorization: bearer \(token)",
        ]
        for header in sample.request.headers where header.name != "apns-id" {
            arguments += ["-H", "\(header.name): \(header.value)"]
        }
        arguments.append(baseURL + sample.request.path)
        let shown = (["h2load"] + arguments).map { $0.hasPrefix("authorization") ? "'authorization: bearer …'" : $0 }
            .joined(separator: " ")
        log("h2load: \(shown)")
        let (processBefore, childrenBefore) = (
            ProcessUsage.cpuSeconds(RUSAGE_SELF), ProcessUsage.cpuSeconds(RUSAGE_CHILDREN)
        )
        let rate = try Self.h2load(arguments)
        let run = H2loadRun(
            command: shown,
            requestsPerSecond: rate,
            simulatorCPUSeconds: ProcessUsage.cpuSeconds(RUSAGE_SELF) - processBefore,
            cpuSeconds: ProcessUsage.cpuSeconds(RUSAGE_CHILDREN) - childrenBefore
        )
        if let rate { log("h2load: \(Int(rate)) requests/s") } else { log("h2load: not installed or failed") }
        return run
    }

    /// Runs h2load and reads its `finished in …, N req/s` line; nil if it is missing or failed.
    static func h2load(_ arguments: [String]) throws -> Double? {
        guard
            let path = ["/usr/bin/h2load", "/usr/local/bin/h2load"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        // "status codes: 200000 2xx, ..." must show the requests succeeded.
        guard process.terminationStatus == 0, text.contains(" 2xx"),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }),
            let rate = line.split(separator: ",").dropFirst().first?.split(separator: " ").first.flatMap({ Double($0) })
        else { return nil }
        return rate
    }
}

public enum SenderBenchmarkError: Error, CustomStringConvertible {
    case stalled(accepted: Int)

    public var description: String {
        switch self {
        case .stalled(let accepted): "the sender stalled after \(accepted) calls"
        }
    }
}
