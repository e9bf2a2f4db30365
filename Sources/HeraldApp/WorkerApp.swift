import HeraldCatalog
import HeraldKafka
import HeraldPolicy
import HeraldStore
import HeraldWorker
import Logging
import ServiceLifecycle

/// `herald run --role worker`: the worker built from a ``HeraldConfiguration`` and run until
/// SIGTERM or SIGINT, then shut down gracefully within `worker.shutdown_deadline`.
public enum WorkerApp {
    /// Loads the catalog, opens the store, connects to Kafka (or starts the embedded cluster when
    /// `kafka.bootstrap_servers` is `embedded`) and runs the worker.
    public static func run(configuration: HeraldConfiguration, logger: Logger) async throws {
        let catalog: Catalog
        do {
            catalog = try CatalogLoader.load(directory: configuration.catalogDirectory).catalog
        } catch {
            throw ConfigurationError(
                "catalog.directory: \(error.description)\ncatalog check failed: fix the catalog first"
            )
        }
        let location = try StoreLocation(configuration.store)
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
        let servers = bootstrap
        try await location.withStore(logger: logger, directoryCache: configuration.directoryCache) { store in
            let worker = try makeWorker(
                configuration: configuration,
                bootstrapServers: servers,
                catalog: catalog,
                store: store,
                logger: logger
            )
            var endpoints: [any Service] = []
            if !configuration.httpListen.isEmpty {
                endpoints.append(try HTTPEndpoints(listen: configuration.httpListen, worker: worker, logger: logger))
            }
            var groupConfiguration = ServiceGroupConfiguration(
                services: (services + endpoints).map { .init(service: $0) } + [
                    .init(service: worker, successTerminationBehavior: .gracefullyShutdownGroup)
                ],
                gracefulShutdownSignals: [.sigterm, .sigint],
                cancellationSignals: [],
                logger: logger
            )
            groupConfiguration.maximumGracefulShutdownDuration = configuration.worker.shutdownDeadline
            let group = ServiceGroup(configuration: groupConfiguration)
            logger.info(
                "worker starting",
                metadata: [
                    "store": "\(location)", "topics": "\(configuration.worker.domainTopics)",
                    "group": "\(configuration.worker.groupID)",
                ]
            )
            try await group.run()
        }
    }

    /// The worker for `configuration`, against `store`, on `bootstrapServers`.
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
        var workerConfiguration = Worker.Configuration(consumer: consumer, producer: producer)
        workerConfiguration.dueWorkInterval = worker.dueWorkInterval
        configure(&workerConfiguration)
        let processor = EventProcessor(
            catalog: catalog,
            policy: .defaults,
            store: store,
            clock: clock,
            topics: worker.topics,
            unknownEventTypes: worker.unknownEventTypes,
            statistics: WorkerStatistics(),
            logger: logger
        )
        return try Worker(configuration: workerConfiguration, processor: processor, logger: logger)
    }

    static func clientOptions(_ kafka: HeraldConfiguration.Kafka, bootstrapServers: [String]) -> KafkaClientOptions {
        var options = KafkaClientOptions()
        options.bootstrapServers = bootstrapServers
        options.clientID = kafka.clientID
        if kafka.securityProtocol != "plaintext" { options.properties["security.protocol"] = kafka.securityProtocol }
        if !kafka.saslMechanism.isEmpty {
            options.properties["sasl.mechanism"] = kafka.saslMechanism
            options.properties["sasl.username"] = kafka.saslUsername
        }
        if let password = kafka.saslPassword { options.properties["sasl.password"] = password }
        return options
    }
}
