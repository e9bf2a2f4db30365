import HeraldEvents
import HeraldKafka
import HeraldPolicy

/// The `device.token.invalidated` directory event a dead token produces, keyed by the token
/// (``DirectoryEvent/topicKey``): keyed by its user, compaction of the directory topic would keep it
/// in place of the user's device registrations.
enum TokenInvalidation {
    static func record(
        topic: String,
        recipient: String,
        provider: PushProvider,
        token: String,
        at: Timestamp,
        eventID: String
    ) -> KafkaProducerRecord {
        var writer = JSONStreamWriter(capacity: 384)
        writer.beginObject()
        writer.member("specversion", "1.0")
        writer.member("id", eventID)
        writer.member("source", "/herald/sender")
        writer.member("type", "device.token.invalidated")
        writer.member("time", timestamp: at)
        writer.member("datacontenttype", "application/json")
        writer.key("data")
        writer.beginObject()
        writer.member("userId", recipient)
        writer.member("provider", provider.rawValue)
        writer.member("token", token)
        writer.endObject()
        writer.endObject()
        return KafkaProducerRecord(
            topic: topic,
            key: KafkaBytes(DirectoryEvent.tokenInvalidated(provider: provider, token: token, at: at).topicKey),
            value: KafkaBytes(writer.bytes),
            headers: [KafkaHeader("content-type", string: "application/cloudevents+json")]
        )
    }
}
