import HeraldEvents

/// Builds FCM HTTP v1 `messages:send` bodies (standard mode) from a ``PushMessage``. Pure.
///
/// `{"message": {token, notification {title, body}, data (strings only), android {priority, ttl
/// "Ns", collapse_key, notification {channel_id, sound, tag, notification_count}}, apns {headers,
/// fcm_options {image}, payload {aps}}}}`.
/// The whole JSON is kept within 4096 bytes; the same ``SizeBudget`` order as APNs applies (data
/// last-first, then the deep link). FCM's reserved data keys (`from`, `notification`,
/// `message_type`, `collapse_key` and the `google.`, `gcm.` prefixes) are left out. A badge-only
/// push is a data message (no `notification`) with its count in `data.herald_badge`, for the app to
/// set its launcher's count, and in `apns.payload.aps.badge`.
public enum FCMPayloadBuilder {
    /// FCM's limit for the whole message, in bytes.
    public static let limit = 4096

    /// Builds the body for one device token.
    ///
    /// - Throws: ``PayloadError`` (`.invalidToken`, `.payloadTooLarge`).
    public static func build(_ message: PushMessage, for device: Device) throws(PayloadError) -> [UInt8] {
        try JSONStreamWriter.bytes(capacity: 1536) { writer throws(PayloadError) in
            try write(message, for: device, into: &writer)
        }
    }

    /// Writes the body for one device token into `writer`: where a message that carries the
    /// request wants it, without bytes of its own.
    ///
    /// - Returns: the body's size in bytes.
    /// - Throws: ``PayloadError`` (`.invalidToken`, `.payloadTooLarge`).
    @discardableResult
    public static func write(
        _ message: PushMessage,
        for device: Device,
        into writer: inout JSONStreamWriter
    ) throws(PayloadError) -> Int {
        var token = device.token
        let printable = token.withUTF8 { bytes in
            for byte in bytes where byte <= 0x20 || byte >= 0x7F { return false }
            return true
        }
        guard !token.isEmpty, token.utf8.count <= 4096, printable else {
            throw PayloadError(
                code: .invalidToken,
                message: "an FCM registration token is printable ASCII without spaces"
            )
        }
        let droppable = OptionalParts.count(in: message, subtitleIsDroppable: false)
        return try SizeBudget.write(
            body: message.body,
            optionalParts: droppable,
            limit: limit,
            what: "the FCM message",
            into: &writer
        ) { writer, text, dropped in
            Self.message(message, token: device.token, body: text, dropped: dropped, into: &writer)
        }
    }

    /// The data key that carries the notification id.
    public static let notificationIDKey = notificationIDLiteral.description
    /// ``notificationIDKey`` as a literal, which JSON writers take without an escape check.
    static let notificationIDLiteral: StaticString = "herald_notification_id"
    /// The data key that carries a badge-only push's count (FCM data is strings: `"3"`).
    public static let badgeKey = badgeLiteral.description
    static let badgeLiteral: StaticString = "herald_badge"

    static func isReserved(_ key: String) -> Bool {
        // Every reserved key starts with one of these letters, each letter's keys one name or two
        // prefixes: most data keys are decided by their first byte. Compared byte for byte, by
        // length first: `==` and `hasPrefix` compare by canonical equivalence, a call into the
        // standard library each (about 170 instructions a key).
        switch key.utf8.first {
        case UInt8(ascii: "f"): return key.hasUTF8("from")
        case UInt8(ascii: "n"): return key.hasUTF8("notification")
        case UInt8(ascii: "m"): return key.hasUTF8("message_type")
        case UInt8(ascii: "c"): return key.hasUTF8("collapse_key")
        case UInt8(ascii: "g"): return key.hasUTF8Prefix("google.") || key.hasUTF8Prefix("gcm.")
        default: return false
        }
    }

    static func message(
        _ message: PushMessage,
        token: String,
        body: String,
        dropped: Int,
        into writer: inout JSONStreamWriter
    ) {
        let kept = OptionalParts(message, dropped: dropped, subtitleIsDroppable: false, filtered: .fcmReserved)
        writer.beginObject()
        writer.key("message")
        writer.beginObject()
        writer.member("token", token)
        if message.showsAlert {
            writer.key("notification")
            writer.beginObject()
            writer.member("title", message.title)
            writer.member("body", body)
            // Android shows it as the big picture; iOS gets it through fcm_options below.
            if let image = kept.imageURL { writer.member("image", image) }
            writer.endObject()
        }
        do {
            // The notification id rides along in every message (never dropped: it is what the app
            // and the delivery records use to tell notifications apart).
            writer.key("data")
            writer.beginObject()
            writer.member(notificationIDLiteral, message.notificationID)
            // Android shows no badge without a notification: a badge-only push is a data message,
            // and the app sets its launcher's count from this.
            if message.badgeOnly, let badge = message.badge {
                writer.key(badgeLiteral)
                writer.string(integer: Int64(badge))
            }
            if let deepLink = kept.deepLink { writer.member("deepLink", deepLink) }
            message.encodedData.write(
                kept: kept.keptData,
                filtered: .fcmReserved,
                skipping: message.badgeOnly ? [.deepLink, .notificationID, .badge] : [.deepLink, .notificationID],
                into: &writer
            )
            writer.endObject()
        }
        writer.key("android")
        writer.beginObject()
        writer.member("priority", literal: message.highPriority ? "HIGH" : "NORMAL")
        if let ttl = message.timeToLive {
            writer.key("ttl")
            writer.string(integer: Int64(ttl), suffix: "s")
        }
        if let collapseKey = message.collapseKey { writer.member("collapse_key", collapseKey) }
        if message.showsAlert,
            message.androidChannel != nil || message.sound != nil || message.collapseKey != nil
                || message.badge != nil
        {
            writer.key("notification")
            writer.beginObject()
            if let channel = message.androidChannel { writer.member("channel_id", channel) }
            if let sound = message.sound { writer.member("sound", sound) }
            if let collapseKey = message.collapseKey { writer.member("tag", collapseKey) }
            // The count launchers that show one put on the app's icon (APNs' badge is in aps below).
            if let badge = message.badge { writer.member("notification_count", integer: Int64(badge)) }
            writer.endObject()
        }
        writer.endObject()
        writer.key("apns")
        writer.beginObject()
        writer.key("headers")
        writer.beginObject()
        writer.member("apns-push-type", literal: message.contentAvailable ? "background" : "alert")
        writer.member("apns-priority", literal: message.contentAvailable || !message.highPriority ? "5" : "10")
        if let ttl = message.timeToLive {
            writer.key("apns-expiration")
            writer.string(integer: message.createdAt.epochMilliseconds / 1000 + Int64(ttl))
        }
        if let collapseKey = message.collapseKey {
            writer.member("apns-collapse-id", APNsPayloadBuilder.collapseID(collapseKey))
        }
        writer.endObject()
        // The image for the app's notification service extension (Firebase's extension helper
        // reads it here); mutable-content below lets the extension run.
        let image = kept.writeImage("fcm_options", of: message, into: &writer)
        // FCM turns `notification` into aps.alert itself; aps carries the iOS presentation options.
        writer.key("payload")
        writer.beginObject()
        writer.key("aps")
        APNsPayloadBuilder.writeAPS(
            &writer,
            message,
            alertTitle: nil,
            subtitle: nil,
            alertBody: body,
            silent: message.contentAvailable,
            mutableContent: message.mutableContent || image
        )
        writer.endObject()
        writer.endObject()
        writer.endObject()
        writer.endObject()
    }
}
