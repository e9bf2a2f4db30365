import Foundation
import HeraldCatalog
import HeraldEvents

/// `herald bench render`: decode + render of a typical `order.confirmed` event on one thread,
/// rotating through the catalog's locales, with resident memory sampled after a warm-up and at the
/// end so that growth over a long run shows.
public struct RenderBenchmark: Sendable {
    /// Events decoded and rendered in each round. Default 200,000.
    public var events = 200_000
    /// Rounds; this machine's speed varies from minute to minute, so the median and the best round
    /// are reported. Default 5.
    public var rounds = 5
    /// The catalog directory. Default `catalog`.
    public var catalogDirectory = "catalog"
    /// The event file. Default the example catalog's `order.confirmed` sample.
    public var eventFile = "catalog/events/order.confirmed.json"

    public init() {}

    public struct Report: Sendable {
        /// Events per round.
        public var events: Int
        /// Each round's duration in seconds.
        public var roundSeconds: [Double]
        public var roundRates: [Double] { roundSeconds.map { Double(events) / $0 } }
        public var medianEventsPerSecond: Double {
            let sorted = roundRates.sorted()
            return sorted.count % 2 == 1
                ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }
        public var bestEventsPerSecond: Double { roundRates.max() ?? 0 }
        public var rounds: Int { roundSeconds.count }
        /// Decoding alone, measured in the same run: events per second.
        public var decodeOnlyEventsPerSecond: Double
        /// Resident memory after the warm-up and after the run, in MiB.
        public var residentAfterWarmUp: Double
        public var residentAtEnd: Double
    }

    public func run() throws -> Report {
        let catalog = try CatalogLoader.load(directory: catalogDirectory).catalog
        let renderer = Renderer(catalog: catalog)
        guard let bytes = FileManager.default.contents(atPath: eventFile) else {
            throw CatalogTool.Failure(description: "cannot read \(eventFile)")
        }
        let value = Array(bytes)
        let decoder = EventDecoder()
        let locales = catalog.settings.locales
        var checksum = 0
        // As the worker renders: one thread's plans kept across its renders.
        let plans = RenderPlans()
        func once(_ index: Int) throws {
            let event = try decoder.decode(value: value)
            guard let kind = catalog.kind(for: event) else {
                throw CatalogTool.Failure(description: "no kind for \(event.type)")
            }
            let rendered = try renderer.render(
                event,
                as: kind,
                locale: locales[index % locales.count],
                timeZone: "Europe/Oslo",
                plans: plans
            )
            checksum &+= rendered.body.utf8.count
        }
        for index in 0..<20_000 { try once(index) }
        let warm = Self.residentMegabytes()
        var roundSeconds: [Double] = []
        for _ in 0..<max(rounds, 1) {
            let start = ContinuousClock.now
            for index in 0..<events { try once(index) }
            roundSeconds.append(start.duration(to: .now).inSeconds)
        }
        let decodeStart = ContinuousClock.now
        for _ in 0..<events {
            checksum &+= try decoder.decode(value: value).id.utf8.count
        }
        let decodeSeconds = decodeStart.duration(to: .now).inSeconds
        precondition(checksum > 0)
        return Report(
            events: events,
            roundSeconds: roundSeconds,
            decodeOnlyEventsPerSecond: Double(events) / decodeSeconds,
            residentAfterWarmUp: warm,
            residentAtEnd: Self.residentMegabytes()
        )
    }

    /// Current resident set size in MiB, from /proc/self/statm.
    static func residentMegabytes() -> Double {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
            let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        else { return 0 }
        return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
    }
}
