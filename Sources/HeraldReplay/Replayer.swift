import HeraldCatalog
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldStore
import HeraldWorker
import Logging
import Synchronization

/// Runs recorded records through the worker's own ``EventProcessor`` — decode, directory, policy,
/// render, payloads — on event time, and writes what the worker would have produced.
///
/// Records are cut into batches of at most ``Configuration/batchSize`` events spanning at most
/// ``Configuration/tick`` of event time; each batch is decided at its last event's time. Before a
/// batch, the deferred notifications and digests that came due by its first event are produced at
/// the time each came due. So the outcome depends on the log and the configuration only: the
/// same inputs give byte-identical outputs, whatever ``Configuration/parallelism`` is.
///
/// Like the worker, the store decides batch n + 1 while batch n is rendered and built (in parts, on
/// the other cores); outputs are written in log order.
public final class Replayer: Sendable {
    public struct Configuration: Sendable {
        public var batchSize = 500
        /// The most event time one batch spans: the live worker's due-work interval.
        public var tick: Duration = .seconds(1)
        /// How many parts of a batch are rendered and built concurrently.
        public var parallelism = Worker.onlineCores
        /// Whether due work still pending after the last event is produced (the clock runs on to
        /// when it comes due), as it would have been had the worker kept running.
        public var drain = true
        public var topics = WorkerTopics()
        public var unknownEventTypes = UnknownEventTypes.deadLetter
        /// As the worker's `worker.max_devices_per_recipient`.
        public var maximumDevicesPerRecipient = EventProcessor.defaultMaximumDevicesPerRecipient
        /// How long the decision ledger remembers, and how often what is older is purged, on event
        /// time: what the worker's `store.retention` does on the wall clock. The ledger of a long
        /// log holds about a retention's worth of decisions, not all of them, and an event
        /// redelivered after the retention is decided again, as it would be live.
        public var purge = PurgeSchedule()

        public init() {}
    }

    let configuration: Configuration
    let processor: EventProcessor
    let store: any StateStore
    let clock: EventTimeClock
    let statistics = WorkerStatistics()
    let fallbacks = FallbackCounts()
    let throttled = ThrottledCounts()
    let logger: Logger

    public init(
        configuration: Configuration,
        catalog: Catalog,
        policy: Policy,
        store: any StateStore,
        logger: Logger
    ) {
        // Decision records are made only for a decisions file (`topics.decisions`): the report
        // counts decisions from the worker's counters, and throttled recipients as they are decided.
        self.configuration = configuration
        self.store = store
        self.logger = logger
        let clock = EventTimeClock()
        self.clock = clock
        let fallbacks = fallbacks
        let throttled = throttled
        self.processor = EventProcessor(
            catalog: catalog,
            policy: policy,
            store: store,
            clock: clock,
            topics: configuration.topics,
            unknownEventTypes: configuration.unknownEventTypes,
            statistics: statistics,
            logger: logger,
            onFallbackLocale: { kind, requested, used in
                // `nb-NO` rendered from `nb` is the catalog working as designed; a language the
                // catalog lacks (or no locale at all) is a missing translation.
                // Called for most renders when profiles carry regions: compared as ASCII bytes (locale
                // tags are ASCII), without Characters or allocations on the way out.
                if let language = requested?.utf8.prefix(while: { $0 != UInt8(ascii: "-") && $0 != UInt8(ascii: "_") }),
                    language.elementsEqual(used.utf8, by: { Self.lowercased($0) == Self.lowercased($1) })
                {
                    return
                }
                fallbacks.add(ReplayReport.Fallback(kind: kind, requested: requested ?? "", used: used))
            },
            onThrottled: { recipient in throttled.add(recipient) },
            maximumDevicesPerRecipient: configuration.maximumDevicesPerRecipient
        )
    }

