import HeraldCatalog
import HeraldEvents
import HeraldPolicy
import HeraldReplay
import HeraldStore
import HeraldWorker
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// `herald bench replay`: writes a recorded log of mixed events (the pipeline benchmark's, one
/// event per millisecond of event time) to a file, seeds the directory into the store (replay's
/// in-memory one, or an in-memory SQLite database), and replays the log through the worker's code,
/// streaming it from the file.
public struct ReplayBenchmark: Sendable {
    public var events = 1_000_000
    public var users = 100_000
    public var batchSize = 1000
    public var parallelism = Worker.onlineCores
    public var gzip = false
    public var catalogDirectory = "catalog"
    /// Where the outbound messages go; `/dev/null` measures replay without the disk.
    public var out = "/dev/null"
    /// The store replay decides with: ``MemoryStore`` (replay's default), or an in-memory SQLite
    /// database, to compare.
    public var store = Store.memory

    public enum Store: String, Sendable, CaseIterable {
        case memory
        case sqlite
    }

    public init() {}

    public struct Report: Sendable {
        public var replay: ReplayReport
        public var seconds: Double
        /// The process's CPU time while replaying.
        public var cpuSeconds: Double
        public var logBytes: Int
        public var residentBeforeMegabytes: Double
        public var peakResidentMegabytes: Double
        public var eventsPerSecond: Double { Double(replay.records) / seconds }
        public var outboundPerSecond: Double { Double(replay.outbound) / seconds }
    }

    public func run(logger: Logger, progress: @escaping @Sendable (String) -> Void) async throws -> Report {
        let catalog = try CatalogLoader.load(directory: catalogDirectory).catalog
        let path = "/tmp/herald-bench-replay-\(getpid()).jsonl" + (gzip ? ".gz" : "")
        defer { unlink(path) }
        let logBytes = try writeLog(to: path)
        progress("wrote \(events) events (\(logBytes / 1_000_000) MB) to \(path)")
        let store: any StateStore =
            switch self.store {
            // Room for the ledger as `herald replay` makes it, from the log's size.
            case .memory: MemoryStore(expectedDecisions: ReplayRun.expectedDecisions([RecordedLogFile(path: path)]))
            case .sqlite: try SQLiteStore(path: ":memory:")
            }
        _ = try await PipelineBenchmark.seedDirectory(store, users: users)
        progress("seeded \(users) users")
        let before = Self.status("VmRSS")
        var configuration = Replayer.Configuration()
        configuration.batchSize = batchSize
        configuration.parallelism = parallelism
        let replayer = Replayer(
            configuration: configuration,
            catalog: catalog,
            policy: Policy(catalog: catalog),
            store: store,
            logger: logger
        )
        let started = ContinuousClock.now
        let cpuBefore = ProcessUsage.cpuSeconds()
        let report = try await replayer.run([RecordedLogFile(path: path)], into: try ReplayOutput(outbound: out))
        let seconds = (ContinuousClock.now - started).inSeconds
        return Report(
            replay: report,
            seconds: seconds,
            cpuSeconds: ProcessUsage.cpuSeconds() - cpuBefore,
            logBytes: logBytes,
            residentBeforeMegabytes: before,
            peakResidentMegabytes: Self.status("VmHWM")
        )
    }

    /// The log, one event per line, gzip-compressed if asked; returns its uncompressed size.
    private func writeLog(to path: String) throws -> Int {
        let generator = EventGenerator(users: users, partitions: 1)
        let start = Timestamp(epochMilliseconds: 1_795_000_000_000)
        var key: [UInt8] = []
        var value: [UInt8] = []
        var json = JSONStreamWriter(capacity: 512)
        var chunk: [UInt8] = []
        chunk.reserveCapacity(1 << 20)
        var total = 0
        let sink = try LogSink(path: path, gzip: gzip)
        for number in 0..<events {
            let time = Timestamp(epochMilliseconds: start.epochMilliseconds + Int64(number))
            _ = generator.write(number, time: time, key: &key, value: &value, using: &json)
            chunk += value
            chunk.append(0x0A)
            if chunk.count >= 1 << 20 {
                try sink.write(chunk)
                total += chunk.count
                chunk.removeAll(keepingCapacity: true)
            }
        }
        try sink.write(chunk)
        total += chunk.count
        try sink.close()
        return total
    }

    /// A value in MB from `/proc/<process>/status` (`VmRSS`, `VmHWM`).
    static func status(_ field: String, process: String = "self") -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(process)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
            let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if parts.count >= 2, let kilobytes = Double(parts[1]) { return kilobytes / 1024 }
        }
        return 0
    }
}
