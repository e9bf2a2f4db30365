import ArgumentParser
import HeraldApp
import Logging

/// `herald run --role worker --config herald.yaml`.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a Herald role until SIGTERM or SIGINT.",
        discussion: """
            The configuration file's keys are listed in README.md (Configuration reference); each can be overridden by an \
            environment variable (worker.batch_size by HERALD_WORKER_BATCH_SIZE). With \
            kafka.bootstrap_servers 'embedded' an in-process development cluster is started.
            """
    )

    enum Role: String, ExpressibleByArgument, CaseIterable {
        case worker, sender, all

        var roles: Set<HeraldRole> {
            switch self {
            case .worker: [.worker]
            case .sender: [.sender]
            case .all: [.worker, .sender]
            }
        }
    }

    @Option(
        help: "The role to run: worker (events to outbound messages), sender (outbound messages to providers), or all."
    )
    var role: Role = .worker

    @Option(
        help: """
            A configuration file (YAML); repeat it to layer files, later ones winning (herald.yaml, then the \
            providers.yaml herald simulate-providers writes). Without any, defaults and HERALD_* variables apply.
            """
    )
    var config: [String] = []

    @Flag(
        help: """
            Check the configuration (and the catalog, and the provider credentials) as start-up would, print what \
            the role would run with, and exit: 0 if it would start, 78 naming the key if not. Connects to nothing.
            """
    )
    var check = false

    func run() async throws {
        let configuration: HeraldConfiguration
        do {
            configuration = try HeraldConfiguration.load(paths: config, roles: role.roles)
        } catch {
            printError("herald: \(error)")
            throw ExitCode(78)  // EX_CONFIG
        }
        if check {
            for warning in configuration.warnings { printError("herald: warning: \(warning)") }
            do {
                print(try await WorkerApp.check(configuration: configuration, roles: role.roles))
            } catch {
                printError("herald: \(error)")
                throw ExitCode(78)
            }
            return
        }
        let logger = try bootstrapLogging(configuration)
        for warning in configuration.warnings { logger.warning("\(warning)") }
        do {
            try await WorkerApp.run(configuration: configuration, roles: role.roles, logger: logger)
        } catch let error as ConfigurationError {
            printError("herald: \(error)")
            throw ExitCode(78)
        }
    }

    func bootstrapLogging(_ configuration: HeraldConfiguration) throws -> Logger {
        let level = Logger.Level(rawValue: configuration.logLevel) ?? .info
        let json = configuration.logFormat == "json"
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler =
                json ? JSONLogHandler(label: label) : StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: "herald.\(role.rawValue)")
        logger.logLevel = level
        return logger
    }
}
