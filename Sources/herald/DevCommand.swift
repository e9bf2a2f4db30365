import ArgumentParser
import Foundation
import HeraldApp

struct DevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: "The whole pipeline in one process on embedded defaults, fed a sample log (what `make run` runs).",
        discussion: """
            Starts the embedded broker, SQLite (a temporary file), the provider simulator, the worker and the \
            sender; publishes the sample directory and event log; shows each notification the way a phone \
            would display it, with the pipeline's counters; and ends with a summary. The clock starts at the \
            log's first event time, so every run decides the same way. The sample scripts one device's \
            provider to fail once (a retry) and one token as unregistered (an invalidation).
            """
    )

    @Option(help: "The catalog directory.")
    var catalog = "catalog"

    @Option(help: "The directory snapshot to publish on herald.directory first (JSON Lines of CloudEvents).")
    var directory = "samples/dev/directory.jsonl"

    @Option(help: "The event log to publish (JSON Lines of CloudEvents; a line that is not JSON is published as is).")
    var events = "samples/dev/events.jsonl"

    @Flag(help: "Keep running after the sample and show notifications for events that other producers send.")
    var follow = false

    @Option(help: "Seconds the sample may take before the run gives up.")
    var timeout = 120

    @OptionGroup var global: GlobalOptions

    /// The sample directory's devices whose provider answers are scripted.
    static let retryOnceToken = "5120cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd0123"
    static let unregisteredToken = "stale-u4096-registration:APA91bStaleToken"

    func run() async throws {
        var options = global
        // The run's own output is the point; the services' info logs would bury it.
        if options.logLevel == nil && Environment.value("HERALD_LOG_LEVEL") == nil { options.logLevel = "warning" }
        let logger = try options.bootstrapLogging(label: "herald.dev")
        var run = DevRun()
        run.catalogDirectory = catalog
        run.directoryFile = directory
        run.eventsFile = events
        run.follow = follow
        run.timeout = .seconds(timeout)
        run.retryOnceTokens = [Self.retryOnceToken]
        run.unregisteredTokens = [Self.unregisteredToken]
        let summary = try await run.run(logger: logger) { line in
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
        if !summary.settled && !follow { throw ExitCode(1) }
    }
}
