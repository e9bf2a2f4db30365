import HeraldKafka
import HeraldPolicy
import HeraldSender
import HeraldStore
import Logging

/// Builds the sender from the configuration.
public enum SenderApp {
    /// The provider clients the configuration has credentials for. Expo needs none.
    public static func providerClients(
        _ providers: HeraldConfiguration.Providers,
        clock: any HeraldClock
    ) throws -> ProviderClients {
        var clients = ProviderClients()
        if let key = providers.apns.key {
            var apns = APNsClient.Configuration(credentials: [.init(key: key)])
            apns.productionURL = providers.apns.productionURL
            apns.sandboxURL = providers.apns.sandboxURL
            apns.concurrency = providers.apns.concurrency
            apns.requestTimeout = providers.apns.requestTimeout
            apns.connectTimeout = providers.apns.connectTimeout
            apns.usesFrameConnections = providers.apns.usesFrameConnections
            apns.frameConnections = providers.apns.frameConnections
            clients.apns = try APNsClient(
                configuration: apns,
                clock: clock,
                extraTrustRootsPEM: providers.trustRootsPEM
            )
        }
        if let account = providers.fcm.serviceAccount {
            var fcm = FCMClient.Configuration(credentials: [.init(account: account)])
            fcm.baseURL = providers.fcm.baseURL
            fcm.concurrency = providers.fcm.concurrency
            fcm.requestTimeout = providers.fcm.requestTimeout
            fcm.connectTimeout = providers.fcm.connectTimeout
            clients.fcm = try FCMClient(configuration: fcm, clock: clock, extraTrustRootsPEM: providers.trustRootsPEM)
        }
        if providers.expo.enabled {
            var expo = ExpoClient.Configuration()
            expo.baseURL = providers.expo.baseURL
            expo.accessToken = providers.expo.accessToken
            expo.concurrency = providers.expo.concurrency
            expo.requestTimeout = providers.expo.requestTimeout
            expo.connectTimeout = providers.expo.connectTimeout
            clients.expo = try ExpoClient(configuration: expo, extraTrustRootsPEM: providers.trustRootsPEM)
        }
        return clients
    }

    public static func makeSender(
        configuration: HeraldConfiguration,
        bootstrapServers: [String],
        providers: ProviderClients,
        ledger: any DeliveryLedger,
        clock: any HeraldClock = WallClock(),
        logger: Logger,
        configure: (inout Sender.Configuration) -> Void = { _ in }
    ) throws -> Sender {
        let settings = configuration.sender
        var consumer = KafkaConsumerConfiguration(groupID: settings.groupID, topics: [])
        consumer.client = WorkerApp.clientOptions(configuration.kafka, bootstrapServers: bootstrapServers)
        consumer.sessionTimeout = configuration.kafka.sessionTimeout
        consumer.maxBatchSize = settings.batchSize
        consumer.maxBufferedMessages = max(10 * settings.batchSize, 10_000)
        var producer = KafkaProducerConfiguration()
        producer.client = consumer.client
        consumer.client.statisticsInterval = WorkerApp.consumerStatisticsInterval
        var senderConfiguration = Sender.Configuration(consumer: consumer, producer: producer)
        senderConfiguration.topics.outbound = settings.outboundTopic
        senderConfiguration.topics.directory = settings.directoryTopic
        senderConfiguration.topics.deadLetter = settings.deadLetterTopic
        senderConfiguration.topics.decisions = settings.decisionsTopic
        senderConfiguration.topics.deliveries = settings.deliveriesTopic
        senderConfiguration.topics.analyticsRecipients = configuration.analyticsRecipients
        senderConfiguration.retry = RetryPolicy(
            topicPrefix: settings.retryTopicPrefix,
            delays: settings.retryDelays,
            jitter: settings.retryJitter
        )
        senderConfiguration.receiptDelay = settings.receiptDelay
        senderConfiguration.purge = configuration.purge
        senderConfiguration.circuitBreaker.failureThreshold = settings.circuitFailureThreshold
        senderConfiguration.circuitBreaker.openDuration = settings.circuitOpenDuration
        configure(&senderConfiguration)
        return try Sender(
            configuration: senderConfiguration,
            providers: providers,
            ledger: ledger,
            clock: clock,
            logger: logger
        )
    }
}
