/// The pending deliveries of records queued by one ``KafkaProducer/enqueue(_:)`` call.
public struct KafkaDeliveries: Sendable {
    let producer: KafkaProducer
    let tickets: [DeliveryTicket]

    /// How many records this covers.
    public var count: Int { tickets.reduce(0) { $0 + $1.count } }

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
final class DeliveryTicket: @unchecked Sendable {
    // @unchecked: every access to `slots`, `remaining` and `waiter` happens while the owning
    // producer's `state` lock is held.
    let count: Int
    private var slots: [Result<KafkaDeliveryReport, KafkaError>?]
    private(set) var remaining: Int
    var waiter: CheckedContinuation<[Result<KafkaDeliveryReport, KafkaError>], Never>?

    init(count: Int) {
        self.count = count
        slots = Array(repeating: nil, count: count)
        remaining = count
    }

    /// Records one result; returns the waiter to resume if this completed the ticket.
    func complete(
        _ index: Int,
        _ result: Result<KafkaDeliveryReport, KafkaError>
    ) -> CheckedContinuation<[Result<KafkaDeliveryReport, KafkaError>], Never>? {
        guard slots[index] == nil else { return nil }
        slots[index] = result
        remaining -= 1
        guard remaining == 0 else { return nil }
        defer { waiter = nil }
        return waiter
    }

    func failRemaining(_ error: KafkaError) -> CheckedContinuation<[Result<KafkaDeliveryReport, KafkaError>], Never>? {
        var waiter: CheckedContinuation<[Result<KafkaDeliveryReport, KafkaError>], Never>?
        for index in slots.indices where slots[index] == nil {
            waiter = complete(index, .failure(error)) ?? waiter
        }
        return waiter
    }

    func results() -> [Result<KafkaDeliveryReport, KafkaError>] {
        slots.map { $0 ?? .failure(.closed("producer")) }
    }
}
