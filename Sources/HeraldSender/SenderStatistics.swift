import HeraldWorker
import Synchronization

/// The sender's counters, for `/metrics`.
public final class SenderStatistics: Sendable {
    public struct Counters: Sendable {
        /// Provider calls by `provider outcome-class`.
        public var callsByOutcome: [String: Int] = [:]
        /// Answers by reason code (`apns.Unregistered`, `transport.timeout`).
        public var answersByReason: [String: Int] = [:]
        /// Messages sent to retry topic n, by n.
        public var retriesByStep: [String: Int] = [:]
        public var deadLettersByCode: [String: Int] = [:]
        /// Configuration errors (dead-lettered at once), by code.
        public var configurationErrors: [String: Int] = [:]
        public var tokensInvalidated = 0
        /// Messages not sent because the ledger says they were delivered, or because the same
        /// notification (a redelivered event's copy) came twice in one group or while another
        /// group's call for it was still out.
        public var skippedAlreadyDelivered = 0
        public var expired = 0
        /// Messages put back because their provider's circuit was open.
        public var circuitDeferred = 0
        public var receiptsChecked = 0
        /// Delivery ledger entries deleted by the retention purge.
        public var purgedDeliveries = 0
        /// Delivery ledger look-ups and entries the store refused (`store.rejected`) even on their
        /// own: skipped, so that the partition goes on; such a notification may be sent twice.
        public var ledgerRefusals = 0
        /// Call latency by provider.
        public var latencies: [String: LatencyHistogram] = [:]

        public init() {}
    }

    private let counters = Mutex(Counters())

    public init() {}

    public func update(_ body: (inout Counters) -> Void) { counters.withLock { body(&$0) } }

    public var snapshot: Counters { counters.withLock { $0 } }
}
