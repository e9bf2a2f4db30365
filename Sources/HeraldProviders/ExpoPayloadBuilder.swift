import HeraldEvents

/// Builds Expo push messages (`https://exp.host/--/api/v2/push/send`, sent in batches of up to 100)
/// from a ``PushMessage``. Pure.
///
/// `{to, title, subtitle?, body, data, sound, badge?, channelId?, priority, ttl?, categoryId?,
/// mutableContent?}`, at most 4096 bytes each, with the same ``SizeBudget`` order as APNs.
public enum ExpoPayloadBuilder {
    /// Expo's limit for one message, in bytes.
    public static let limit = 4096
    /// The most messages one Expo request may carry.
    public static let batchSize = 100

    /// Builds the message for one Expo push token (`ExponentPushToken[...]` or `ExpoPushToken[...]`).
    ///
    /// - Throws: ``PayloadError`` (`.invalidToken`, `.payloadTooLarge`).
    public static func build(_ message: PushMessage, for device: Device) throws(PayloadError) -> [UInt8] {
        let token = device.token
        guard (token.hasPrefix("ExponentPushToken[") || token.hasPrefix("ExpoPushToken[")) && token.hasSuffix("]")
        else {
            throw PayloadError(code: .invalidToken, message: "an Expo push token looks like ExponentPushToken[...]")
        }
        let droppable = message.data.count + (message.subtitle == nil ? 0 : 1) + (message.deepLink == nil ? 0 : 1)
        // The bytes the budget chose are returned as they are: the search also builds candidates
        // that do not fit, so nothing may be kept from its last call.
        return try SizeBudget.fit(body: message.body, optionalParts: droppable, limit: limit, what: "the Expo message")
        {
            text,
            dropped in
            Self.message(message, token: token, body: text, dropped: dropped).serializedBytes
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

    static func message(_ message: PushMessage, token: String, body: String, dropped: Int) -> JSONValue {
        let kept = OptionalParts(message, dropped: dropped, subtitleIsDroppable: true)
        let (data, subtitle, deepLink) = (kept.data, kept.subtitle, kept.deepLink)
        var dataMembers: [(key: String, value: JSONValue)] = [
            (FCMPayloadBuilder.notificationIDKey, .string(message.notificationID))
        ]
        if let deepLink { dataMembers.append(("deepLink", .string(deepLink))) }
        for entry in data where entry.key != "deepLink" && entry.key != FCMPayloadBuilder.notificationIDKey {
            dataMembers.append((entry.key, .string(entry.value)))
        }

        var members: [(key: String, value: JSONValue)] = [("to", .string(token))]
        if !message.contentAvailable {
            members.append(("title", .string(message.title)))
            if let subtitle { members.append(("subtitle", .string(subtitle))) }
            members.append(("body", .string(body)))
        }
        members.append(("data", .object(JSONObject(dataMembers))))
        members.append(("sound", message.sound.map { .string($0) } ?? .null))
        if let badge = message.badge { members.append(("badge", .number(String(badge)))) }
        if let channel = message.androidChannel { members.append(("channelId", .string(channel))) }
        members.append(("priority", .string(message.highPriority ? "high" : "normal")))
        if let ttl = message.timeToLive { members.append(("ttl", .number(String(ttl)))) }
        if let category = message.category { members.append(("categoryId", .string(category))) }
        if message.mutableContent { members.append(("mutableContent", .bool(true))) }
        if message.contentAvailable { members.append(("_contentAvailable", .bool(true))) }
        return .object(JSONObject(members))
    }
}
