import HeraldEvents

/// One request to APNs: where to send it, its headers and its JSON body.
public struct APNsRequest: Sendable, Hashable {
    /// `api.push.apple.com` or `api.sandbox.push.apple.com`.
    public var host: String
    /// `/3/device/<token>`.
    public var path: String
    /// `apns-*` headers, in a stable order.
    public var headers: [Header]
    /// The JSON body, exactly as sent.
    public var body: [UInt8]

    public struct Header: Sendable, Hashable {
        public var name: String
        public var value: String
    }

    public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
}

/// Builds APNs requests (HTTP/2, token auth) from a ``PushMessage``. Pure.
///
/// The body is `{"aps": {...}, <custom keys>}`: `aps` holds alert (title, subtitle, body, or
/// localized keys), badge,
/// sound (a name, or the critical-sound dictionary), thread-id, category, interruption-level,
/// relevance-score, mutable-content and content-available; custom keys are `deepLink` and the
/// message's data. Headers: `apns-push-type`, `apns-priority` (10, or 5 for background and
/// normal priority), `apns-expiration` (created-at + TTL), `apns-collapse-id` (at most 64 bytes),
/// `apns-topic` (the bundle id, with the push type's suffix) and `apns-id` (a UUID derived from the
/// notification id, so a retried request carries the same id). A badge-only push
/// (``PushMessage/badgeOnly``) is an alert push whose `aps` holds the badge alone.
///
/// Size: at most 4096 bytes of body (5120 for VoIP). Optional parts are dropped in this order when
/// shortening the body is not enough: data entries (last first), the subtitle, the image, the deep
/// link.
public enum APNsPayloadBuilder {
    /// The APNs push types Herald sends.
    public enum PushType: String, Sendable, CaseIterable {
        case alert, background, voip, complication, fileprovider, liveactivity

        /// The raw value as a literal, which the worker writes into its outbound JSON without
        /// making a string of it or checking it for escapes.
        var literal: StaticString {
            switch self {
            case .alert: "alert"
            case .background: "background"
            case .voip: "voip"
            case .complication: "complication"
            case .fileprovider: "fileprovider"
            case .liveactivity: "liveactivity"
            }
        }

        var topicSuffix: String {
            switch self {
            case .alert, .background: ""
            case .voip: ".voip"
            case .complication: ".complication"
            case .fileprovider: ".pushkit.fileprovider"
            case .liveactivity: ".push-type.liveactivity"
            }
        }
    }

    /// The body limit for a push type, in bytes.
    public static func limit(for pushType: PushType) -> Int { pushType == .voip ? 5120 : 4096 }

    /// The longest `apns-collapse-id` APNs accepts, in bytes.
    public static let maximumCollapseIDBytes = 64

    /// Builds the request for one device.
    ///
    /// - Parameter pushType: default `.background` for a silent push, `.alert` otherwise.
    /// - Throws: ``PayloadError`` (`.invalidToken`, `.payloadTooLarge`).
    public static func build(
        _ message: PushMessage,
        for device: Device,
        pushType: PushType? = nil
    ) throws(PayloadError) -> APNsRequest {
        var request = try head(message, for: device, pushType: pushType)
        request.body = try JSONStreamWriter.bytes { writer throws(PayloadError) in
            try writeBody(message, pushType: pushType, into: &writer)
        }
        return request
    }

    /// The request without its body: host, path and headers, once the token is checked.
    ///
    /// - Throws: ``PayloadError`` `.invalidToken`.
    public static func head(
        _ message: PushMessage,
        for device: Device,
        pushType requested: PushType? = nil
    ) throws(PayloadError) -> APNsRequest {
        try checkToken(device.token)
        var headers: [APNsRequest.Header] = []
        headers.reserveCapacity(6)
        forEachHeader(message, appID: device.appID, pushType: requested) { name, value in
            headers.append(.init(name: name.description, value: value.string))
        }
        return APNsRequest(
            host: device.environment == .sandbox ? "api.sandbox.push.apple.com" : "api.push.apple.com",
            path: "/3/device/\(device.token)",
            headers: headers,
            body: []
        )
    }

    /// - Throws: ``PayloadError`` `.invalidToken` unless `token` looks like an APNs device token.
    public static func checkToken(_ token: String) throws(PayloadError) {
        guard isValidToken(token) else {
            throw PayloadError(code: .invalidToken, message: "an APNs device token is 64 or more hex digits")
        }
    }

    /// One `apns-*` header's value, as ``forEachHeader(_:appID:pushType:_:)`` hands it over: made
    /// of parts borrowed where they are, so that a caller that writes the headers out (the worker,
    /// into its outbound JSON) makes no string for them.
    public enum HeaderValue {
        case text(String)
        /// A value known when Herald is built (a push type, a priority); it needs no escaping.
        case literal(StaticString)
        case integer(Int64)
        /// Two texts joined: the topic, the app's bundle id and the push type's suffix.
        case joined(String, String)
        /// The UUID ``StableHash`` derives from a notification id (`apns-id`).
        case uuid(derivedFrom: String)

