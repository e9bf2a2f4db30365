import Foundation
import HeraldCatalog
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldReplay
import HeraldSender
import HeraldSimulator
import HeraldStore
import HeraldWorker
import Logging
import ServiceLifecycle

/// `herald dev` (what `make run` runs): the whole pipeline in one process on embedded defaults —
/// the embedded broker, SQLite, the provider simulator, the worker and the sender — fed a sample
/// directory and a sample event log, showing each notification as a phone would display it.
///
/// The clock starts at the log's first event time and runs at wall-clock speed, so quiet hours,
/// throttle windows and expiries come out the same on every run, whenever it is run.
public struct DevRun: Sendable {
    public var catalogDirectory = "catalog"
    public var directoryFile = "samples/dev/directory.jsonl"
    public var eventsFile = "samples/dev/events.jsonl"
    /// Keep running after the sample, showing notifications for events external producers send.
    public var follow = false
    /// How long the sample may take before the run gives up and says what is still outstanding.
    public var timeout: Duration = .seconds(120)
    /// Tokens the simulator answers with 503 until the sender has retried once: the retry path.
    public var retryOnceTokens: [String] = []
    /// Tokens the simulator reports as unregistered (APNs 410, FCM UNREGISTERED, Expo
    /// DeviceNotRegistered): the token-invalidation path.
    public var unregisteredTokens: [String] = []

    public init() {}

    /// What the run did, for the closing table and the tests.
    public struct Summary: Sendable {
        public var directoryChanges = 0
        public var published = 0
        public var worker = WorkerStatistics.Counters()
        public var sender = SenderStatistics.Counters()
        public var notificationsShown = 0
        /// Whether every event was handled and every provider call settled before the timeout.
        public var settled = false

        /// Outbound messages the sender has finished with: answered other than "retry", expired,
        /// or skipped as already delivered.
        public var senderSettled: Int {
            sender.callsByOutcome.filter { !$0.key.hasSuffix(" retry") }.values.reduce(0, +) + sender.expired
                + sender.skippedAlreadyDelivered
        }

        public var outbound: Int { worker.outboundByProvider.values.reduce(0, +) }
        public var retried: Int { sender.retriesByStep.values.reduce(0, +) }
        public var delivered: Int {
            sender.callsByOutcome.filter { $0.key.hasSuffix(" delivered") }.values.reduce(0, +)
        }

        /// `throttled.dropped` and `throttled.deferred` (digests are counted apart).
        public func decisions(_ prefix: String) -> Int {
            worker.decisionsByReason.filter { $0.key.hasPrefix(prefix) }.values.reduce(0, +)
        }
    }

    /// A line of the sample log or directory, published as it is (a poison line stays poison).
    struct LogLine {
        var topic: String
        var key: String?
        var value: String
    }

    public func run(logger: Logger, output: @escaping @Sendable (String) -> Void) async throws -> Summary {
        let catalog: Catalog
        do {
            catalog = try CatalogLoader.load(directory: catalogDirectory).catalog
        } catch {
            throw ConfigurationError("\(catalogDirectory): \(error.description)\nrun `herald catalog check` first")
        }
        let directory = try Self.lines(of: directoryFile) { _ in "herald.directory" }
        let events = try Self.lines(of: eventsFile, topic: Self.domainTopic)
        let clock = AnchoredClock(start: Self.firstTime(of: events) ?? WallClock().now())

        let work = FileManager.default.temporaryDirectory.appendingPathComponent("herald-dev-\(getpid())")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }

