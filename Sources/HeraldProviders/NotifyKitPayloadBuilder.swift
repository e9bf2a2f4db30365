import HeraldEvents

/// NotifyKit FCM mode (react-native-notify-kit's server contract, seed `001`): one FCM HTTP v1
/// message that Android receives data-only (the app draws it from the `notifee_options` blob) and
/// iOS receives as an alert with `mutable-content: 1` (the notification service extension reads the
/// same blob). Validation rules and their messages are the contract's, prefixed
/// `[react-native-notify-kit/server]`.
///
/// Where the contract is silent, this implementation:
/// - keeps the caller's member order inside `notification.android` and `notification.ios` in the
///   blob (as `JSON.stringify` would);
/// - gives attachments without an `identifier` the identifier `attachment-<index>` (as the
///   contract's example shows);
/// - adds `notifee_data` (the data map as one JSON string) to both `data` and `apns.payload` when
///   the data has more than 5 keys;
/// - maps `timeSensitive` to APNs's `time-sensitive`.
public enum NotifyKitPayloadBuilder {
    public static let errorPrefix = "[react-native-notify-kit/server] "
    /// The size at which the contract warns.
    public static let warningSize = 3500

    /// A built message and its size in bytes (`sizeBytes`, which is not part of the JSON).
    public struct Output: Sendable {
        public var message: [UInt8]
        public var sizeBytes: Int { message.count }
        /// The contract's warning when the message is above ``warningSize``.
        public var warning: String? {
            sizeBytes > NotifyKitPayloadBuilder.warningSize
                ? "\(NotifyKitPayloadBuilder.errorPrefix)Payload size \(sizeBytes) bytes approaches FCM 4KB limit. Consider reducing notifee_options."
                : nil
        }
    }

    /// A validation failure with the contract's exact message.
    public struct ValidationError: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    static func fail(_ text: String) -> ValidationError { ValidationError(message: errorPrefix + text) }

    /// The JavaScript `typeof` of a JSON value, as the contract's messages print it.
    static func typeOf(_ value: JSONValue) -> String {
        switch value {
        case .string: "string"
        case .number: "number"
        case .bool: "boolean"
        case .null, .object, .array: "object"
        }
    }

    /// The value as an integer if JavaScript's `Number.isInteger` holds for it (`3600` and `3600.0`
    /// both do), else `nil`.
    static func integer(_ value: JSONValue) -> Int64? {
        guard case .number(let text) = value else { return nil }
        if let exact = Int64(text) { return exact }
        guard let number = Double(text), number.isFinite, number.rounded() == number,
            abs(number) < 9.007_199_254_740_992e15
        else { return nil }
        return Int64(number)
    }