        /// The value as the header's text.
        public var string: String {
            switch self {
            case .text(let text): text
            case .literal(let text): text.description
            case .integer(let number): String(number)
            case .joined(let first, let second): first + second
            case .uuid(let text): StableHash.uuid(from: text)
            }
        }

        /// Writes the value as a JSON string.
        public func write(to writer: inout JSONStreamWriter) {
            switch self {
            case .text(let text): writer.string(text)
            case .literal(let text): writer.string(literal: text)
            case .integer(let number): writer.string(integer: number)
            case .joined(let first, let second): writer.string(first, second)
            case .uuid(let text): StableHash.withUUID(from: text) { writer.string(utf8: $0) }
            }
        }
    }

    /// Calls `body` with each `apns-*` header of the request for `message` to an app, in order.
    public static func forEachHeader(
        _ message: PushMessage,
        appID: String,
        pushType requested: PushType? = nil,
        _ body: (_ name: StaticString, HeaderValue) -> Void
    ) {
        // Names as literals: the worker writes them into its outbound JSON as they are, without the
        // escape check every other string gets.
        let pushType = resolved(requested, for: message)
        let silent = pushType == .background
        body("apns-push-type", .literal(pushType.literal))
        body("apns-priority", .literal(silent || !message.highPriority ? "5" : "10"))
        if let ttl = message.timeToLive {
            body("apns-expiration", .integer(message.createdAt.epochMilliseconds / 1000 + Int64(ttl)))
        }
        if let collapseKey = message.collapseKey, !collapseKey.isEmpty {
            body("apns-collapse-id", .text(collapseID(collapseKey)))
        }
        body("apns-topic", .joined(appID, pushType.topicSuffix))
        body("apns-id", .uuid(derivedFrom: message.notificationID))
    }

    /// Writes the body into `writer`, within the push type's limit: where a message that carries
    /// the request wants it, without bytes of its own.
    ///
    /// - Returns: the body's size in bytes.
    /// - Throws: ``PayloadError`` `.payloadTooLarge`.
    @discardableResult
    public static func writeBody(
        _ message: PushMessage,
        pushType requested: PushType? = nil,
        into writer: inout JSONStreamWriter
    ) throws(PayloadError) -> Int {
        let pushType = resolved(requested, for: message)
        let silent = pushType == .background
        // Optional parts, in the order they are dropped.
        let droppable = OptionalParts.count(in: message, subtitleIsDroppable: true)
        return try SizeBudget.write(
            body: message.body,
            optionalParts: droppable,
            limit: limit(for: pushType),
            what: "the APNs payload",
            into: &writer
        ) { writer, text, dropped in
            Self.body(message, alertBody: text, dropped: dropped, silent: silent, into: &writer)
        }
    }

    /// The push type asked for, else `.background` for a silent push and `.alert` otherwise.
    static func resolved(_ requested: PushType?, for message: PushMessage) -> PushType {
        requested ?? (message.contentAvailable ? .background : .alert)
    }

    /// A collapse id of at most 64 bytes. A longer key keeps a grapheme-safe prefix and a hash of the
    /// whole key, so two long keys that share a prefix still collapse separately.
    static func collapseID(_ key: String) -> String {
        guard key.utf8.count > maximumCollapseIDBytes else { return key }
        let hash = StableHash.hexString(StableHash.fnv1a(key))
        return String(key.graphemePrefix(maximumUTF8Bytes: maximumCollapseIDBytes - hash.count - 1)) + "~" + hash
    }

    static func isValidToken(_ token: String) -> Bool {
        // Read in place (a copy for `withUTF8` retained the token): every APNs request checks one.
        if let valid = token.utf8.withContiguousStorageIfAvailable({ isValidToken(UnsafeRawBufferPointer($0)) }) {
            return valid
        }
        var token = token
        return token.withUTF8 { isValidToken(UnsafeRawBufferPointer($0)) }
    }

    /// 64 to 200 hex digits, an even number of them: checked sixteen at a time (the last sixteen
    /// overlapping the ones before), as the token is at least 64.
    static func isValidToken(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let count = bytes.count
        guard count >= 64, count <= 200, count % 2 == 0, let start = bytes.baseAddress else { return false }
        // Written out here, as in `JSONWriter.needsEscaping`: so the generic SIMD operations are
        // lowered to vector compares.
        let zero = SIMD16<UInt8>(repeating: UInt8(ascii: "0"))
        let nine = SIMD16<UInt8>(repeating: UInt8(ascii: "9"))
        let a = SIMD16<UInt8>(repeating: UInt8(ascii: "a"))
        let f = SIMD16<UInt8>(repeating: UInt8(ascii: "f"))
        // Upper-case letters are made lower-case by setting bit 5; no other byte becomes a-f so.
        let lowerCase = SIMD16<UInt8>(repeating: 0x20)
        var offset = 0
        while true {
            let chunk = start.loadUnaligned(fromByteOffset: offset, as: SIMD16<UInt8>.self)
            let letter = chunk | lowerCase
            let digits = (chunk .>= zero) .& (chunk .<= nine)
            let letters = (letter .>= a) .& (letter .<= f)
            if !all(digits .| letters) { return false }
            offset += 16
            if offset >= count { return true }
            offset = min(offset, count - 16)
        }
    }