        let simulated = try SimulatedProviders(keepsBodies: true, clock: clock, logger: logger)
        let answered = clock.now()
        for token in retryOnceTokens {
            simulated.simulator.script(token: token, .init(status: 503, reason: "ServiceUnavailable"))
        }
        for token in unregisteredTokens {
            simulated.simulator.unregister(token: token, at: Timestamp(epochMilliseconds: answered.epochMilliseconds))
        }
        // Served before the rest starts: the providers' settings need its port.
        let server = simulated.server
        let serving = Task { try await server.run() }
        defer { serving.cancel() }
        let broker = try EmbeddedBrokerService(brokers: 1, topics: TopicSpecification.heraldDefaults, logger: logger)
        let bootstrap = broker.cluster.bootstrapServers
        var configuration = HeraldConfiguration()
        configuration.kafka.bootstrapServers = [bootstrap]
        configuration.providers = try await simulated.providers()
        // Short retry delays, so that the sample's retry is seen within the run.
        configuration.sender.retryDelays = [.seconds(1), .seconds(2), .seconds(4), .seconds(8)]
        configuration.sender.retryJitter = 0
        let providers = try SenderApp.providerClients(configuration.providers, clock: clock)
        do {
            let summary = try await run(
                catalog: catalog,
                directory: directory,
                events: events,
                configuration: configuration,
                broker: broker,
                simulated: simulated,
                providers: providers,
                storePath: work.appendingPathComponent("herald.sqlite").path,
                clock: clock,
                logger: logger,
                output: output
            )
            await providers.shutdown()
            return summary
        } catch {
            await providers.shutdown()
            throw error
        }
    }

    private func run(
        catalog: Catalog,
        directory: [LogLine],
        events: [LogLine],
        configuration: HeraldConfiguration,
        broker: EmbeddedBrokerService,
        simulated: SimulatedProviders,
        providers: ProviderClients,
        storePath: String,
        clock: AnchoredClock,
        logger: Logger,
        output: @escaping @Sendable (String) -> Void
    ) async throws -> Summary {
        let store = try SQLiteStore(path: storePath)
        let bootstrap = [broker.cluster.bootstrapServers]
        let worker = try WorkerApp.makeWorker(
            configuration: configuration,
            bootstrapServers: bootstrap,
            catalog: catalog,
            store: store,
            clock: clock,
            logger: logger
        ) { worker in
            // The embedded broker holds an empty fetch for the whole wait: keep the demo snappy.
            worker.consumer.fetchMaxWait = .milliseconds(50)
        }
        let sender = try SenderApp.makeSender(
            configuration: configuration,
            bootstrapServers: bootstrap,
            providers: providers,
            ledger: store,
            clock: clock,
            logger: logger
        ) { sender in
            sender.consumer.fetchMaxWait = .milliseconds(50)
        }
        let driver = DevDriver(
            run: self,
            directory: directory,
            events: events,
            bootstrap: bootstrap,
            worker: worker,
            sender: sender,
            simulated: simulated,
            devices: Self.devices(in: directory),
            logger: logger,
            output: output
        )
        var groupConfiguration = ServiceGroupConfiguration(
            services: [
                .init(service: broker), .init(service: sender),
                .init(service: worker), .init(service: driver, successTerminationBehavior: .gracefullyShutdownGroup),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint],
            cancellationSignals: [],
            logger: logger
        )
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(30)
        try await ServiceGroup(configuration: groupConfiguration).run()
        return driver.summary
    }

    /// The non-empty lines of `path`, each with the topic it is published to.
    static func lines(of path: String, topic: (JSONObject?) -> String) throws -> [LogLine] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("cannot read \(path)")
        }
        return String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).compactMap { line in
            let text = line.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !text.isEmpty else { return nil }
            let object: JSONObject? =
                if case .object(let object)? = try? JSONParser().parse(Array(text.utf8)) { object } else { nil }
            return LogLine(
                topic: topic(object),
                key: object.flatMap { ReplayRecord.key(ofData: $0["data"]) },
                value: text
            )
        }
    }

    /// The example domain topic an event belongs on, by its type's first word; anything else (a
    /// poison line) goes on `orders.events`, where the worker dead-letters it.
    static func domainTopic(of event: JSONObject?) -> String {
        let type = event?["type"]?.stringValue ?? ""
        let prefix = type.split(separator: ".").first.map(String.init) ?? ""
        return [
            "order": "orders.events", "payment": "payments.events", "security": "security.events",
            "message": "messages.events", "promo": "marketing.events",
        ][prefix] ?? "orders.events"
    }

    static func firstTime(of events: [LogLine]) -> Timestamp? {
        for line in events {
            guard case .object(let event)? = try? JSONParser().parse(Array(line.value.utf8)),
                let time = event["time"]?.stringValue.flatMap(Timestamp.init(rfc3339:))
            else { continue }
            return time
        }
        return nil
    }

    /// What a phone shows beside a notification: the device each token belongs to.
    struct DeviceLabel: Sendable {
        var deviceID: String
        var platform: String
        var locale: String
        var app: String
    }

    static func devices(in directory: [LogLine]) -> [String: DeviceLabel] {
        var devices: [String: DeviceLabel] = [:]
        var locales: [String: String] = [:]
        var registrations: [(user: String, token: String, label: DeviceLabel)] = []
        for line in directory {
            guard case .object(let event)? = try? JSONParser().parse(Array(line.value.utf8)),
                case .object(let data)? = event["data"], let user = data["userId"]?.stringValue
            else { continue }
            switch event["type"]?.stringValue {
            case "user.profile.updated": locales[user] = data["locale"]?.stringValue
            case "device.registered":
                guard let token = data["token"]?.stringValue else { continue }
                let label = DeviceLabel(
                    deviceID: data["deviceId"]?.stringValue ?? "?",
                    platform: data["platform"]?.stringValue ?? "?",
                    locale: data["locale"]?.stringValue ?? "",
                    app: data["appId"]?.stringValue ?? "?"
                )
                registrations.append((user, token, label))
            default: continue
            }
        }
        for (user, token, var label) in registrations {
            if label.locale.isEmpty { label.locale = locales[user] ?? "default" }
            devices[token] = label
        }
        return devices
    }
}

/// The clock `herald dev` runs on: from `start`, at wall-clock speed.
struct AnchoredClock: HeraldClock {
    let start: Timestamp
    let started = ContinuousClock.now

    func now() -> Timestamp {
        let elapsed = ContinuousClock.now - started
        return Timestamp(
            epochMilliseconds: start.epochMilliseconds + elapsed.components.seconds * 1000
                + elapsed.components.attoseconds / 1_000_000_000_000_000
        )
    }
}
