import HeraldEvents

/// Builds Expo push messages (`https://exp.host/--/api/v2/push/send`, sent in batches of up to 100)
/// from a ``PushMessage``. Pure.
///
/// `{to, title, subtitle?, body, data, sound, badge?, channelId?, priority, ttl?, categoryId?,
/// richContent {image}?, mutableContent?}`, at most 4096 bytes each, with the same ``SizeBudget`` order as APNs.
/// A badge-only push is `{to, data, sound: null, badge, priority, ttl?}`.
public enum ExpoPayloadBuilder {
    /// Expo's limit for one message, in bytes.
    public static let limit = 4096
    /// The most messages one Expo request may carry.
    public static let batchSize = 100

    /// Builds the message for one Expo push token (`ExponentPushToken[...]` or `ExpoPushToken[...]`).
    ///
    /// - Throws: ``PayloadError`` (`.invalidToken`, `.payloadTooLarge`).
    public static func build(_ message: PushMessage, for device: Device) throws(PayloadError) -> [UInt8] {
        try JSONStreamWriter.bytes { writer throws(PayloadError) in try write(message, for: device, into: &writer) }
    }

    /// Writes the message for one Expo push token into `writer`: where a message that carries the
    /// request wants it, without bytes of its own.
    ///
    /// - Returns: the message's size in bytes.
    /// - Throws: ``PayloadError`` (`.invalidToken`, `.payloadTooLarge`).
    @discardableResult
    public static func write(
        _ message: PushMessage,
        for device: Device,
        into writer: inout JSONStreamWriter
    ) throws(PayloadError) -> Int {
        let token = device.token
        guard (token.hasPrefix("ExponentPushToken[") || token.hasPrefix("ExpoPushToken[")) && token.hasSuffix("]")
        else {
            throw PayloadError(code: .invalidToken, message: "an Expo push token looks like ExponentPushToken[...]")
        }
        let droppable = OptionalParts.count(in: message, subtitleIsDroppable: true)
        return try SizeBudget.write(
            body: message.body,
            optionalParts: droppable,
            limit: limit,
            what: "the Expo message",
            into: &writer
        ) { writer, text, dropped in
            Self.message(message, token: token, body: text, dropped: dropped, into: &writer)
        }
    }

    /// Joins built messages into request bodies of at most ``batchSize`` messages (JSON arrays).
    public static func batches(_ messages: [[UInt8]]) -> [[UInt8]] {
        stride(from: 0, to: messages.count, by: batchSize).map { start in
            var body: [UInt8] = [UInt8(ascii: "[")]
            for (index, message) in messages[start..<min(start + batchSize, messages.count)].enumerated() {
                if index > 0 { body.append(UInt8(ascii: ",")) }
                body += message
            }
            body.append(UInt8(ascii: "]"))
            return body
        }
    }

    static func message(
        _ message: PushMessage,
        token: String,
        body: String,
        dropped: Int,
        into writer: inout JSONStreamWriter
    ) {
        let kept = OptionalParts(message, dropped: dropped, subtitleIsDroppable: true)
        writer.beginObject()
        writer.member("to", token)
        if message.showsAlert {
            writer.member("title", message.title)
            if let subtitle = kept.subtitle { writer.member("subtitle", subtitle) }
            writer.member("body", body)
        }
        writer.key("data")
        writer.beginObject()
        writer.member(FCMPayloadBuilder.notificationIDLiteral, message.notificationID)
        if let deepLink = kept.deepLink { writer.member("deepLink", deepLink) }
        message.encodedData.write(kept: kept.keptData, skipping: [.deepLink, .notificationID], into: &writer)
        writer.endObject()
        writer.key("sound")
        if let sound = message.sound, message.showsAlert { writer.string(sound) } else { writer.null() }
        if let badge = message.badge { writer.member("badge", integer: Int64(badge)) }
        // A channel and a category (action buttons) belong to a notification a badge-only push
        // does not show.
        if let channel = message.androidChannel, message.showsAlert { writer.member("channelId", channel) }
        writer.member("priority", literal: message.highPriority ? "high" : "normal")
        if let ttl = message.timeToLive { writer.member("ttl", integer: Int64(ttl)) }
        if let category = message.category, message.showsAlert { writer.member("categoryId", category) }
        // Android shows the image itself; on iOS the app's notification service extension attaches
        // it, which mutableContent lets run.
        let image = kept.writeImage("richContent", of: message, into: &writer)
        // The service extension runs for a notification shown, which a badge-only push is not.
        if message.showsAlert && (message.mutableContent || image) {
            writer.key("mutableContent")
            writer.bool(true)
        }
        if message.contentAvailable {
            writer.key("_contentAvailable")
            writer.bool(true)
        }
        writer.endObject()
    }
}
