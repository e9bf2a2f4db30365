import HeraldEvents

extension SQLiteStore: DeliveryLedger {
    public func delivered(among notificationIDs: [String]) async throws(StoreError) -> Set<String> {
        guard !notificationIDs.isEmpty else { return [] }
        return try await run { connection throws(StoreError) in
            // One statement per chunk, not one per id: each statement outside a transaction is a
            // read transaction of its own, with its own file locks.
            var delivered: Set<String> = []
            for start in stride(from: 0, to: notificationIDs.count, by: Self.chunkSize) {
                let chunk = notificationIDs[start..<min(start + Self.chunkSize, notificationIDs.count)]
                try connection.query(
                    SQLiteConnection.SQL(
                        built:
                            "SELECT notification_id FROM deliveries WHERE notification_id IN (\(Self.placeholders(chunk.count)))"
                    ),
                    chunk.map { .text($0) }
                ) { row in
                    if let id = row.text(0) { delivered.insert(id) }
                }
            }
            return delivered
        }
    }

    public func recordDeliveries(_ deliveries: [DeliveryRecord]) async throws(StoreError) {
        guard !deliveries.isEmpty else { return }
        try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                for delivery in deliveries {
                    try connection.query(
                        """
                        INSERT INTO deliveries (notification_id, provider, delivered_at) VALUES (?, ?, ?)
                        ON CONFLICT (notification_id) DO NOTHING
                        """,
                        [
                            .text(delivery.notificationID), .text(delivery.provider),
                            .integer(delivery.deliveredAt.epochMilliseconds),
                        ]
                    )
                }
            }
        }
    }

    public func addPendingReceipts(_ receipts: [PendingReceipt]) async throws(StoreError) {
        guard !receipts.isEmpty else { return }
        try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                for receipt in receipts {
                    try connection.query(
                        """
                        INSERT INTO pending_receipts (ticket_id, notification_id, recipient, token, check_after)
                        VALUES (?, ?, ?, ?, ?) ON CONFLICT (ticket_id) DO NOTHING
                        """,
                        [
                            .text(receipt.ticketID), .text(receipt.notificationID), .text(receipt.recipient),
                            .text(receipt.token), .integer(receipt.checkAfter.epochMilliseconds),
                        ]
                    )
                }
            }
        }
    }

    public func claimPendingReceipts(
        now: Timestamp,
        limit: Int,
        lease: Duration
    ) async throws(StoreError) -> [PendingReceipt] {
        let until = now.epochMilliseconds + lease.milliseconds
        return try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                var claimed: [PendingReceipt] = []
                try connection.query(
                    """
                    UPDATE pending_receipts SET claimed_until = ?1
                    WHERE ticket_id IN (SELECT ticket_id FROM pending_receipts
                        WHERE check_after <= ?2 AND (claimed_until IS NULL OR claimed_until <= ?2)
                        ORDER BY check_after LIMIT ?3)
                    RETURNING ticket_id, notification_id, recipient, token, check_after
                    """,
                    [.integer(until), .integer(now.epochMilliseconds), .integer(Int64(limit))]
                ) { row in
                    claimed.append(
                        PendingReceipt(
                            ticketID: row.text(0) ?? "",
                            notificationID: row.text(1) ?? "",
                            recipient: row.text(2) ?? "",
                            token: row.text(3) ?? "",
                            checkAfter: Timestamp(epochMilliseconds: row.integer(4))
                        )
                    )
                }
                return claimed.sorted { ($0.checkAfter, $0.ticketID) < ($1.checkAfter, $1.ticketID) }
            }
        }
    }

    public func removePendingReceipts(_ ticketIDs: [String]) async throws(StoreError) {
        guard !ticketIDs.isEmpty else { return }
        try await run { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                for id in ticketIDs {
                    try connection.query("DELETE FROM pending_receipts WHERE ticket_id = ?", [.text(id)])
                }
            }
        }
    }

    @discardableResult
    public func purgeDeliveries(before: Timestamp) async throws(StoreError) -> Int {
        try await deleteInChunks(
            """
            DELETE FROM deliveries WHERE notification_id IN
                (SELECT notification_id FROM deliveries WHERE delivered_at < ?1 LIMIT ?2)
            """,
            before: before
        )
    }
}
