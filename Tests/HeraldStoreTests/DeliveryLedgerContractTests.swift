import HeraldEvents
import HeraldStore
import HeraldTestSupport
import Testing

@Suite("Delivery ledger contract")
struct DeliveryLedgerContractTests {
    let at = Timestamp(rfc3339: "2026-11-22T12:00:00Z")!

    @Test("a delivery is remembered once, and purged by age", arguments: StoreKind.allCases)
    func deliveries(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            #expect(try await store.delivered(among: ["n-1", "n-2"]).isEmpty)
            try await store.recordDeliveries([
                DeliveryRecord(notificationID: "n-1", provider: "apns", deliveredAt: at),
                DeliveryRecord(
                    notificationID: "n-2",
                    provider: "fcm",
                    deliveredAt: Timestamp(epochMilliseconds: at.epochMilliseconds + 1000)
                ),
            ])
            // Recording again (a redelivered batch) is harmless.
            try await store.recordDeliveries([DeliveryRecord(notificationID: "n-1", provider: "apns", deliveredAt: at)])
            #expect(try await store.delivered(among: ["n-1", "n-2", "n-3"]) == ["n-1", "n-2"])
            try await store.purgeDeliveries(before: Timestamp(epochMilliseconds: at.epochMilliseconds + 500))
            #expect(try await store.delivered(among: ["n-1", "n-2"]) == ["n-2"])
        }
    }

    @Test("a sender's whole group is looked up at once, across chunks and with repeats", arguments: StoreKind.allCases)
    func largeLookup(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            // Every third of 1,300 notifications was delivered; the group asks for all of them, some
            // twice (a redelivered event), more than one SQLite statement's worth.
            let ids = (0..<1300).map { "n-\($0)" }
            let delivered = ids.enumerated().filter { $0.offset % 3 == 0 }.map(\.element)
            try await store.recordDeliveries(
                delivered.map { DeliveryRecord(notificationID: $0, provider: "apns", deliveredAt: at) }
            )
            let asked = ids + ids.prefix(40) + ["never-sent"]
            #expect(try await store.delivered(among: asked) == Set(delivered))
            #expect(try await store.delivered(among: []).isEmpty)
        }
    }

    @Test("purging deliveries takes a backlog of several chunks", arguments: StoreKind.allCases)
    func deliveryBacklog(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let backlog = 2 * purgeChunk + 1
            try await store.recordDeliveries(
                (0..<backlog).map { DeliveryRecord(notificationID: "n-\($0)", provider: "apns", deliveredAt: at) }
            )
            let later = Timestamp(epochMilliseconds: at.epochMilliseconds + 1)
            try await store.recordDeliveries([
                DeliveryRecord(notificationID: "kept", provider: "fcm", deliveredAt: later)
            ])
            #expect(try await store.purgeDeliveries(before: later) == backlog)
            #expect(try await store.delivered(among: ["n-0", "n-\(backlog - 1)", "kept"]) == ["kept"])
        }
    }

    @Test(
        "pending receipts are claimed when due, by one sender at a time, until removed",
        arguments: StoreKind.allCases
    )
    func pendingReceipts(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let later = Timestamp(epochMilliseconds: at.epochMilliseconds + 60_000)
            try await store.addPendingReceipts([
                PendingReceipt(
                    ticketID: "t-1",
                    notificationID: "n-1",
                    recipient: "ana",
                    token: "ExponentPushToken[a]",
                    checkAfter: at
                ),
                PendingReceipt(
                    ticketID: "t-2",
                    notificationID: "n-2",
                    recipient: "ben",
                    token: "ExponentPushToken[b]",
                    checkAfter: later
                ),
            ])
            let first = try await store.claimPendingReceipts(now: at, limit: 10, lease: .seconds(30))
            #expect(first.map(\.ticketID) == ["t-1"])
            #expect(first.first?.recipient == "ana" && first.first?.token == "ExponentPushToken[a]")
            // Claimed: not handed out again while the lease lasts.
            #expect(try await store.claimPendingReceipts(now: at, limit: 10, lease: .seconds(30)).isEmpty)
            let afterLease = Timestamp(epochMilliseconds: later.epochMilliseconds)
            let second = try await store.claimPendingReceipts(now: afterLease, limit: 10, lease: .seconds(30))
            #expect(second.map(\.ticketID) == ["t-1", "t-2"])
            try await store.removePendingReceipts(["t-1", "t-2"])
            let muchLater = Timestamp(epochMilliseconds: later.epochMilliseconds + 3_600_000)
            #expect(try await store.claimPendingReceipts(now: muchLater, limit: 10, lease: .seconds(30)).isEmpty)
        }
    }
}
