import ArgumentParser
import Foundation
import HeraldApp
import HeraldKafka
import Logging
import ServiceLifecycle

struct BrokerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broker",
        abstract: "Run an embedded, in-memory Kafka cluster for development and tests.",
        discussion: """
            Prints the bootstrap servers as the first line on standard output, then serves until
            SIGINT or SIGTERM. Any Kafka client can use it (kcat -L -b <bootstrap>). It is librdkafka's
            mock cluster: in-memory, about 5 MiB kept per partition, no SSL, SASL or Admin API.
            Never use it in production.
            """
    )

    @Option(help: "Number of brokers.")
    var brokers = 1

    @Option(
        name: .customLong("topic"),
        help: "A topic to create, NAME:PARTITIONS (repeatable). Without any, Herald's default topics are created."
    )
    var topics: [String] = []

    @Flag(
        help: """
            Stop when standard input reaches its end. A parent process that keeps the other end of a \
            pipe open stops the broker even when it is killed outright.
            """
    )
    var stopAtEndOfInput = false

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        guard brokers >= 1 else { throw ValidationError("--brokers must be at least 1") }
        for topic in topics where TopicSpecification(parsing: topic) == nil {
            throw ValidationError("--topic '\(topic)': expected NAME or NAME:PARTITIONS with PARTITIONS >= 1")
        }
    }

    func run() async throws {
        let logger = try global.bootstrapLogging(label: "herald.broker")
        let specifications =
            topics.isEmpty ? TopicSpecification.heraldDefaults : topics.compactMap { TopicSpecification(parsing: $0) }
        let broker = try EmbeddedBrokerService(brokers: brokers, topics: specifications, logger: logger)
        // The first line on standard output, written at once so a parent process can read it.
        FileHandle.standardOutput.write(Data((broker.cluster.bootstrapServers + "\n").utf8))
        logger.info(
            "embedded broker serving (in-memory, for development and tests only)",
            metadata: [
                "kafka.bootstrap": "\(broker.cluster.bootstrapServers)",
                "kafka.topics": "\(specifications.map { "\($0.name):\($0.partitions)" }.joined(separator: ","))",
            ]
        )
        let group = ServiceGroup(
            configuration: .init(services: [broker], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        )
        if stopAtEndOfInput {
            DedicatedThread.start(name: "herald.stdin") {
                // Nothing is expected on the pipe: this returns when the parent closes it or dies.
                _ = FileHandle.standardInput.readDataToEndOfFile()
                logger.info("standard input closed; stopping")
                Task { await group.triggerGracefulShutdown() }
            }
        }
        try await group.run()
    }
}
