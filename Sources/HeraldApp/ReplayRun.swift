import HeraldCatalog
import HeraldPolicy
import HeraldReplay
import HeraldStore
import HeraldWorker
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// `herald replay`: a recorded log through the worker's own code on event time, into an outbound
/// file, optional decisions and dead-letter files, and a report.
public enum ReplayRun {
    public struct Options: Sendable {
        public var sources: [any RecordSource]
        public var catalogDirectory: String
        /// A JSON Lines snapshot of directory events, loaded before the log.
        public var directorySnapshot: String?
        /// `memory` (the default: ``MemoryStore``) or `sqlite:PATH`. Never a shared PostgreSQL: replay
        /// would write its decisions into the ledger and throttle windows live workers use.
        public var store = "memory"
        public var out: String
        public var decisions: String?
        public var deadLetters: String?
        /// `.md`, `.json` or `.html`, by its extension.
        public var report: String?
        public var configuration = Replayer.Configuration()

        public init(sources: [any RecordSource], catalogDirectory: String, out: String) {
            self.sources = sources
            self.catalogDirectory = catalogDirectory
            self.out = out
        }
    }

    public struct Outcome: Sendable {
        public var report: ReplayReport
        public var elapsed: Duration
        /// Directory snapshot lines that were rejected, by line.
        public var rejectedSnapshotLines: [String]
    }

    /// The report format for `path`, by extension.
    public enum ReportFormat: String, Sendable {
        case markdown, json, html

        /// - Throws: ``ConfigurationError`` for an extension that is none of `.md`, `.json`, `.html`.
        public init(path: String) throws(ConfigurationError) {
            if path.hasSuffix(".md") || path.hasSuffix(".markdown") {
                self = .markdown
            } else if path.hasSuffix(".json") {
                self = .json
            } else if path.hasSuffix(".html") || path.hasSuffix(".htm") {
                self = .html
            } else {
                throw ConfigurationError("--report: \(path) must end in .md, .json or .html")
            }
        }
    }

    public static func run(_ options: Options, logger: Logger) async throws -> Outcome {
        let format = try options.report.map { path throws(ConfigurationError) in try ReportFormat(path: path) }
        let catalog: Catalog
        do {
            catalog = try CatalogLoader.load(directory: options.catalogDirectory).catalog
        } catch {
            throw ConfigurationError("--catalog: \(error.description)\ncatalog check failed: fix the catalog first")
        }
        guard options.store == "memory" || options.store.hasPrefix("sqlite:") else {
            throw ConfigurationError(
                "--store: memory or sqlite:PATH (replay never writes into a shared PostgreSQL store)"
            )
        }
        let location: StoreLocation?
        do {
            location = options.store == "memory" ? nil : try StoreLocation(options.store)
        } catch {
            throw ConfigurationError("--store: \(error.message)")
        }
        let output = try ReplayOutput(
            outbound: options.out,
            decisions: options.decisions,
            deadLetters: options.deadLetters
        )
        let replay = { (store: any StateStore) async throws -> Outcome in
            var rejected: [String] = []
            if let snapshot = options.directorySnapshot {
                let imported = try await DirectoryImport.run(file: snapshot, into: store)
                rejected = imported.rejected
                if imported.rejectedCount > rejected.count {
                    rejected.append("and \(imported.rejectedCount - rejected.count) more rejected line(s)")
                }
                try await store.analyze()
            }
            var configuration = options.configuration
            if options.decisions != nil && configuration.topics.decisions == nil {
                configuration.topics.decisions = "herald.decisions"
            }
            let replayer = Replayer(
                configuration: configuration,
                catalog: catalog,
                policy: Policy(catalog: catalog),
                store: store,
                logger: logger
            )
            let started = ContinuousClock.now
            let report = try await replayer.run(options.sources, into: output)
            let elapsed = ContinuousClock.now - started
            if let path = options.report, let format {
                let text =
                    switch format {
                    case .markdown: report.markdown()
                    case .json: report.json()
                    case .html: report.html()
                    }
                try write(text, to: path)
            }
            return Outcome(report: report, elapsed: elapsed, rejectedSnapshotLines: rejected)
        }
        // The directory keeps at least the devices the worker's limit sends to.
        let maximumDevicesPerUser = max(
            DirectoryLimits.maximumDevicesPerUser,
            options.configuration.maximumDevicesPerRecipient
        )
        guard let location else {
            return try await replay(
                MemoryStore(
                    expectedDecisions: expectedDecisions(options.sources),
                    maximumDevicesPerUser: maximumDevicesPerUser
                )
            )
        }
        return try await location.withStore(logger: logger, maximumDevicesPerUser: maximumDevicesPerUser, replay)
    }

    /// How many decisions the memory store's ledger has room for from the start, from the sizes of
    /// the log files: about one per 250 bytes of a plain log, six times as many per byte of a
    /// gzipped one. A ledger that grows by doubling holds its old and new tables at once while it
    /// moves them, and replay waits while it does (a million-event replay peaked 80 MB higher).
    /// Capped at four million: the ledger holds about a retention's worth, and room costs address
    /// space, not memory, until it is used.
    public static func expectedDecisions(_ sources: [any RecordSource]) -> Int {
        var estimate = 0
        for case let file as RecordedLogFile in sources {
            var status = stat()
            guard stat(file.path, &status) == 0 else { continue }
            let perByte = file.path.hasSuffix(".gz") ? 6 : 1
            estimate += Int(status.st_size) * perByte / 250
        }
        return min(estimate, 4_000_000)
    }

    static func write(_ text: String, to path: String) throws {
        guard let file = fopen(path, "wb") else {
            throw ReplayError.cannotWrite(path: path, reason: String(cString: strerror(errno)))
        }
        defer { fclose(file) }
        let bytes = Array(text.utf8)
        guard fwrite(bytes, 1, bytes.count, file) == bytes.count else {
            throw ReplayError.cannotWrite(path: path, reason: String(cString: strerror(errno)))
        }
    }
}
