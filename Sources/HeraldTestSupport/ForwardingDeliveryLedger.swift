import HeraldEvents
import HeraldStore

/// A test double around a real delivery ledger: every call goes to ``ledger`` unless the conforming
/// type implements it itself, to change its timing or watch it.
public protocol ForwardingDeliveryLedger: DeliveryLedger {
    var ledger: any DeliveryLedger { get }
}

extension ForwardingDeliveryLedger {
    public func delivered(among notificationIDs: [String]) async throws(StoreError) -> Set<String> {
        try await ledger.delivered(among: notificationIDs)
    }

    public func recordDeliveries(_ deliveries: [DeliveryRecord]) async throws(StoreError) {
        try await ledger.recordDeliveries(deliveries)
    }

    public func addPendingReceipts(_ receipts: [PendingReceipt]) async throws(StoreError) {
        try await ledger.addPendingReceipts(receipts)
    }

    public func claimPendingReceipts(
        now: Timestamp,
        limit: Int,
        lease: Duration
    ) async throws(StoreError) -> [PendingReceipt] {
        try await ledger.claimPendingReceipts(now: now, limit: limit, lease: lease)
    }

    public func removePendingReceipts(_ ticketIDs: [String]) async throws(StoreError) {
        try await ledger.removePendingReceipts(ticketIDs)
    }

    public func purgeDeliveries(before: Timestamp) async throws(StoreError) -> Int {
        try await ledger.purgeDeliveries(before: before)
    }
}
