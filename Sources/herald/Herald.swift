import ArgumentParser
import HeraldApp
import Logging

@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Herald turns domain events on Kafka into push notifications.",
        // `herald --version`: Herald's and the system libraries' versions, for bug reports.
        version: BuildInfo.summary,
        subcommands: [
            BrokerCommand.self, CatalogCommand.self, RenderCommand.self, PayloadCommand.self, DirectoryCommand.self,
            BenchCommand.self, RunCommand.self, SimulateProvidersCommand.self, DeadLetterCommand.self, DevCommand.self,
            ReplayCommand.self, UserHashCommand.self,
        ]
    )
}

/// Options every subcommand shares.
struct GlobalOptions: ParsableArguments {
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical. Env: HERALD_LOG_LEVEL.")
    var logLevel: String?

    /// Bootstraps logging once for the process (to standard error, so standard output stays data)
    /// and returns the root logger.
    func bootstrapLogging(label: String) throws -> Logger {
        let raw = logLevel ?? Environment.value("HERALD_LOG_LEVEL") ?? "info"
        guard let level = Logger.Level(rawValue: raw.lowercased()) else {
            throw ValidationError("--log-level: unknown level '\(raw)'")
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }
}
