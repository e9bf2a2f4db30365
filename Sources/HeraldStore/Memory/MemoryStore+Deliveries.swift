import HeraldEvents

extension MemoryStore {
    public func delivered(among notificationIDs: [String]) async throws(StoreError) -> Set<String> {
        deliveries.withLock { tables in Set(notificationIDs.filter { tables.delivered[$0] != nil }) }
    }

    public func recordDeliveries(_ records: [DeliveryRecord]) async throws(StoreError) {
        deliveries.withLock { tables in
            for record in records where tables.delivered[record.notificationID] == nil {
                tables.delivered[record.notificationID] = record.deliveredAt
            }
        }
    }

    public func addPendingReceipts(_ receipts: [PendingReceipt]) async throws(StoreError) {
        deliveries.withLock { tables in
            for receipt in receipts where tables.pending[receipt.ticketID] == nil {
                tables.pending[receipt.ticketID] = (receipt, nil)
            }
        }
    }

    public func claimPendingReceipts(
        now: Timestamp,
        limit: Int,
        lease: Duration
    ) async throws(StoreError) -> [PendingReceipt] {
        let until = Timestamp(epochMilliseconds: now.epochMilliseconds + lease.milliseconds)
        return deliveries.withLock { tables in
            let claimable = tables.pending.values.filter { receipt, claimedUntil in
                receipt.checkAfter <= now && (claimedUntil.map { $0 <= now } ?? true)
            }
            let claimed = claimable.map(\.receipt).sorted {
                ($0.checkAfter, $0.ticketID) < ($1.checkAfter, $1.ticketID)
            }
            .prefix(limit)
            for receipt in claimed { tables.pending[receipt.ticketID]?.claimedUntil = until }
            return Array(claimed)
        }
    }

    public func removePendingReceipts(_ ticketIDs: [String]) async throws(StoreError) {
        deliveries.withLock { tables in
            for id in ticketIDs { tables.pending[id] = nil }
        }
    }

    @discardableResult
    public func purgeDeliveries(before: Timestamp) async throws(StoreError) -> Int {
        deliveries.withLock { tables in
            let count = tables.delivered.count
            tables.delivered = tables.delivered.filter { $0.value >= before }
            return count - tables.delivered.count
        }
    }
}

/// The sender's ledger: when each notification was delivered, and the Expo tickets still owing a
/// receipt with their claims.
struct DeliveryTables: Sendable {
    var delivered: [String: Timestamp] = [:]
    var pending: [String: (receipt: PendingReceipt, claimedUntil: Timestamp?)] = [:]
}
