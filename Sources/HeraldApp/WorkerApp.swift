import HeraldCatalog
import HeraldKafka
import HeraldPolicy
import HeraldSender
import HeraldStore
import HeraldWorker
import Logging
import ServiceLifecycle

/// The roles one `herald run` process can take.
public enum HeraldRole: String, CaseIterable, Sendable {
    case worker, sender
}

/// `herald run`: the worker and the sender built from a ``HeraldConfiguration`` and run until
/// SIGTERM or SIGINT, then shut down gracefully within their shutdown deadlines.
public enum WorkerApp {
    /// Runs the worker alone.
    public static func run(configuration: HeraldConfiguration, logger: Logger) async throws {
        try await run(configuration: configuration, roles: [.worker], logger: logger)
    }

    /// What `/metrics` reads of SQLite's directory cache, for a store that has one.
    static func directoryCacheStatistics(of store: any StateStore) -> (@Sendable () -> DirectoryCacheStatistics)? {
        guard let sqlite = store as? SQLiteStore else { return nil }
        return { sqlite.directoryCacheStatistics }
    }

    /// Runs `roles` in one process until SIGTERM or SIGINT: the embedded broker first if the
    /// configuration asks for it, the store, the roles, and `/metrics` and `/health`.
    public static func run(configuration: HeraldConfiguration, roles: Set<HeraldRole>, logger: Logger) async throws {
        Redact.setKey(configuration.logUserHashKey)
        if configuration.logUserHashKey == nil {
            // The analytics topics these roles write, where user ids are hashed the same way.
            var analytics: [String] = []
            if case .hashed = configuration.analyticsRecipients {
                if roles.contains(.worker), let topic = configuration.worker.topics.decisions {
                    analytics.append(topic)
                }
                if roles.contains(.sender) {
                    analytics += [configuration.sender.decisionsTopic, configuration.sender.deliveriesTopic]
                        .compactMap { $0 }.filter { !analytics.contains($0) }
                }
            }
            let also = analytics.isEmpty ? "" : "and on \(analytics.joined(separator: ", ")) "
            logger.notice(
                "log.user_hash_key_file is not set: user ids in logs \(also)are hashed without a key, which hides little of ids that can be guessed"
            )
        }
        let catalog = roles.contains(.worker) ? try loadCatalog(configuration) : nil
        let location = try StoreLocation(configuration.store).withCallTimeout(configuration.storeTimeout)
        var services: [any Service] = []
        var bootstrap = configuration.kafka.bootstrapServers
        if bootstrap == ["embedded"] {
            let broker = try EmbeddedBrokerService(
                brokers: 1,
                topics: TopicSpecification.heraldDefaults,
                logger: logger
            )
            bootstrap = [broker.cluster.bootstrapServers]
            services.append(broker)
            logger.notice("embedded Kafka cluster for development", metadata: ["bootstrap": "\(bootstrap[0])"])
        }
        let providers =
            roles.contains(.sender) ? try SenderApp.providerClients(configuration.providers, clock: WallClock()) : nil
        do {
            try await run(
                configuration: configuration,
                location: location,
                services: services,
                servers: bootstrap,
                catalog: catalog,
                providers: providers,
                roles: roles,
                logger: logger
            )
        } catch {
            await providers?.shutdown()
            throw error
        }
        await providers?.shutdown()
    }

