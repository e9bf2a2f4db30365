import Foundation
import HeraldApp
import HeraldCatalog
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldReplay
import HeraldStore
import HeraldTestSupport
import HeraldWorker
import Logging
import ServiceLifecycle
import Testing

let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

func path(_ relative: String) -> String { repositoryRoot.appendingPathComponent(relative).path }

/// A scratch directory removed when the test ends.
final class Scratch: Sendable {
    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "herald-replay-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func file(_ name: String) -> String { directory + "/" + name }

    func read(_ name: String) throws -> String { try String(contentsOfFile: file(name), encoding: .utf8) }

    func lines(_ name: String) throws -> [String] { try read(name).split(separator: "\n").map(String.init) }
}

/// What one replay wrote.
struct Replayed {
    var report: ReplayReport
    var outbound: [String]
    var decisions: [String]
    var deadLetters: [String]
    var reportText: String
}

let quietLogger: Logger = {
    var logger = Logger(label: "herald.replay.test")
    logger.logLevel = .error
    return logger
}()

func replay(
    _ sources: [any RecordSource],
    in scratch: Scratch,
    name: String,
    catalog: String = path("catalog"),
    directory: String? = nil,
    parallelism: Int = 2,
    drain: Bool = true,
    reportExtension: String = "json",
    store: String = "memory",
    retention: Duration? = nil,
    writeDecisions: Bool = true
) async throws -> Replayed {
    var options = ReplayRun.Options(sources: sources, catalogDirectory: catalog, out: scratch.file("\(name).out.jsonl"))
    options.directorySnapshot = directory
    options.store = store
    if let retention { options.configuration.purge.retention = retention }
    options.decisions = writeDecisions ? scratch.file("\(name).decisions.jsonl") : nil
    options.deadLetters = scratch.file("\(name).dlq.jsonl")
    options.report = scratch.file("\(name).report.\(reportExtension)")
    options.configuration.parallelism = parallelism
    options.configuration.drain = drain
    let outcome = try await ReplayRun.run(options, logger: quietLogger)
    #expect(outcome.rejectedSnapshotLines.isEmpty)
    return Replayed(
        report: outcome.report,
        outbound: try scratch.lines("\(name).out.jsonl"),
        decisions: writeDecisions ? try scratch.lines("\(name).decisions.jsonl") : [],
        deadLetters: try scratch.lines("\(name).dlq.jsonl"),
        reportText: try scratch.read("\(name).report.\(reportExtension)")
    )
}

/// The decision records without `decidedAt`, which is the clock's reading and differs between a
/// live worker (wall clock) and replay (event time).
func decisionKeys(_ lines: [String]) -> [String] {
    lines.map { line in
        guard case .object(let decision)? = try? JSONParser().parse(Array(line.utf8)) else { return line }
        return ["eventId", "kind", "recipient", "reason", "dueAt"].map { decision[$0]?.stringValue ?? "-" }
            .joined(separator: " ")
    }.sorted()
}

@Suite("Replay")
struct ReplayTests {
    let sampleLog = path("samples/replay/events.jsonl")
    let sampleDirectory = path("samples/replay/directory.jsonl")

