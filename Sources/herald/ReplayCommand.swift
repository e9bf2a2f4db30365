import ArgumentParser
import Foundation
import HeraldApp
import HeraldEvents
import HeraldReplay
import HeraldWorker
import Logging

struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Run recorded event logs through the worker's code on event time; diff two replays.",
        subcommands: [ReplayRunCommand.self, ReplayDiffCommand.self],
        defaultSubcommand: ReplayRunCommand.self
    )
}

struct ReplayRunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Replay recorded logs into an outbound file and a report, or publish them to Kafka.",
        discussion: """
            A log is JSON Lines of CloudEvents, or of `kcat -C -J` envelopes (any mix), optionally gzip-compressed; \
            or, with --from-topic, a time range of a Kafka topic. The worker's own decode, directory, policy, render \
            and payload code runs with the clock at event time, so throttles, digests, quiet hours and expiry fire \
            as they did. The same inputs give byte-identical outputs, whatever --parallelism is. Poison records are \
            reported (and written to --dead-letters), never fatal.

            With --publish, the log is re-injected into Kafka instead, keeping its relative timing \
            (--speed K: K times faster) or at a fixed --rate; directory events go to herald.directory.
            """
    )

    @Argument(help: "Recorded log files (.jsonl, .jsonl.gz; CloudEvents or kcat -J lines).")
    var logs: [String] = []

    @Option(help: "The catalog directory.")
    var catalog = "catalog"

    @Option(help: "A JSON Lines snapshot of herald.directory events, loaded before the log.")
    var directory: String?

    @Option(help: "The state store: memory or sqlite:PATH (a file to keep, or to start from).")
    var store = "memory"

    @Option(help: "Where the outbound messages go, one per line (herald.outbound.v1).")
    var out: String?

    @Option(help: "Where the decisions go, one per line, as on herald.decisions.")
    var decisions: String?

    @Option(
        help: """
            How --decisions names recipients: hashed (as herald.decisions does by default, keyed from \
            HERALD_LOG_USER_HASH_KEY or _FILE as the logs are) or clear (the user ids).
            """
    )
    var decisionsRecipient = "hashed"

    @Option(help: "Where the dead letters go, one per line: code, message, original place, key, value.")
    var deadLetters: String?

    @Option(help: "A report: REPORT.md, REPORT.json or REPORT.html.")
    var report: String?

    @Option(help: "Replay a topic instead of files: its records stamped in [--since, --until).")
    var fromTopic: String?

    @Option(help: "With --from-topic: the first record time to replay (RFC 3339).")
    var since: String?

    @Option(help: "With --from-topic: replay records stamped before this time (RFC 3339).")
    var until: String?

    @Option(help: "Kafka bootstrap servers, comma-separated. Env: HERALD_KAFKA_BOOTSTRAP_SERVERS.")
    var bootstrap: String?

    @Option(help: "Publish the log to this topic instead of replaying it.")
    var publish: String?

    @Option(help: "With --publish: records per second, instead of the recorded timing.")
    var rate: Double?

    @Option(help: "With --publish: replay the recorded timing this many times faster.")
    var speed: Double?

    @Option(help: "The most events decided together (they are decided at the last one's time).")
    var batchSize = 500

    @Option(help: "Parts of a batch rendered concurrently. Default: one per core. The output does not depend on it.")
    var parallelism: Int?

    @Flag(help: "Stop at the last event: do not produce deferred notifications and digests that come due after it.")
    var noDrain = false

    @Option(
        help:
            "How long the decision ledger remembers, on event time, as store.retention does for the worker (500ms, 5s, 2m, 1h, 7d)."
    )
    var retention = "7d"

    @Option(
        help:
            "The most devices a notification goes to per recipient, as worker.max_devices_per_recipient does (1–100000)."
    )
    var maxDevicesPerRecipient = Replayer.Configuration().maximumDevicesPerRecipient

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if logs.isEmpty && fromTopic == nil { throw ValidationError("name a log file, or a topic with --from-topic") }
        for (name, value) in [("--since", since), ("--until", until)] {
            if let value, Timestamp(rfc3339: value) == nil {
                throw ValidationError("\(name): expected an RFC 3339 time such as 2026-11-22T08:00:00Z, got '\(value)'")
            }
        }
        if (fromTopic != nil || publish != nil) && servers.isEmpty {
            throw ValidationError("--bootstrap: name the Kafka brokers")
        }
        if publish == nil && out == nil {
            throw ValidationError("--out: name the outbound file (or --publish a topic)")
        }
        if rate != nil && speed != nil { throw ValidationError("--rate and --speed: choose one") }
        if let rate, rate <= 0 { throw ValidationError("--rate: must be positive") }
        if let speed, speed <= 0 { throw ValidationError("--speed: must be positive") }
        if batchSize < 1 { throw ValidationError("--batch-size: must be at least 1") }
        if !["hashed", "clear"].contains(decisionsRecipient) {
            throw ValidationError("--decisions-recipient: expected hashed or clear, got '\(decisionsRecipient)'")
        }
        if let parallelism, parallelism < 1 { throw ValidationError("--parallelism: must be at least 1") }
        if !(1...100_000).contains(maxDevicesPerRecipient) {
            throw ValidationError("--max-devices-per-recipient: must be from 1 to 100000")
        }
        guard let retention = HeraldConfiguration.duration(retention), retention > .zero else {
            throw ValidationError(
                "--retention: expected a duration longer than 0 such as 7d or 12h, got '\(retention)'"
            )
        }
    }

    var servers: [String] {
        (bootstrap ?? Environment.value("HERALD_KAFKA_BOOTSTRAP_SERVERS") ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty }
    }

    func sources(logger: Logger) -> [any RecordSource] {
        var sources: [any RecordSource] = logs.map { RecordedLogFile(path: $0) }
        if let fromTopic {
            sources.append(
                TopicRange(
                    bootstrapServers: servers,
                    topic: fromTopic,
                    since: since.flatMap { Timestamp(rfc3339: $0) },
                    until: until.flatMap { Timestamp(rfc3339: $0) },
                    logger: logger
                )
            )
        }
        return sources
    }

    func run() async throws {
        let logger = try global.bootstrapLogging(label: "herald.replay")
        // The report names users by the hash they have in the logs: keyed as `herald run` keys it,
        // from the same variables (replay reads no configuration file).
        let hashKey: [UInt8]?
        do {
            let variables = ProcessInfo.processInfo.environment.filter { $0.key.hasPrefix("HERALD_LOG_USER_HASH_KEY") }
            hashKey = try HeraldConfiguration.load(path: nil, environment: variables).logUserHashKey
            Redact.setKey(hashKey)
        } catch {
            printError("herald: \(error)")
            throw ExitCode(78)  // EX_CONFIG
        }
        if let publish {
            let publisher = LogPublisher(
                bootstrapServers: servers,
                topic: publish,
                pacing: rate.map { .rate($0) } ?? .recorded(speed: speed ?? 1)
            )
            let started = ContinuousClock.now
            let counts = try await publisher.run(sources(logger: logger), logger: logger)
            let total = counts.values.reduce(0, +)
            let seconds = (ContinuousClock.now - started).inSeconds
            print(
                "published \(total) record(s) in \(String(format: "%.1f", seconds)) s: "
                    + counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            )
            return
        }
        var options = ReplayRun.Options(sources: sources(logger: logger), catalogDirectory: catalog, out: out!)
        options.directorySnapshot = directory
        options.store = store
        options.decisions = decisions
        options.configuration.topics.analyticsRecipients =
            decisionsRecipient == "clear" ? .clear : .hashed(UserHash(key: hashKey))
        options.deadLetters = deadLetters
        options.report = report
        options.configuration.batchSize = batchSize
        if let parallelism { options.configuration.parallelism = parallelism }
        options.configuration.drain = !noDrain
        options.configuration.maximumDevicesPerRecipient = maxDevicesPerRecipient
        options.configuration.purge.retention =
            HeraldConfiguration.duration(retention) ?? options.configuration.purge.retention
        let outcome = try await ReplayRun.run(options, logger: logger)
        for line in outcome.rejectedSnapshotLines { printError("\(directory ?? ""): \(line)") }
        let report = outcome.report
        let seconds = outcome.elapsed.inSeconds
        let deadLettered = report.deadLettersByCode.values.reduce(0, +)
        print(
            "replayed \(report.records) record(s) (\(report.events) events, \(report.directoryChanges) directory changes) "
                + "in \(String(format: "%.2f", seconds)) s (\(Int(Double(report.records) / max(seconds, 1e-9))) records/s)"
        )
        print(
            "notifications: \(report.outbound) → \(out!); dead letters: \(deadLettered)"
                + (report.pendingDueAt.map { "; due work pending after the last event from \($0)" } ?? "")
        )
        let reasons = report.decisionsByReason.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        print("decisions: " + (reasons.isEmpty ? "none" : reasons.joined(separator: ", ")))
        if let path = self.report { print("report → \(path)") }
    }
}

struct ReplayDiffCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "What changed between two replays of the same traffic (their --out files).",
        discussion: """
            Notifications are matched by id (event, kind, recipient, device), and listed as added, removed or \
            changed, with the text before and after per locale: first a summary by kind, then groups of alike \
            notifications, largest first. Exit status: 0 if the replays are the same, 1 if they differ (like diff).
            """
    )

    @Argument(help: "The outbound file of the replay before the change.")
    var before: String

    @Argument(help: "The outbound file of the replay after the change.")
    var after: String

    @Option(help: "The most groups listed per section.")
    var limit = 20

    func run() async throws {
        let diff = try ReplayDiff(before, after)
        print(diff.markdown(limit: limit), terminator: "")
        if !diff.isEmpty { throw ExitCode(1) }
    }
}
