import HeraldEvents
import HeraldPolicy
import HeraldStore
import HeraldTestSupport
import Synchronization

/// A real store whose every other `decide` call answers late, as a network store's round trips
/// sometimes do: a worker that let the next batch's decide start before this one's finished would
/// see the later batch decided first.
///
/// With `holdingAfter`, a `decide` call that comes once that many requests were decided waits until
/// ``release()``: a test can be sure events are still to do at a moment of its choosing, however
/// quick the worker is.
final class UnevenLatencyStore: StateStore, ForwardingDeliveryLedger {
    let store: any StateStore
    var ledger: any DeliveryLedger { store }
    let delay: Duration
    let holdingAfter: Int?
    private let calls = Atomic<Int>(0)
    private let requestsDecided = Atomic<Int>(0)
    private let released = Atomic<Bool>(false)
    private let finished = Mutex<[[DecisionKey]]>([])

    /// The keys of each `decide` call, in the order the calls finished.
    var decidedBatches: [[DecisionKey]] { finished.withLock { $0 } }

    init(_ store: any StateStore, delay: Duration = .milliseconds(40), holdingAfter: Int? = nil) {
        self.store = store
        self.delay = delay
        self.holdingAfter = holdingAfter
    }

    /// Lets the held `decide` calls, and all later ones, go on.
    func release() { released.store(true, ordering: .releasing) }

    func decide(_ requests: [DecisionRequest]) async throws(StoreError) -> [Decision] {
        let call = calls.add(1, ordering: .relaxed).oldValue
        if let holdingAfter, requestsDecided.load(ordering: .relaxed) >= holdingAfter {
            // A cancelled sleep returns at once: the check keeps a stopping worker from spinning.
            while !released.load(ordering: .acquiring) && !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        if call % 2 == 0 { try? await Task.sleep(for: delay) }
        let decisions = try await store.decide(requests)
        requestsDecided.add(requests.count, ordering: .relaxed)
        finished.withLock { $0.append(requests.map(\.key)) }
        return decisions
    }

    func apply(_ events: [DirectoryEvent]) async throws(StoreError) -> AppliedChanges {
        try await store.apply(events)
    }

    func recipients(_ userIDs: [String]) async throws(StoreError) -> [OpaqueID: Recipient] {
        try await store.recipients(userIDs)
    }

    func deletions(_ userIDs: [String]) async throws(StoreError) -> [OpaqueID: Timestamp] {
        try await store.deletions(userIDs)
    }

    func claimDue(now: Timestamp, limit: Int, lease: Duration) async throws(StoreError) -> [DueWork] {
        try await store.claimDue(now: now, limit: limit, lease: lease)
    }

    func nextDueAt() async throws(StoreError) -> Timestamp? { try await store.nextDueAt() }

    func complete(_ work: [DueWork]) async throws(StoreError) { try await store.complete(work) }

    func purge(before: Timestamp) async throws(StoreError) -> Int { try await store.purge(before: before) }

    func analyze() async throws(StoreError) { try await store.analyze() }
}
