import ArgumentParser
import Foundation
import HeraldApp

struct ScaleBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scale",
        abstract: "Worker and sender processes on one PostgreSQL, checked for lost and duplicated deliveries.",
        discussion: """
            For each count in --workers: a fresh database on --store, the embedded broker with --partitions \
            partitions per topic, the provider simulator, that many `herald run --role worker` processes and \
            --senders `herald run --role sender` processes; --events mixed events are published and followed \
            to the simulator. With --kill, one worker is killed with SIGKILL a third of the way through and a \
            new one started. Checks: every event decided, every provider call accepted exactly once, throttle \
            limits held across workers, each digest sent once. Exit status 1 if any check fails. \
            Run it with a throwaway cluster: scripts/with-postgres herald bench scale --store '$HERALD_STORE'.
            """
    )

    @Option(help: "A PostgreSQL URL (postgres://user@host:port/db); each run creates a database of its own there.")
    var store: String

    @Option(help: "Worker processes, or a comma-separated list of counts to run one after another.")
    var workers = "3"

    @Option(help: "Sender processes.")
    var senders = 2

    @Option(help: "Events to publish per run.")
    var events = 100_000

    @Option(help: "Users in the directory (one to three devices each).")
    var users = 5_000

    @Option(help: "Partitions of every topic.")
    var partitions = 12

    @Flag(help: "Kill one worker with SIGKILL a third of the way through and start another.")
    var kill = false

    @Option(help: "The catalog directory (its messages throttle is shortened to 2 per 10 s so that digests come due).")
    var catalog = "catalog"

    @OptionGroup var global: GlobalOptions

    var workerCounts: [Int] {
        workers.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    func validate() throws {
        guard !workerCounts.isEmpty, workerCounts.allSatisfy({ $0 >= 1 }),
            workerCounts.count == workers.split(separator: ",").count
        else {
            throw ValidationError("--workers: expected a count or a comma-separated list of counts, got '\(workers)'")
        }
        guard senders >= 1, events >= 1, users >= 2, partitions >= 1 else {
            throw ValidationError("--senders, --events and --partitions must be at least 1, --users at least 2")
        }
        guard store.hasPrefix("postgres://") || store.hasPrefix("postgresql://") else {
            throw ValidationError(
                "--store: the scale test shares one PostgreSQL between processes: give a postgres:// URL"
            )
        }
    }

    func run() async throws {
        var logger = try global.bootstrapLogging(label: "herald.bench")
        if global.logLevel == nil { logger.logLevel = .warning }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        var reports: [ScaleBenchmark.Report] = []
        for count in workerCounts {
            var benchmark = ScaleBenchmark(storeURL: store, executable: executable)
            benchmark.events = events
            benchmark.users = users
            benchmark.partitions = partitions
            benchmark.workers = count
            benchmark.senders = senders
            benchmark.killWorker = kill
            benchmark.catalogDirectory = catalog
            let report = try await benchmark.run(logger: logger) { line in
                FileHandle.standardError.write(Data("… \(line)\n".utf8))
            }
            Self.print(report)
            reports.append(report)
        }
        if reports.count > 1, let first = reports.first {
            Swift.print("scaling (events decided per second, relative to \(first.workers) worker(s)):")
            for report in reports {
                Swift.print(
                    "  \(report.workers) worker(s): \(String(format: "%.0f", report.eventsPerSecond)) events/s, ×\(String(format: "%.2f", report.eventsPerSecond / first.eventsPerSecond))"
                )
            }
        }
        if !reports.allSatisfy(\.passed) { throw ExitCode(1) }
    }

    static func print(_ report: ScaleBenchmark.Report) {
        let verdict = report.passed ? "passed" : "FAILED"
        Swift.print(
            "herald bench scale: \(report.workers) worker(s), \(report.senders) sender(s), \(report.events) events, \(report.devices) devices — \(verdict)"
        )
        if let killed = report.killed { Swift.print("  \(killed)") }
        Swift.print(
            "  decided \(report.decidedEvents) of \(report.events) events in \(String(format: "%.1f", report.seconds)) s: \(String(format: "%.0f", report.eventsPerSecond)) events/s"
        )
        Swift.print(
            "  provider calls: \(report.outboundCalls) on herald.outbound, \(report.accepted) accepted by the simulator, all settled after \(String(format: "%.1f", report.deliverySeconds)) s"
        )
        Swift.print(
            "  lost events \(report.lostEvents), lost deliveries \(report.lostDeliveries), duplicated deliveries \(report.duplicatedDeliveries) (allowed: at most one per call that got no answer, \(report.unansweredCalls))"
        )
        for (cause, calls) in report.unansweredCauses.sorted(by: { $0.key < $1.key }) {
            Swift.print("  no answer: \(calls) × \(cause)")
        }
        Swift.print(
            "  throttle windows \(report.throttleWindows), over their limit \(report.throttleViolations); digests \(report.digestsExpected), missing \(report.digestsMissing), duplicated \(report.digestsDuplicated)"
        )
        for failure in report.failures { Swift.print("  failed: \(failure)") }
        Swift.print(
            "  decisions: "
                + report.decisionsByReason.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(
                    separator: ", "
                )
        )
        Swift.print(
            "  senders: "
                + report.senderCounters.sorted { $0.key < $1.key }.map { "\($0.key) \(Int($0.value))" }.joined(
                    separator: ", "
                )
        )
        if !report.completed { Swift.print("  did not complete; the processes' logs are in \(report.logDirectory)") }
    }
}