    private static func run(
        configuration: HeraldConfiguration,
        location: StoreLocation,
        services: [any Service],
        servers: [String],
        catalog: Catalog?,
        providers: ProviderClients?,
        roles: Set<HeraldRole>,
        logger: Logger
    ) async throws {
        try await location.withStore(
            logger: logger,
            directoryCache: configuration.directoryCache,
            sqliteMemoryMapMegabytes: configuration.sqliteMemoryMapMegabytes,
            sqlitePageCacheMegabytes: configuration.sqlitePageCacheMegabytes,
            sqliteSynchronous: configuration.sqliteSynchronous,
            maximumDevicesPerUser: configuration.maximumDevicesPerUser
        ) { store in
            let worker = try catalog.map { catalog in
                try makeWorker(
                    configuration: configuration,
                    bootstrapServers: servers,
                    catalog: catalog,
                    store: store,
                    logger: logger
                )
            }
            let sender = try providers.map { providers in
                try SenderApp.makeSender(
                    configuration: configuration,
                    bootstrapServers: servers,
                    providers: providers,
                    ledger: store,
                    logger: logger
                )
            }
            var watched: [KafkaReachability.Consumer] = []
            if let worker { watched.append(.init(name: "worker") { worker.brokerConnections }) }
            if let sender { watched.append(.init(name: "sender") { sender.brokerConnections }) }
            // Beside the roles: stopped after them.
            var observers: [any Service] = [KafkaReachability(consumers: watched, servers: servers, logger: logger)]
            if !configuration.httpListen.isEmpty {
                let directoryCache = Self.directoryCacheStatistics(of: store)
                observers.append(
                    try HTTPEndpoints(
                        listen: configuration.httpListen,
                        worker: worker,
                        sender: sender,
                        directoryCache: directoryCache,
                        logger: logger
                    )
                )
            }
            let roleServices: [any Service] = [worker as (any Service)?, sender].compactMap { $0 }
            var groupConfiguration = ServiceGroupConfiguration(
                services: (services + observers).map { .init(service: $0) }
                    + roleServices.map { .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup) },
                gracefulShutdownSignals: [.sigterm, .sigint],
                cancellationSignals: [],
                logger: logger
            )
            groupConfiguration.maximumGracefulShutdownDuration = max(
                roles.contains(.worker) ? configuration.worker.shutdownDeadline : .zero,
                roles.contains(.sender) ? configuration.sender.shutdownDeadline : .zero
            )
            let group = ServiceGroup(configuration: groupConfiguration)
            var started: Logger.Metadata = [
                "roles": "\(roles.map(\.rawValue).sorted())", "store": "\(location)",
                "topics": "\(configuration.worker.domainTopics)", "allocator": "\(MemoryAllocator.description)",
            ]
            for (name, version) in BuildInfo.components { started[name] = "\(version)" }
            logger.info("herald starting", metadata: started)
            try await group.run()
        }
    }

    public static func makeWorker(
        configuration: HeraldConfiguration,
        bootstrapServers: [String],
        catalog: Catalog,
        store: any StateStore,
        clock: any HeraldClock = WallClock(),
        logger: Logger,
        configure: (inout Worker.Configuration) -> Void = { _ in }
    ) throws -> Worker {
        let worker = configuration.worker
        var consumer = KafkaConsumerConfiguration(
            groupID: worker.groupID,
            topics: worker.domainTopics + [worker.topics.directory]
        )
        consumer.client = clientOptions(configuration.kafka, bootstrapServers: bootstrapServers)
        consumer.sessionTimeout = configuration.kafka.sessionTimeout
        consumer.maxBatchSize = worker.batchSize
        consumer.maxBufferedMessages = max(10 * worker.batchSize, 10_000)
        var producer = KafkaProducerConfiguration()
        producer.client = consumer.client
        consumer.client.statisticsInterval = consumerStatisticsInterval
        var workerConfiguration = Worker.Configuration(consumer: consumer, producer: producer)
        workerConfiguration.dueWorkInterval = worker.dueWorkInterval
        workerConfiguration.purge = configuration.purge
        configure(&workerConfiguration)
        let processor = EventProcessor(
            catalog: catalog,
            policy: Policy(catalog: catalog),
            store: store,
            clock: clock,
            topics: worker.topics,
            unknownEventTypes: worker.unknownEventTypes,
            statistics: WorkerStatistics(),
            logger: logger,
            maximumDevicesPerRecipient: worker.maximumDevicesPerRecipient
        )
        return try Worker(configuration: workerConfiguration, processor: processor, logger: logger)
    }

    /// How often the worker's and the sender's consumers report their librdkafka statistics: what
    /// `herald_kafka_brokers_up` and ``KafkaReachability`` read.
    static let consumerStatisticsInterval: Duration = .seconds(5)

    /// The options every Kafka client of the worker and the sender gets from `kafka.*`.
    public static func clientOptions(
        _ kafka: HeraldConfiguration.Kafka,
        bootstrapServers: [String]
    ) -> KafkaClientOptions {
        var options = KafkaClientOptions()
        options.bootstrapServers = bootstrapServers
        options.clientID = kafka.clientID
        // Distinct names: `kafka.properties` may not set the ones Herald sets (see managedProperties).
        for (name, value) in kafka.librdkafkaProperties { options.properties[name] = value }
        return options
    }
}
