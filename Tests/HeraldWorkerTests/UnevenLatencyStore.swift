import HeraldEvents
import HeraldPolicy
import HeraldStore
import Synchronization

/// A real store whose every other `decide` call answers late, as a network store's round trips
/// sometimes do: a worker that let the next batch's decide start before this one's finished would
/// see the later batch decided first.
final class UnevenLatencyStore: StateStore {
    let store: any StateStore
    let delay: Duration
    private let calls = Atomic<Int>(0)
    private let finished = Mutex<[[DecisionKey]]>([])

    /// The keys of each `decide` call, in the order the calls finished.
    var decidedBatches: [[DecisionKey]] { finished.withLock { $0 } }

    init(_ store: any StateStore, delay: Duration = .milliseconds(40)) {
        self.store = store
        self.delay = delay
    }

    func decide(_ requests: [DecisionRequest]) async throws(StoreError) -> [Decision] {
        if calls.add(1, ordering: .relaxed).oldValue % 2 == 0 { try? await Task.sleep(for: delay) }
        let decisions = try await store.decide(requests)
        finished.withLock { $0.append(requests.map(\.key)) }
        return decisions
    }

    func apply(_ events: [DirectoryEvent]) async throws(StoreError) -> AppliedChanges {
        try await store.apply(events)
    }

    func recipients(_ userIDs: [String]) async throws(StoreError) -> [String: Recipient] {
        try await store.recipients(userIDs)
    }

    func deletions(_ userIDs: [String]) async throws(StoreError) -> [String: Timestamp] {
        try await store.deletions(userIDs)
    }

    func claimDue(now: Timestamp, limit: Int, lease: Duration) async throws(StoreError) -> [DueWork] {
        try await store.claimDue(now: now, limit: limit, lease: lease)
    }

    func nextDueAt() async throws(StoreError) -> Timestamp? { try await store.nextDueAt() }

    func complete(_ work: [DueWork]) async throws(StoreError) { try await store.complete(work) }

    func purge(before: Timestamp) async throws(StoreError) -> Int { try await store.purge(before: before) }

    func analyze() async throws(StoreError) { try await store.analyze() }

    func delivered(among notificationIDs: [String]) async throws(StoreError) -> Set<String> {
        try await store.delivered(among: notificationIDs)
    }

    func recordDeliveries(_ deliveries: [DeliveryRecord]) async throws(StoreError) {
        try await store.recordDeliveries(deliveries)
    }

    func addPendingReceipts(_ receipts: [PendingReceipt]) async throws(StoreError) {
        try await store.addPendingReceipts(receipts)
    }

    func claimPendingReceipts(
        now: Timestamp,
        limit: Int,
        lease: Duration
    ) async throws(StoreError)
        -> [PendingReceipt]
    {
        try await store.claimPendingReceipts(now: now, limit: limit, lease: lease)
    }

    func removePendingReceipts(_ ticketIDs: [String]) async throws(StoreError) {
        try await store.removePendingReceipts(ticketIDs)
    }

    func purgeDeliveries(before: Timestamp) async throws(StoreError) -> Int {
        try await store.purgeDeliveries(before: before)
    }
}
