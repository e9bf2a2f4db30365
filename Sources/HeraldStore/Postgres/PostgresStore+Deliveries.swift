import HeraldEvents
import PostgresNIO

extension PostgresStore: DeliveryLedger {
    public func delivered(among notificationIDs: [String]) async throws(StoreError) -> Set<String> {
        guard !notificationIDs.isEmpty else { return [] }
        return try await storeCall("delivered") { [self] in
            var delivered: Set<String> = []
            for try await (id, ) in try await client.query(
                "SELECT notification_id FROM deliveries WHERE notification_id = ANY(\(notificationIDs)::text[])",
                logger: logger
            ).decode((String,).self) {
                delivered.insert(id)
            }
            return delivered
        }
    }

    public func recordDeliveries(_ deliveries: [DeliveryRecord]) async throws(StoreError) {
        guard !deliveries.isEmpty else { return }
        let ids = deliveries.map(\.notificationID)
        let providers = deliveries.map(\.provider)
        let times = deliveries.map(\.deliveredAt.epochMilliseconds)
        try await storeCall("record deliveries") { [self] in
            try await client.query(
                """
                INSERT INTO deliveries (notification_id, provider, delivered_at)
                SELECT * FROM unnest(\(ids)::text[], \(providers)::text[], \(times)::bigint[])
                ON CONFLICT (notification_id) DO NOTHING
                """,
                logger: logger
            )
        }
    }

    public func addPendingReceipts(_ receipts: [PendingReceipt]) async throws(StoreError) {
        guard !receipts.isEmpty else { return }
        let tickets = receipts.map(\.ticketID)
        let notifications = receipts.map(\.notificationID)
        let recipients = receipts.map(\.recipient)
        let tokens = receipts.map(\.token)
        let times = receipts.map(\.checkAfter.epochMilliseconds)
        try await storeCall("add pending receipts") { [self] in
            try await client.query(
                """
                INSERT INTO pending_receipts (ticket_id, notification_id, recipient, token, check_after)
                SELECT * FROM unnest(\(tickets)::text[], \(notifications)::text[], \(recipients)::text[],
                    \(tokens)::text[], \(times)::bigint[])
                ON CONFLICT (ticket_id) DO NOTHING
                """,
                logger: logger
            )
        }
    }

    public func claimPendingReceipts(
        now: Timestamp,
        limit: Int,
        lease: Duration
    ) async throws(StoreError) -> [PendingReceipt] {
        let until = now.epochMilliseconds + lease.milliseconds
        let current = now.epochMilliseconds
        // As with due work: an abandoned claim that commits holds its receipts for the lease.
        return try await storeCall("claim pending receipts", timeout: max(callTimeout, lease)) { [self] in
            var claimed: [PendingReceipt] = []
            // SKIP LOCKED: senders claiming at the same time take different tickets.
            for try await (ticket, notification, recipient, token, checkAfter) in try await client.query(
                """
                UPDATE pending_receipts SET claimed_until = \(until)
                WHERE ticket_id IN (SELECT ticket_id FROM pending_receipts
                    WHERE check_after <= \(current) AND (claimed_until IS NULL OR claimed_until <= \(current))
                    ORDER BY check_after LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING ticket_id, notification_id, recipient, token, check_after
                """,
                logger: logger
            ).decode((String, String, String, String, Int64).self) {
                claimed.append(
                    PendingReceipt(
                        ticketID: ticket,
                        notificationID: notification,
                        recipient: recipient,
                        token: token,
                        checkAfter: Timestamp(epochMilliseconds: checkAfter)
                    )
                )
            }
            return claimed.sorted { ($0.checkAfter, $0.ticketID) < ($1.checkAfter, $1.ticketID) }
        }
    }

    public func removePendingReceipts(_ ticketIDs: [String]) async throws(StoreError) {
        guard !ticketIDs.isEmpty else { return }
        try await storeCall("remove pending receipts") { [self] in
            try await client.query(
                "DELETE FROM pending_receipts WHERE ticket_id = ANY(\(ticketIDs)::text[])",
                logger: logger
            )
        }
    }

    @discardableResult
    public func purgeDeliveries(before: Timestamp) async throws(StoreError) -> Int {
        try await deleteInChunks("purge deliveries", from: "deliveries", olderThan: "delivered_at", before)
    }
}
