/// The pending deliveries of records queued by one ``KafkaProducer/enqueue(_:)`` or
/// ``KafkaProducer/enqueue(contentsOf:)`` call, in the order the records were given.
public struct KafkaDeliveries: Sendable {
    let producer: KafkaProducer
    let tickets: [DeliveryTicket]

    /// How many records this covers.
    public var count: Int { tickets.reduce(0) { $0 + $1.count } }

    /// Waits until every record is delivered or has failed, and returns the failures only (with the
    /// record's index), cheaper than ``wait()`` when the offsets are not needed.
    public func failures() async -> [(index: Int, error: KafkaError)] {
        var all: [(index: Int, error: KafkaError)] = []
        var base = 0
        for ticket in tickets {
            let done: [(index: Int, error: KafkaError)]? = producer.state.withLock { _ in
                ticket.remaining == 0 ? ticket.failures() : nil
            }
            let failures: [(index: Int, error: KafkaError)]
            if let done {
                failures = done
            } else {
                failures = await withCheckedContinuation { continuation in
                    let done: [(index: Int, error: KafkaError)]? = producer.state.withLock { _ in
                        if ticket.remaining == 0 { return ticket.failures() }
                        ticket.failureWaiter = continuation
                        return nil
                    }
                    if let done { continuation.resume(returning: done) }
                }
            }
            all += failures.map { (base + $0.index, $0.error) }
            base += ticket.count
        }
        return all
    }

    /// Waits until every record is delivered or has failed, and returns the results in record order.
    public func wait() async -> [Result<KafkaDeliveryReport, KafkaError>] {
        var results: [Result<KafkaDeliveryReport, KafkaError>] = []
        for ticket in tickets {
            let done: [Result<KafkaDeliveryReport, KafkaError>]? = producer.state.withLock { _ in
                ticket.remaining == 0 ? ticket.results() : nil
            }
            if let done {
                results += done
                continue
            }
            results += await withCheckedContinuation { continuation in
                let done: [Result<KafkaDeliveryReport, KafkaError>]? = producer.state.withLock { _ in
                    if ticket.remaining == 0 { return ticket.results() }
                    ticket.waiter = continuation
                    return nil
                }
                if let done { continuation.resume(returning: done) }
            }
        }
        return results
    }
}

/// The results of one chunk of records. Its mutable fields are only touched under the producer's
/// state lock.
///
/// A delivery arrives for every message, so a success takes 12 bytes (partition and offset) and
/// failures are kept on the side; `Result` values are built only when ``results()`` is asked for.
final class DeliveryTicket: @unchecked Sendable {
    // @unchecked: every access to the stored results, `remaining` and `waiter` happens while the
    // owning producer's `state` lock is held. For the same reason they are not checked for
    // exclusive access at run time (`@exclusivity(unchecked)`), which cost two calls into the
    // runtime for every record's delivery.
    let count: Int
    @exclusivity(unchecked) private var partitions: [Int32]
    /// The offset of each delivered record; `pending` until its report arrives, `unknown` when the
    /// broker gave none (an idempotent retry).
    @exclusivity(unchecked) private var offsets: [Int64]
    @exclusivity(unchecked) private var failed: [Int: KafkaError] = [:]
    @exclusivity(unchecked) private(set) var remaining: Int
    var waiter: CheckedContinuation<[Result<KafkaDeliveryReport, KafkaError>], Never>?
    var failureWaiter: CheckedContinuation<[(index: Int, error: KafkaError)], Never>?

    private static let pending = Int64.min
    private static let unknown = Int64.min + 1

    init(count: Int) {
        self.count = count
        partitions = Array(repeating: -1, count: count)
        offsets = Array(repeating: Self.pending, count: count)
        remaining = count
    }

    private func isDone(_ index: Int) -> Bool {
        offsets[index] != Self.pending || (!failed.isEmpty && failed[index] != nil)
    }

    /// Records a delivery; returns whether this completed the ticket.
    func succeed(_ index: Int, partition: Int32, offset: Int64?) -> Bool {
        guard !isDone(index) else { return false }
        partitions[index] = partition
        offsets[index] = offset ?? Self.unknown
        remaining -= 1
        return remaining == 0
    }

    /// Records a failure; returns whether this completed the ticket.
    func fail(_ index: Int, _ error: KafkaError) -> Bool {
        guard !isDone(index) else { return false }
        failed[index] = error
        remaining -= 1
        return remaining == 0
    }

    func failRemaining(_ error: KafkaError) {
        for index in 0..<count where !isDone(index) { _ = fail(index, error) }
    }

    func results() -> [Result<KafkaDeliveryReport, KafkaError>] {
        (0..<count).map { index in
            if let error = failed[index] { return .failure(error) }
            let offset = offsets[index]
            if offset == Self.pending { return .failure(.closed("producer")) }
            return .success(
                KafkaDeliveryReport(partition: partitions[index], offset: offset == Self.unknown ? nil : offset)
            )
        }
    }

    func failures() -> [(index: Int, error: KafkaError)] {
        failed.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Resumes whoever waits on a completed ticket.
    func resumeWaiters() {
        if let waiter {
            self.waiter = nil
            waiter.resume(returning: results())
        }
        if let failureWaiter {
            self.failureWaiter = nil
            failureWaiter.resume(returning: failures())
        }
    }
}
