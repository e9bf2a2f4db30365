import HeraldPolicy
import Synchronization

/// What the worker has done, by label, for `/metrics` and the end-of-run summary. Counters only go
/// up; one lock per update batch, not per event.
public final class WorkerStatistics: Sendable {
    public struct Counters: Sendable {
        /// Events consumed, by CloudEvents type (`unparsable` when the type could not be read;
        /// `(other)` past ``maximumEventTypes`` types, and for a type longer than
        /// ``maximumEventTypeBytes``).
        public var eventsByType: [String: Int] = [:]
        /// How many event types the counters name. Each is a label value of
        /// `herald_events_consumed_total`, and Prometheus keeps a series for each: a producer that
        /// puts an id into its types would otherwise add one per event, to the worker's memory and
        /// to every scrape. The first types seen keep their names.
        public static let maximumEventTypes = 200
        public static let maximumEventTypeBytes = 128
        public static let otherEventTypes = MetricLabels.other
        public var decisionsByReason: [String: Int] = [:]
        public var outboundByProvider: [String: Int] = [:]
        /// Outbound messages by kind, by the catalog locale rendered, and by category.
        public var outboundByKind: [String: Int] = [:]
        public var outboundByLocale: [String: Int] = [:]
        public var outboundByCategory: [String: Int] = [:]
        /// Provider request body sizes, by provider.
        public var payloadSizes: [String: SizeCounts] = [:]
        public var deadLettersByCode: [String: Int] = [:]
        /// Events of a type no kind handles, ignored by configuration.
        public var ignoredEvents = 0
        public var directoryChanges = 0
        /// Directory changes dated more than ``DirectoryEvent/clockTolerance`` ahead of the
        /// worker's clock, applied as of its clock.
        public var directoryChangesRedated = 0
        /// Records without a value on `herald.directory`: Kafka's tombstones, by which a compacted
        /// topic forgets a key. Skipped.
        public var directoryTombstones = 0
        /// Devices a notification did not go to because its recipient had more than
        /// `worker.max_devices_per_recipient`.
        public var devicesLeftOut = 0
        /// Devices the directory removed because their user had more than `store.max_devices_per_user`.
        public var devicesEvicted = 0
        /// Devices skipped because their token cannot be addressed (not a valid APNs token).
        public var skippedDevices = 0
        /// Events whose records were all acknowledged and whose offsets became committable.
        public var handledEvents = 0
        /// Decision ledger entries deleted by the retention purge.
        public var purgedDecisions = 0
        /// Time spent deciding batches (decode, directory, store) and building them (render,
        /// payloads), summed over batches: which of the two stages bounds throughput.
        public var decideTime = Duration.zero
        public var buildTime = Duration.zero

        public init() {}
        /// Seconds from an event's Kafka timestamp to its outbound records being acknowledged.
        public var latencies = LatencyHistogram()

        // What a build counts for every decision and device, by position rather than by label:
        // an array increment instead of hashing a string. `add(_:)` folds them into the
        // dictionaries above, which are what the worker's counters hold and what readers see.
        /// Decisions by ``DecisionReason/position`` of their label.
        var decisionsByPosition = [Int](repeating: 0, count: DecisionReason.allCases.count)
        /// Outbound messages and their body sizes by ``PushProvider/position``.
        var outboundByProviderPosition = [0, 0, 0]
        var payloadSizesByProviderPosition = [SizeCounts(), SizeCounts(), SizeCounts()]
        /// Outbound messages by kind (and its category), for the few kinds a build meets: a short
        /// list compared in order, where a kind's name is mostly the same string each time.
        var outboundByKindList: [(kind: String, category: String, count: Int)] = []

        /// Outbound messages by catalog locale, the same way: a catalog has a handful, and a
        /// rendering's locale is the catalog's own string.
        var outboundByLocaleList: [(locale: String, count: Int)] = []

        /// Counts `count` outbound messages rendered in `locale`.
        mutating func countOutbound(_ count: Int, locale: String) {
            if let index = outboundByLocaleList.firstIndex(where: { $0.locale == locale }) {
                outboundByLocaleList[index].count += count
            } else {
                outboundByLocaleList.append((locale, count))
            }
        }

        /// Counts `count` outbound messages of `kind` in `category`.
        mutating func countOutbound(_ count: Int, kind: String, category: String) {
            if let index = outboundByKindList.firstIndex(where: { $0.kind == kind }) {
                outboundByKindList[index].count += count
            } else {
                outboundByKindList.append((kind, category, count))
            }
        }
    }

    private let counters = Mutex(Counters())
    private let firstBatch = Mutex<ContinuousClock.Instant?>(nil)

    public init() {}

