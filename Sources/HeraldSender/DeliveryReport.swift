import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldStore
import HeraldWorker

/// The records of `herald.deliveries` (`sender.deliveries_topic`): what became of each provider call,
/// one record per answer, for analytics — delivery rate (delivered against the worker's `sent`
/// decisions), dead tokens, failures by reason, provider latency. Keyed by the recipient, named as
/// ``AnalyticsRecipients`` says (hashed by default); never the device token.
enum DeliveryReport {
    enum Outcome: String {
        /// The provider accepted the call (for Expo: the push ticket was `ok`).
        case delivered
        /// No final answer yet: a retry is scheduled (`reason` says why).
        case retrying
        /// The device token is dead (APNs 410, FCM `UNREGISTERED`, Expo `DeviceNotRegistered`,
        /// from a receipt too); the directory is told.
        case invalidToken = "invalid_token"
        /// Dead-lettered: refused for good, a configuration error, or retries used up.
        case failed
    }

    /// The record for a call of `outbound` answered at `answeredAt`, `latency` seconds after it left.
    static func record(
        _ outbound: OutboundMessage,
        _ outcome: Outcome,
        reason: DeliveryOutcome.Reason?,
        latency: Double,
        answeredAt: Timestamp,
        topic: String,
        recipients: AnalyticsRecipients
    ) -> KafkaProducerRecord {
        record(for: outbound.recipient, topic: topic, recipients: recipients) { writer, recipient in
            writer.member("notificationId", outbound.notificationID)
            writer.member("eventId", outbound.eventID)
            writer.member("kind", outbound.kind)
            writer.member("category", outbound.category)
            writer.member("recipient", recipient)
            writer.member("provider", outbound.provider.rawValue)
            writer.member("app", outbound.app)
            writer.member("outcome", outcome.rawValue)
            if let reason { writer.member("reason", reason.code) }
            writer.member("attempt", integer: Int64(outbound.attempt))
            writer.member("latencyMs", integer: Int64((latency * 1000).rounded()))
            writer.member("createdAt", timestamp: outbound.createdAt)
            writer.member("answeredAt", timestamp: answeredAt)
        }
    }

    /// The record for an Expo receipt that reports a failure after the ticket was accepted: it
    /// knows the notification and its user, not the rest, which its `delivered` record has.
    static func record(
        receiptOf pending: PendingReceipt,
        _ outcome: Outcome,
        reason: DeliveryOutcome.Reason?,
        answeredAt: Timestamp,
        topic: String,
        recipients: AnalyticsRecipients
    ) -> KafkaProducerRecord {
        record(for: pending.recipient, topic: topic, recipients: recipients) { writer, recipient in
            writer.member("notificationId", pending.notificationID)
            writer.member("recipient", recipient)
            writer.member("provider", PushProvider.expo.rawValue)
            writer.member("outcome", outcome.rawValue)
            if let reason { writer.member("reason", reason.code) }
            writer.key("receipt")
            writer.bool(true)
            writer.member("answeredAt", timestamp: answeredAt)
        }
    }

    /// A record keyed by `userID` as `recipients` names them; `members` writes the object's members,
    /// given that name.
    private static func record(
        for userID: String,
        topic: String,
        recipients: AnalyticsRecipients,
        _ members: (inout JSONStreamWriter, String) -> Void
    ) -> KafkaProducerRecord {
        let recipient = recipients.name(userID)
        var writer = JSONStreamWriter(capacity: 384)
        writer.beginObject()
        members(&writer, recipient)
        writer.endObject()
        return KafkaProducerRecord(topic: topic, key: KafkaBytes(recipient), value: KafkaBytes(writer.bytes))
    }
}