    /// An ASCII letter in lower case; any other byte as it is.
    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
    }

    /// How many batches are built at once, while the next is decided. One leaves the builders idle
    /// whenever a batch is built before the next is decided; two keep them busy through the
    /// batch-to-batch variation, for one more batch's records in memory.
    static let buildDepth = 2

    /// A batch on its way: built on other cores while the next is decided.
    private struct Built: Sendable {
        var records: [KafkaProducerRecord]
        var tally: ReplayTally
    }

    /// Replays `sources` one after another into `output`.
    ///
    /// - Throws: ``StoreError`` or ``ReplayError`` (a source or an output that cannot be used):
    ///   poison records are reported, never thrown.
    public func run(_ sources: [any RecordSource], into output: ReplayOutput) async throws -> ReplayReport {
        // Decision records are made only when asked for; a decisions file without them would
        // stay empty, silently.
        if output.writesDecisions && configuration.topics.decisions == nil { throw ReplayError.decisionsNotRecorded }
        var state = RunState()
        for source in sources {
            try await Self.readAhead(source) { chunk in
                // By index: `for record in` copies each record out, retaining and releasing all of it.
                for index in chunk.indices {
                    let time = chunk[index].time
                    if let time {
                        state.firstEventTime = min(state.firstEventTime ?? time, time)
                        state.lastEventTime = max(state.lastEventTime ?? time, time)
                    }
                    let full = state.messages.count >= configuration.batchSize
                    var late = false
                    if let start = state.batchStart, let time {
                        late = time.epochMilliseconds - start.epochMilliseconds > configuration.tick.milliseconds
                    }
                    if full || late { try await flush(&state, into: output) }
                    if state.batchStart == nil { state.batchStart = time }
                    if let time { state.batchEnd = max(state.batchEnd ?? time, time) }
                    // Split as they arrive: the processor takes messages and events apart, and a
                    // second pass over the records would copy each of them once more.
                    state.messages.append(chunk[index].message)
                    state.events.append(chunk[index].event)
                    state.records += 1
                }
            }
        }
        try await flush(&state, into: output)
        for pending in state.building { try write(await pending.value, to: output, tally: &state.tally) }
        state.building.removeAll()
        var pendingAtEnd: Timestamp?
        if configuration.drain {
            try write(try await fireDue(until: nil), to: output, tally: &state.tally)
        } else {
            pendingAtEnd = try await store.nextDueAt()
        }
        try output.finish()
        state.tally.throttledByRecipient = throttled.counts
        return ReplayReport(
            sources: sources.map(\.name),
            records: state.records,
            firstEventTime: state.firstEventTime,
            lastEventTime: state.lastEventTime,
            counters: statistics.snapshot,
            tally: state.tally,
            fallbacks: fallbacks.counts,
            pendingDueAt: pendingAtEnd
        )
    }

    /// Chunks read (and decoded) ahead of the one being processed, at most: reading the next
    /// records while a batch is decided, without holding more than this of the log in memory.
    static let chunksAhead = 8

    /// Calls `body` with `source`'s chunks in order, while a task of its own reads up to
    /// ``chunksAhead`` chunks ahead. Decoding lines would otherwise wait for each batch to be
    /// decided, and deciding for the lines to be decoded: on the path every batch takes in turn.
    static func readAhead(
        _ source: any RecordSource,
        _ body: ([ReplayRecord]) async throws -> Void
    ) async throws {
        let (chunks, chunkInput) = AsyncThrowingStream.makeStream(of: [ReplayRecord].self)
        // One credit per chunk the reader may hand over before `body` has taken it.
        let (credits, creditInput) = AsyncStream.makeStream(of: Void.self)
        for _ in 0..<chunksAhead { creditInput.yield() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                var available = credits.makeAsyncIterator()
                do {
                    try await source.read { chunk in
                        // nil: `body` stopped taking chunks (it threw, and the group was cancelled).
                        guard await available.next() != nil else { throw CancellationError() }
                        chunkInput.yield(chunk)
                    }
                    chunkInput.finish()
                } catch {
                    chunkInput.finish(throwing: error)
                }
            }
            defer { creditInput.finish() }
            for try await chunk in chunks {
                creditInput.yield()
                try await body(chunk)
            }
            try await group.waitForAll()
        }
    }

    private struct RunState {
        /// The batch being gathered: its records' messages and their decoded events.
        var messages: [KafkaMessage] = []
        var events: [CloudEvent?] = []
        var batchStart: Timestamp?
        /// The latest event time in the batch, which the clock moves to before deciding it.
        var batchEnd: Timestamp?
        /// Batches being built, in order; due work fired between them sits here too, already built.
        var building: [Task<Built, Never>] = []
        var tally = ReplayTally()
        var records = 0
        var firstEventTime: Timestamp?
        var lastEventTime: Timestamp?
        /// The event time of the last purge.
        var purgedAt: Timestamp?
    }

    /// Fires what came due before the batch, decides the batch, writes what has been built
    /// beyond the last ``buildDepth`` batches, and starts building this one.
    private func flush(_ state: inout RunState, into output: ReplayOutput) async throws {
        guard !state.messages.isEmpty else { return }
        let (messages, events) = (state.messages, state.events)
        state.messages.removeAll(keepingCapacity: true)
        state.events.removeAll(keepingCapacity: true)
        let (start, end) = (state.batchStart, state.batchEnd)
        (state.batchStart, state.batchEnd) = (nil, nil)
        let due = try await fireDue(until: start ?? clock.now())
        if let end { clock.advance(to: end) }
        try await purgeIfDue(&state)
        let decided = try await processor.decide(messages, decoded: events)
        while state.building.count >= Self.buildDepth {
            try write(await state.building.removeFirst().value, to: output, tally: &state.tally)
        }
        if !due.records.isEmpty { state.building.append(Task { due }) }
        let (processor, parallelism, topics) = (processor, configuration.parallelism, configuration.topics)
        state.building.append(
            Task {
                let records = await processor.build(decided, parts: parallelism)
                return Built(records: records, tally: ReplayTally(records, topics: topics))
            }
        )
    }

    /// Purges the ledger as the worker's ``PurgeSchedule`` would: at the first batch, then every
    /// interval of event time, of what was decided a retention before the clock.
    private func purgeIfDue(_ state: inout RunState) async throws(StoreError) {
        let schedule = configuration.purge
        let now = clock.now()
        guard schedule.interval > .zero else { return }
        if let purgedAt = state.purgedAt,
            now.epochMilliseconds - purgedAt.epochMilliseconds < schedule.interval.milliseconds
        {
            return
        }
        state.purgedAt = now
        let before = Timestamp(epochMilliseconds: now.epochMilliseconds - schedule.retention.milliseconds)
        let purged = try await store.purge(before: before)
        statistics.update { $0.purgedDecisions += purged }
    }

    /// Produces the deferred notifications and digests due by `limit` (all of them for `nil`), each
    /// at the time it came due, in due order.
    private func fireDue(until limit: Timestamp?) async throws(StoreError) -> Built {
        var records: [KafkaProducerRecord] = []
        while let next = try await store.nextDueAt(), limit.map({ next <= $0 }) ?? true {
            clock.advance(to: next)
            // Completed at once below; a short lease keeps work deferred again claimable.
            let (produced, claimed) = try await processor.processDue(limit: 1000, lease: .milliseconds(1))
            // Due work the store will not hand out (claimed elsewhere): leave it rather than spin.
            guard !claimed.isEmpty else { break }
            records += produced
            try await store.complete(claimed)
        }
        return Built(records: records, tally: ReplayTally(records, topics: configuration.topics))
    }

    private func write(_ built: Built, to output: ReplayOutput, tally: inout ReplayTally) throws {
        tally.merge(built.tally)
        try output.write(built.records, topics: configuration.topics)
    }
}

/// Renders that fell back to another locale, counted from the build tasks.
final class FallbackCounts: Sendable {
    private let storage = Mutex<[ReplayReport.Fallback: Int]>([:])

    func add(_ fallback: ReplayReport.Fallback) { storage.withLock { $0[fallback, default: 0] += 1 } }

    var counts: [ReplayReport.Fallback: Int] { storage.withLock { $0 } }
}

/// Throttled decisions by hashed recipient, counted from the build tasks.
final class ThrottledCounts: Sendable {
    private let storage = Mutex<[String: Int]>([:])

    func add(_ recipient: String) {
        let user = Redact.user(recipient)
        storage.withLock { $0[user, default: 0] += 1 }
    }

    var counts: [String: Int] { storage.withLock { $0 } }
}