    @Test("the sample log replays with throttles, digests, quiet hours, missing translations and poison reported")
    func sampleLogReport() async throws {
        let scratch = try Scratch()
        let result = try await replay(
            [RecordedLogFile(path: sampleLog)],
            in: scratch,
            name: "sample",
            directory: sampleDirectory,
            reportExtension: "md"
        )
        let report = result.report
        #expect(report.records == 2479)
        #expect(result.outbound.count == report.outbound)
        // Every decision record written is counted, and every reason the sample was made to show is there.
        #expect(result.decisions.count == report.decisionsByReason.values.reduce(0, +))
        for reason in [
            "sent", "throttled.digested", "throttled.dropped", "deferred.quiet_hours", "suppressed.preference",
            "suppressed.quiet_hours",
        ] {
            #expect((report.decisionsByReason[reason] ?? 0) > 0, "no \(reason) decision")
        }
        // The chat burst's digests: 130 messages to each of two users in one hour, 100 sent each.
        let digests = result.outbound.filter { $0.contains(#""eventId":"digest:"#) }
        #expect(digests.count >= 2)
        #expect(report.mostThrottled(2).map(\.throttled) == [32, 30])
        // Poison is reported with where it is, not fatal.
        #expect(
            report.deadLettersByCode == [
                "event.not_json": 1, "event.unknown_type": 1, "render.missing_field": 1, "event.missing_attribute": 1,
            ]
        )
        #expect(result.deadLetters.count == 4)
        // The dead letter names the file and line of the poison.
        #expect(result.reportText.contains("events.jsonl[0]@101: the value is not JSON"))
        // fr-FR and sv-SE have no bundle: reported as missing; nb-NO → nb is not.
        #expect(report.fallbacks.keys.contains { $0.requested == "fr-FR" && $0.used == "nb" })
        #expect(!report.fallbacks.keys.contains { $0.requested == "nb-NO" })
        #expect(result.reportText.contains("## Missing translations"))
        #expect(Set(report.outboundByLocale.keys) == ["nb", "en", "de", "pl", "ar"])
        let apns = try #require(report.payloadSizes.first { $0.provider == "apns" })
        #expect(apns.p50 > 100 && apns.p50 <= apns.p99 && apns.p99 <= apns.max && apns.max <= 4096)
    }

    @Test("the same log gives byte-identical outputs on every run, with any parallelism and with either store")
    func determinism() async throws {
        let scratch = try Scratch()
        let source = RecordedLogFile(path: sampleLog)
        let first = try await replay([source], in: scratch, name: "p1", directory: sampleDirectory, parallelism: 1)
        let second = try await replay([source], in: scratch, name: "p4", directory: sampleDirectory, parallelism: 4)
        let again = try await replay([source], in: scratch, name: "p4b", directory: sampleDirectory, parallelism: 4)
        let sqlite = try await replay(
            [source],
            in: scratch,
            name: "sqlite",
            directory: sampleDirectory,
            store: "sqlite:" + scratch.file("replay.sqlite")
        )
        // Without a decisions file no decision records are made; the report counts the same.
        let withoutDecisions = try await replay(
            [source],
            in: scratch,
            name: "nodecisions",
            directory: sampleDirectory,
            writeDecisions: false
        )
        #expect(withoutDecisions.outbound == first.outbound)
        #expect(withoutDecisions.reportText == first.reportText)
        #expect(first.outbound.count > 2000)
        for (name, file, other) in [
            ("parallelism 4", "p4", second), ("a second run", "p4b", again), ("the SQLite store", "sqlite", sqlite),
        ] {
            #expect(
                try scratch.read("p1.out.jsonl") == scratch.read("\(file).out.jsonl"),
                "outbound differs with \(name)"
            )
            #expect(first.decisions == other.decisions, "decisions differ with \(name)")
            #expect(first.deadLetters == other.deadLetters, "dead letters differ with \(name)")
            #expect(first.reportText == other.reportText, "the report differs with \(name)")
        }
    }