    /// When the worker's consumer handed it its first batch of messages; `nil` before. A benchmark's
    /// clock starts here, as the raw passthrough's starts at its first message: the time before it is
    /// the feeder's and the broker's start-up, not the pipeline's throughput.
    public var firstBatchReceived: ContinuousClock.Instant? { firstBatch.withLock { $0 } }

    /// Notes that a batch arrived; only the first is kept.
    func noteBatchReceived() {
        firstBatch.withLock { first in
            if first == nil { first = .now }
        }
    }

    public func update(_ body: (inout Counters) -> Void) { counters.withLock { body(&$0) } }

    public var snapshot: Counters { counters.withLock { $0 } }

    /// ``Counters/handledEvents`` alone: for a caller that asks often (a benchmark's feeder, once
    /// per message), without copying the counters' dictionaries under the lock the worker updates.
    public var handledEvents: Int { counters.withLock { $0.handledEvents } }
}

/// A fixed-bucket histogram of seconds (Prometheus style: cumulative on export).
public struct LatencyHistogram: Sendable {
    public static let bounds: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    /// Observations per bucket; the last is everything above the largest bound.
    public private(set) var buckets = [Int](repeating: 0, count: bounds.count + 1)
    public private(set) var count = 0
    public private(set) var sum = 0.0

    public init() {}

    public mutating func observe(_ seconds: Double) {
        var index = 0
        while index < Self.bounds.count && seconds > Self.bounds[index] { index += 1 }
        buckets[index] += 1
        count += 1
        sum += seconds
    }

    /// Adds another histogram's observations to this one.
    public mutating func merge(_ other: LatencyHistogram) {
        for index in buckets.indices { buckets[index] += other.buckets[index] }
        count += other.count
        sum += other.sum
    }

    /// The upper bound of the bucket holding the `fraction` quantile (0.5: the median).
    public func quantile(_ fraction: Double) -> Double? {
        guard count > 0 else { return nil }
        let target = Int((Double(count) * fraction).rounded(.up))
        var seen = 0
        for (index, bucket) in buckets.enumerated() {
            seen += bucket
            if seen >= max(target, 1) { return index < Self.bounds.count ? Self.bounds[index] : .infinity }
        }
        return .infinity
    }
}

/// How many payloads had each size, exactly: percentiles without keeping every size.
///
/// Counted in an array indexed by size up to ``denseLimit`` (past every provider's body limit), a
/// dictionary only past it: a dictionary for all of them hashed the size of every outbound message.
public struct SizeCounts: Sendable {
    /// Sizes below this are counted by position.
    static let denseLimit = 65_536
    /// Payloads of each size below ``denseLimit``, by size; as long as the largest one seen.
    private var dense: [Int] = []
    /// Payloads of each larger size.
    private var sparse: [Int: Int] = [:]
    public private(set) var total = 0

    public init() {}

    /// Counts one payload of `size` bytes.
    public mutating func add(_ size: Int) {
        precondition(size >= 0, "a payload size is a count of bytes")
        if size < Self.denseLimit {
            if size >= dense.count { dense.append(contentsOf: repeatElement(0, count: size + 1 - dense.count)) }
            dense[size] += 1
        } else {
            sparse[size, default: 0] += 1
        }
        total += 1
    }

    public mutating func merge(_ other: SizeCounts) {
        if other.dense.count > dense.count {
            dense.append(contentsOf: repeatElement(0, count: other.dense.count - dense.count))
        }
        for (size, count) in other.dense.enumerated() where count > 0 { dense[size] += count }
        sparse.merge(other.sparse, uniquingKeysWith: +)
        total += other.total
    }

    /// The smallest size at least `fraction` of the payloads do not exceed.
    public func percentile(_ fraction: Double) -> Int {
        guard total > 0 else { return 0 }
        let rank = max(Int((fraction * Double(total)).rounded(.up)), 1)
        var seen = 0
        var largest = 0
        for (size, count) in dense.enumerated() where count > 0 {
            seen += count
            largest = size
            if seen >= rank { return size }
        }
        for size in sparse.keys.sorted() {
            seen += sparse[size]!
            largest = size
            if seen >= rank { return size }
        }
        return largest
    }
}

extension DecisionReason {
    /// Its place in `allCases`, found without a search.
    var position: Int {
        switch self {
        case .sent: 0
        case .suppressedPreference: 1
        case .suppressedQuietHours: 2
        case .deferredQuietHours: 3
        case .deferredThrottle: 4
        case .throttledDropped: 5
        case .throttledDigested: 6
        case .duplicate: 7
        case .noDevices: 8
        case .expired: 9
        case .invalidEvent: 10
        }
    }
}

extension PushProvider {
    static let byPosition: [PushProvider] = [.apns, .fcm, .expo]

    /// Its place in ``byPosition``.
    var position: Int {
        switch self {
        case .apns: 0
        case .fcm: 1
        case .expo: 2
        }
    }
}
