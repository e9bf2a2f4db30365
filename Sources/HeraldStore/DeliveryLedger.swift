import HeraldEvents

/// What the sender remembers: which notifications a provider accepted (so a redelivered outbound
/// message is never sent twice), and which Expo tickets still owe a receipt.
public protocol DeliveryLedger: Sendable {
    /// The ids among `notificationIDs` already delivered (one round trip).
    func delivered(among notificationIDs: [String]) async throws(StoreError) -> Set<String>
    /// Records deliveries; recording one twice keeps the first.
    func recordDeliveries(_ deliveries: [DeliveryRecord]) async throws(StoreError)
    /// Remembers Expo tickets whose receipts are to be fetched from `checkAfter` on.
    func addPendingReceipts(_ receipts: [PendingReceipt]) async throws(StoreError)
    /// Claims up to `limit` tickets whose receipts are due, for `lease`: another sender sees them
    /// again only if this one does not remove them in time.
    func claimPendingReceipts(now: Timestamp, limit: Int, lease: Duration) async throws(StoreError) -> [PendingReceipt]
    /// Forgets tickets whose receipts were read.
    func removePendingReceipts(_ ticketIDs: [String]) async throws(StoreError)
    /// Forgets deliveries recorded before `before`, in transactions of at most ``purgeChunk``;
    /// returns how many.
    @discardableResult
    func purgeDeliveries(before: Timestamp) async throws(StoreError) -> Int
}

public struct DeliveryRecord: Sendable, Hashable {
    public var notificationID: String
    public var provider: String
    public var deliveredAt: Timestamp

    public init(notificationID: String, provider: String, deliveredAt: Timestamp) {
        self.notificationID = notificationID
        self.provider = provider
        self.deliveredAt = deliveredAt
    }
}

/// An Expo ticket whose receipt is still to be read, with what the sender needs to act on it.
public struct PendingReceipt: Sendable, Hashable {
    public var ticketID: String
    public var notificationID: String
    /// The user the device belongs to, and its token: a `DeviceNotRegistered` receipt invalidates it.
    public var recipient: String
    public var token: String
    public var checkAfter: Timestamp

    public init(ticketID: String, notificationID: String, recipient: String, token: String, checkAfter: Timestamp) {
        self.ticketID = ticketID
        self.notificationID = notificationID
        self.recipient = recipient
        self.token = token
        self.checkAfter = checkAfter
    }
}