    /// How JavaScript would print the value in a message (`String(value)`).
    static func printed(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): text
        case .number(let text): text
        case .bool(let flag): flag ? "true" : "false"
        case .null: "null"
        case .array: "[object Array]"
        case .object: "[object Object]"
        }
    }

    /// Validates a `NotifyKitPayloadInput` and builds the FCM message.
    ///
    /// - Parameter nowMilliseconds: the current time, for `apns-expiration` (now + ttl).
    /// - Throws: ``ValidationError`` with the contract's message.
    public static func build(_ input: JSONValue, nowMilliseconds: Int64) throws(ValidationError) -> Output {
        guard case .object(let root) = input else { throw fail("Validation: input must be an object") }
        let routes = ["token", "topic", "condition"].filter { root[$0] != nil && root[$0] != .null }
        guard routes.count == 1 else {
            throw fail(
                "Routing: exactly one of 'token', 'topic', or 'condition' must be provided. Got: \(routes.count)"
            )
        }
        let routeKey = routes[0]
        guard case .string(let route) = root[routeKey]!, !route.isEmpty else {
            throw fail("Routing: '\(routeKey)' must be a non-empty string")
        }
        guard case .object(let notification)? = root["notification"] else {
            throw fail("Validation: 'notification' is required and must be an object")
        }
        var id: String?
        if let value = notification["id"], value != .null {
            guard case .string(let text) = value, !text.isEmpty else {
                throw fail("Validation: notification.id must be a non-empty string when provided")
            }
            id = text
        }
        guard case .string(let title)? = notification["title"], !title.isEmpty else {
            throw fail("Validation: notification.title is required and must be a non-empty string")
        }
        guard case .string(let body)? = notification["body"], !body.isEmpty else {
            throw fail("Validation: notification.body is required and must be a non-empty string")
        }
        var data: [(key: String, value: String)] = []
        if let value = notification["data"], value != .null {
            guard case .object(let object) = value else {
                throw fail("Validation: 'notification.data' must be an object")
            }
            for (key, member) in object {
                guard case .string(let text) = member else {
                    throw fail(
                        "Validation: FCM data values must be strings. Got \(typeOf(member)) for key '\(key)'. Use JSON.stringify() if you need to pass complex values."
                    )
                }
                data.append((key, text))
            }
            if data.contains(where: { $0.key == "notifee_options" || $0.key == "notifee_data" }) {
                throw fail(
                    "Validation: 'notifee_options' and 'notifee_data' are reserved keys and cannot be used in notification.data"
                )
            }
        }
        var ios = JSONObject()
        if case .object(let object)? = notification["ios"] { ios = object }
        var attachments: [JSONValue]?
        if let value = ios["attachments"], value != .null {
            guard case .array(let list) = value else {
                throw fail("iOS: 'notification.ios.attachments' must be an array")
            }
            var normalized: [JSONValue] = []
            for (index, attachment) in list.enumerated() {
                guard case .object(var object) = attachment, case .string(let url)? = object["url"] else {
                    throw fail("iOS: each attachment must be an object with a string 'url' field")
                }
                guard url.hasPrefix("https://") else {
                    throw fail("iOS: iOS attachments require https:// URLs. Got: \(url)")
                }
                if object["identifier"] == nil { object.members.append(("identifier", .string("attachment-\(index)"))) }
                normalized.append(.object(object))
            }
            attachments = normalized
        }
        var interruptionLevel: String?
        if let value = ios["interruptionLevel"], value != .null {
            let text = printed(value)
            guard case .string = value, ["passive", "active", "timeSensitive", "critical"].contains(text) else {
                throw fail(
                    "Validation: invalid interruptionLevel '\(text)'. Expected one of: passive, active, timeSensitive, critical"
                )
            }
            interruptionLevel = text
        }
        var options = JSONObject()
        if let value = root["options"], value != .null {
            guard case .object(let object) = value else { throw fail("Validation: 'options' must be an object") }
            options = object
        }
        var highPriority = true
        if let value = options["androidPriority"], value != .null {
            guard case .string(let text) = value, text == "high" || text == "normal" else {
                throw fail("Validation: 'options.androidPriority' must be 'high' or 'normal'. Got: \(printed(value))")
            }
            highPriority = text == "high"
        }
        var badge: Int64?
        if let value = options["iosBadgeCount"], value != .null {
            guard let number = integer(value), number >= 0 else {
                throw fail("Validation: 'options.iosBadgeCount' must be a non-negative integer")
            }
            badge = number
        }
        var ttl: Int64?
        if let value = options["ttl"], value != .null {
            guard let number = integer(value), number > 0 else {
                throw fail("Validation: options.ttl must be a positive integer (seconds). Got: \(printed(value))")
            }
            ttl = number
        }
        var collapseKey = id
        if let value = options["collapseKey"], value != .null {
            guard case .string(let text) = value, !text.isEmpty else {
                throw fail("Validation: 'options.collapseKey' must be a non-empty string")
            }
            collapseKey = text
        }

        // The blob: byte-identical on both platforms.
        var blob = JSONStreamWriter(capacity: 512)
        blob.beginObject()
        blob.member("_v", integer: 1)
        blob.member("title", title)
        blob.member("body", body)
        if case .object(let android)? = notification["android"] {
            blob.key("android")
            blob.raw(JSONValue.object(android).serializedBytes)
        }
        if !ios.members.isEmpty {
            var blobIOS = ios
            if let attachments {
                blobIOS.members = blobIOS.members.map { $0.key == "attachments" ? ($0.key, .array(attachments)) : $0 }
            }
            blob.key("ios")
            blob.raw(JSONValue.object(blobIOS).serializedBytes)
        }
        blob.endObject()
        let blobText = String(decoding: blob.bytes, as: UTF8.self)
        var notifeeData: String?
        if data.count > 5 {
            notifeeData = JSONValue.object(JSONObject(data.map { ($0.key, JSONValue.string($0.value)) })).serialized
        }

        var writer = JSONStreamWriter(capacity: 1536)
        writer.beginObject()
        writer.member(routeKey, route)
        writer.key("data")
        writer.beginObject()
        for entry in data { writer.member(entry.key, entry.value) }
        writer.member("notifee_options", blobText)
        if let notifeeData { writer.member("notifee_data", notifeeData) }
        writer.endObject()
        writer.key("android")
        writer.beginObject()
        writer.member("priority", highPriority ? "HIGH" : "NORMAL")
        if let collapseKey { writer.member("collapse_key", collapseKey) }
        if let ttl { writer.member("ttl", String(ttl) + "s") }
        writer.endObject()
        writer.key("apns")
        writer.beginObject()
        writer.key("headers")
        writer.beginObject()
        writer.member("apns-push-type", "alert")
        writer.member("apns-priority", "10")
        // APNs refuses an `apns-collapse-id` over 64 bytes, and FCM passes the refusal on for the
        // one device: a long `notification.id` (the default key) would fail every iOS send. Android's
        // `collapse_key` has no such limit and keeps the key as given.
        if let collapseKey { writer.member("apns-collapse-id", APNsPayloadBuilder.collapseID(collapseKey)) }
        if let ttl { writer.member("apns-expiration", String(nowMilliseconds / 1000 + ttl)) }
        writer.endObject()
        writer.key("payload")
        writer.beginObject()
        writer.key("aps")
        writer.beginObject()
        writer.key("alert")
        writer.beginObject()
        writer.member("title", title)
        writer.member("body", body)
        writer.endObject()
        writer.member("mutable-content", integer: 1)
        if case .string(let sound)? = ios["sound"] { writer.member("sound", sound) }
        if case .string(let category)? = ios["categoryId"] { writer.member("category", category) }
        if case .string(let thread)? = ios["threadId"] { writer.member("thread-id", thread) }
        if let interruptionLevel {
            writer.member(
                "interruption-level",
                interruptionLevel == "timeSensitive" ? "time-sensitive" : interruptionLevel
            )
        }
        if let badge { writer.member("badge", integer: badge) }
        writer.endObject()
        writer.member("notifee_options", blobText)
        if let notifeeData { writer.member("notifee_data", notifeeData) }
        writer.endObject()
        writer.endObject()
        writer.endObject()
        return Output(message: writer.bytes)
    }
}