    /// The serialized body with the first `dropped` optional parts left out.
    static func body(
        _ message: PushMessage,
        alertBody: String,
        dropped: Int,
        silent: Bool,
        into writer: inout JSONStreamWriter
    ) {
        let kept = OptionalParts(message, dropped: dropped, subtitleIsDroppable: true)
        writer.beginObject()
        writer.key("aps")
        writeAPS(
            &writer,
            message,
            alertTitle: message.title,
            subtitle: kept.subtitle,
            alertBody: alertBody,
            silent: silent,
            mutableContent: kept.mutableContent(message)
        )
        if let deepLink = kept.deepLink { writer.member("deepLink", deepLink) }
        // For the app's notification service extension, which downloads and attaches it.
        let image = silent || !message.showsAlert ? nil : kept.imageURL
        if let image { writer.member("imageUrl", image) }
        // "aps" is APNs' own key; a data entry of that name would be ignored or break the payload.
        message.encodedData.write(
            kept: kept.keptData,
            skipping: image == nil ? [.aps, .deepLink] : [.aps, .deepLink, .imageURL],
            into: &writer
        )
        writer.endObject()
    }

    /// Writes the `aps` dictionary. `alertTitle` `nil` leaves the alert out (FCM adds it from its own
    /// `notification`).
    static func writeAPS(
        _ writer: inout JSONStreamWriter,
        _ message: PushMessage,
        alertTitle: String?,
        subtitle: String?,
        alertBody: String,
        silent: Bool,
        mutableContent: Bool
    ) {
        writer.beginObject()
        if silent {
            writer.member("content-available", integer: 1)
            writer.endObject()
            return
        }
        if message.badgeOnly {
            // No alert, sound or content-available: the phone changes the icon's count and nothing else.
            if let badge = message.badge { writer.member("badge", integer: Int64(badge)) }
            writer.endObject()
            return
        }
        if let localization = message.alertLocalization, alertTitle != nil {
            // The app resolves the text from its own string tables on the device.
            writer.key("alert")
            writer.beginObject()
            if let titleKey = localization.titleKey {
                writer.member("title-loc-key", titleKey)
                writeStrings(&writer, "title-loc-args", localization.titleArguments)
            }
            writer.member("loc-key", localization.bodyKey)
            writeStrings(&writer, "loc-args", localization.bodyArguments)
            writer.endObject()
        } else if let alertTitle {
            writer.key("alert")
            writer.beginObject()
            writer.member("title", alertTitle)
            if let subtitle { writer.member("subtitle", subtitle) }
            writer.member("body", alertBody)
            writer.endObject()
        }
        if let badge = message.badge { writer.member("badge", integer: Int64(badge)) }
        if let sound = message.sound {
            writer.key("sound")
            if let volume = message.criticalSoundVolume {
                writer.beginObject()
                writer.member("critical", integer: 1)
                writer.member("name", sound)
                writer.key("volume")
                writer.number(decimal(min(max(volume, 0), 1)))
                writer.endObject()
            } else {
                writer.string(sound)
            }
        }
        if let threadID = message.threadID { writer.member("thread-id", threadID) }
        if let category = message.category { writer.member("category", category) }
        if let level = message.interruptionLevel { writer.member("interruption-level", level) }
        if let score = message.relevanceScore {
            writer.key("relevance-score")
            writer.number(decimal(min(max(score, 0), 1)))
        }
        if mutableContent { writer.member("mutable-content", integer: 1) }
        if message.contentAvailable { writer.member("content-available", integer: 1) }
        writer.endObject()
    }

    static func writeStrings(_ writer: inout JSONStreamWriter, _ key: StaticString, _ values: [String]) {
        guard !values.isEmpty else { return }
        writer.key(key)
        writer.beginArray()
        for value in values {
            writer.element()
            writer.string(value)
        }
        writer.endArray()
    }

    /// A number in [0, 1] written with at most three decimals and no exponent: `1`, `0.5`, `0.025`.
    static func decimal(_ value: Double) -> String {
        // NaN passes through min and max, and Int(NaN) traps: it is written as 0.
        let thousandths = value.isNaN ? 0 : Int((value * 1000).rounded())
        let (whole, fraction) = (thousandths / 1000, thousandths % 1000)
        guard fraction != 0 else { return String(whole) }
        var digits = String(fraction)
        digits = String(repeating: "0", count: 3 - digits.count) + digits
        while digits.hasSuffix("0") { digits.removeLast() }
        return "\(whole).\(digits)"
    }
}