    @Test(
        "the ledger forgets on event time: a record redelivered within the retention is a duplicate, after it is decided again"
    )
    func retentionOnEventTime() async throws {
        let scratch = try Scratch()
        let lines = try String(contentsOfFile: path("samples/dev/events.jsonl"), encoding: .utf8).split(separator: "\n")
        let order = try #require(lines.first { $0.contains(#""id":"dev-001""#) })
        // The order (12:00), another event two hours later, and the order's record again.
        let later = order.replacingOccurrences(of: #""id":"dev-001""#, with: #""id":"dev-001-later""#)
            .replacingOccurrences(of: "2026-11-21T12:00:00Z", with: "2026-11-21T14:00:00Z")
        let log = scratch.file("redelivered.jsonl")
        try [order, Substring(later), order].joined(separator: "\n").write(
            toFile: log,
            atomically: true,
            encoding: .utf8
        )
        let directory = path("samples/dev/directory.jsonl")
        func reasons(_ replayed: Replayed) -> [String] {
            replayed.decisions.filter { $0.contains("dev-001\"") }.compactMap { line in
                line.range(of: #""reason":""#).map { String(line[$0.upperBound...].prefix { $0 != "\"" }) }
            }
        }
        let week = try await replay([RecordedLogFile(path: log)], in: scratch, name: "week", directory: directory)
        #expect(reasons(week) == ["sent", "duplicate"])
        let hour = try await replay(
            [RecordedLogFile(path: log)],
            in: scratch,
            name: "hour",
            directory: directory,
            retention: .seconds(3600)
        )
        #expect(reasons(hour) == ["sent", "sent"])
    }

    @Test("the memory store's ledger gets room from the logs' sizes: a decision per 250 bytes, gzip six times that")
    func ledgerRoomFromLogSize() throws {
        let scratch = try Scratch()
        let bytes = [UInt8](repeating: UInt8(ascii: "x"), count: 25_000)
        for name in ["plain.jsonl", "packed.jsonl.gz"] {
            #expect(FileManager.default.createFile(atPath: scratch.file(name), contents: Data(bytes)))
        }
        let plain = RecordedLogFile(path: scratch.file("plain.jsonl"))
        let packed = RecordedLogFile(path: scratch.file("packed.jsonl.gz"))
        #expect(ReplayRun.expectedDecisions([plain]) == 100)
        #expect(ReplayRun.expectedDecisions([plain, packed]) == 700)
        // A file that cannot be read adds nothing: reading it fails later, with its own error.
        #expect(ReplayRun.expectedDecisions([RecordedLogFile(path: scratch.file("missing.jsonl"))]) == 0)
        // A log of 1.1 GB (sparse: no disk used) is capped at four million.
        let large = scratch.file("large.jsonl")
        #expect(FileManager.default.createFile(atPath: large, contents: nil))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: large))
        try handle.truncate(atOffset: 1_100_000_000)
        try handle.close()
        #expect(ReplayRun.expectedDecisions([RecordedLogFile(path: large)]) == 4_000_000)
    }

    @Test("a replayer asked for a decisions file without decision records refuses, naming the setting")
    func decisionsFileNeedsRecords() async throws {
        let scratch = try Scratch()
        let catalog = try CatalogLoader.load(directory: path("catalog")).catalog
        let replayer = Replayer(
            configuration: Replayer.Configuration(),
            catalog: catalog,
            policy: Policy(catalog: catalog),
            store: MemoryStore(),
            logger: quietLogger
        )
        let output = try ReplayOutput(outbound: scratch.file("out.jsonl"), decisions: scratch.file("decisions.jsonl"))
        await #expect(throws: ReplayError.self) {
            _ = try await replayer.run([RecordedLogFile(path: sampleLog)], into: output)
        }
    }

    @Test("gzip and kcat -J dumps replay to the same notifications as the plain log, and so does a topic range")
    func inputFormats() async throws {
        let scratch = try Scratch()
        let events = path("samples/dev/events.jsonl")
        let directory = path("samples/dev/directory.jsonl")
        let plain = try await replay([RecordedLogFile(path: events)], in: scratch, name: "plain", directory: directory)
        #expect(plain.outbound.count == 19)

        // gzip
        let sink = try LogSink(path: scratch.file("events.jsonl.gz"), gzip: true)
        try sink.write(Array(try String(contentsOfFile: events, encoding: .utf8).utf8))
        try sink.close()
        let gzipped = try await replay(
            [RecordedLogFile(path: scratch.file("events.jsonl.gz"))],
            in: scratch,
            name: "gzip",
            directory: directory
        )
        #expect(gzipped.outbound == plain.outbound)

        // The log on a topic: read back by kcat -J, and as a topic range.
        let environment = try KafkaTestEnvironment(topics: ["recorded.events": 3])
        let lines = try String(contentsOfFile: events, encoding: .utf8).split(separator: "\n").map(String.init)
        var records: [KafkaProducerRecord] = []
        for line in lines {
            let event = try? JSONParser().parse(Array(line.utf8))
            records.append(
                KafkaProducerRecord(
                    topic: "recorded.events",
                    key: ReplayRecord.key(ofData: event?["data"]).map { KafkaBytes($0) } ?? KafkaBytes("none"),
                    value: KafkaBytes(line)
                )
            )
        }
        try await environment.produce(records)
        let dump = try await runKcat([
            "-C", "-b", environment.cluster.bootstrapServers, "-t", "recorded.events", "-J", "-e", "-q",
        ])
        try dump.write(toFile: scratch.file("dump.jsonl"), atomically: true, encoding: .utf8)
        #expect(dump.split(separator: "\n").count == lines.count)
        let kcat = try await replay(
            [RecordedLogFile(path: scratch.file("dump.jsonl"))],
            in: scratch,
            name: "kcat",
            directory: directory
        )
        // Partitions interleave differently from the file; each user's events keep their order.
        #expect(decisionKeys(kcat.decisions) == decisionKeys(plain.decisions))
        #expect(kcat.outbound.sorted() == plain.outbound.sorted())
        #expect(kcat.report.deadLettersByCode == plain.report.deadLettersByCode)
        #expect(kcat.deadLetters.allSatisfy { $0.contains(#""topic":"recorded.events""#) })

        let range = TopicRange(
            bootstrapServers: [environment.cluster.bootstrapServers],
            topic: "recorded.events",
            since: nil,
            until: nil,
            logger: quietLogger
        )
        let ranged = try await replay([range], in: scratch, name: "range", directory: directory)
        #expect(ranged.report.records == lines.count)
        #expect(ranged.report.decisionsByReason == plain.report.decisionsByReason)
        #expect(ranged.outbound.sorted() == plain.outbound.sorted())
        // A range that ends before anything was produced replays nothing.
        let empty = TopicRange(
            bootstrapServers: [environment.cluster.bootstrapServers],
            topic: "recorded.events",
            since: nil,
            until: Timestamp(epochMilliseconds: 1_000),
            logger: quietLogger
        )
        let none = try await replay([empty], in: scratch, name: "empty", directory: directory)
        #expect(none.report.records == 0 && none.outbound.isEmpty)
    }

    @Test("a file that cannot be read, or a corrupt gzip stream, is an error naming the file")
    func unreadableInputs() async throws {
        let scratch = try Scratch()
        await #expect(throws: ReplayError.self) {
            _ = try await replay([RecordedLogFile(path: scratch.file("missing.jsonl"))], in: scratch, name: "missing")
        }
        let sink = try LogSink(path: scratch.file("whole.jsonl.gz"), gzip: true)
        try sink.write(Array(try String(contentsOfFile: sampleLog, encoding: .utf8).utf8))
        try sink.close()
        let whole = try Data(contentsOf: URL(fileURLWithPath: scratch.file("whole.jsonl.gz")))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: scratch.file("cut.jsonl.gz")))
        do {
            _ = try await replay([RecordedLogFile(path: scratch.file("cut.jsonl.gz"))], in: scratch, name: "cut")
            Issue.record("a truncated gzip stream replayed without an error")
        } catch let error as ReplayError {
            #expect(error.description.contains("cut.jsonl.gz"))
        }
    }
}

/// Runs the system's kcat and returns its standard output, waiting off the cooperative pool.
func runKcat(_ arguments: [String]) async throws -> String {
    try await offPool { try runKcatWaiting(arguments) }
}

private func runKcatWaiting(_ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/kcat")
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw TestFailure("kcat exited with \(process.terminationStatus)")
    }
    return String(decoding: data, as: UTF8.self)
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
