import HeraldCatalog
import HeraldEvents
import HeraldPolicy
import HeraldProviders
import HeraldStore

/// Turns a rendered notification into the provider call for one device.
public enum OutboundBuilder {
    /// The provider-neutral message for one device. Expiries count from the event's time, or from
    /// `now` for an event without one (never from the epoch, which would make every provider drop
    /// it as expired).
    public static func pushMessage(
        _ rendered: RenderedNotification,
        eventID: String,
        createdAt: Timestamp,
        recipient: String,
        token: String
    ) -> PushMessage {
        var message = pushMessage(rendered, createdAt: createdAt)
        message.notificationID = NotificationID.make(
            eventID: eventID,
            kind: rendered.kind,
            recipient: recipient,
            device: token
        )
        return message
    }

    /// The message without its notification id, which differs per device: made once for a
    /// recipient's devices that share a locale.
    public static func pushMessage(_ rendered: RenderedNotification, createdAt: Timestamp) -> PushMessage {
        let presentation = rendered.presentation
        return PushMessage(
            notificationID: "",
            kind: rendered.kind,
            title: rendered.title,
            subtitle: rendered.subtitle,
            body: rendered.body,
            deepLink: rendered.deepLink?.preferred,
            data: rendered.data,
            threadID: rendered.threadID,
            category: presentation.iosCategory,
            sound: presentation.sound,
            interruptionLevel: presentation.interruptionLevel,
            badge: rendered.badge,
            collapseKey: rendered.collapseKey,
            androidChannel: presentation.androidChannel,
            timeToLive: presentation.timeToLive,
            highPriority: presentation.priority == "high",
            imageURL: rendered.imageURL,
            contentAvailable: presentation.silent,
            badgeOnly: presentation.badgeOnly,
            createdAt: createdAt
        )
    }

    /// FCM's and Expo's request headers, the same for every call: made once, not per device.
    static let fcmHeaders = [OutboundMessage.Header("content-type", "application/json; charset=UTF-8")]
    static let expoHeaders = [OutboundMessage.Header("content-type", "application/json")]
    /// FCM's path; the sender puts the project in front: /v1/projects/{project}/messages:send.
    static let fcmPath = "messages:send"
    static let expoPath = "/--/api/v2/push/send"

    /// When a notification of `kind` created at `createdAt` stops being worth sending, if ever.
    public static func expiry(of kind: NotificationKind, createdAt: Timestamp) -> Timestamp? {
        kind.presentation.timeToLive.map {
            Timestamp(epochMilliseconds: createdAt.epochMilliseconds + Int64($0) * 1000)
        }
    }

    /// The outbound message for `device`, its request body still empty: ``write(_:body:into:)``
    /// writes the message with the body built in place, ``body(_:for:)`` builds the body alone.
    /// `message` is ``pushMessage(_:eventID:createdAt:recipient:token:)`` for this device.
    ///
    /// - Throws: ``PayloadError`` `.invalidToken` for an APNs token (the other providers' tokens
    ///   are checked as their bodies are built).
    public static func envelope(
        _ message: PushMessage,
        of rendered: RenderedNotification,
        eventID: String,
        createdAt: Timestamp,
        expiresAt: Timestamp?,
        recipient: String,
        device registered: RegisteredDevice,
        trace: (parent: String?, state: String?) = (nil, nil)
    ) throws(PayloadError) -> OutboundMessage {
        let environment: Device.Environment = registered.sandbox ? .sandbox : .production
        let request: OutboundMessage.Request
        switch registered.provider {
        case .apns:
            let device = Device(token: registered.token, appID: registered.appID, environment: environment)
            let apns = try APNsPayloadBuilder.head(message, for: device)
            request = OutboundMessage.Request(
                path: apns.path,
                headers: apns.headers.map { OutboundMessage.Header($0.name, $0.value) },
                body: []
            )
        case .fcm:
            request = OutboundMessage.Request(path: fcmPath, headers: fcmHeaders, body: [])
        case .expo:
            request = OutboundMessage.Request(path: expoPath, headers: expoHeaders, body: [])
        }
        return OutboundMessage(
            notificationID: message.notificationID,
            eventID: eventID,
            kind: rendered.kind,
            category: rendered.category,
            recipient: recipient,
            provider: registered.provider,
            app: registered.appID,
            environment: environment,
            token: registered.token,
            request: request,
            createdAt: createdAt,
            expiresAt: expiresAt,
            traceParent: trace.parent,
            traceState: trace.state,
            locale: rendered.locale
        )
    }

    /// Writes `outbound` (an ``envelope(_:of:eventID:createdAt:expiresAt:recipient:device:trace:)``)
    /// into `writer` with the provider's body for `message` built where it goes: no bytes of its
    /// own for the body, no copy of them. The same bytes as `outbound` with ``body(_:for:)`` as its
    /// body, encoded. On a throw what was written is incomplete.
    ///
    /// - Returns: the request body's size in bytes.
    /// - Throws: ``PayloadError`` (`.invalidToken`, `.payloadTooLarge`).
    public static func write(
        _ outbound: OutboundMessage,
        body message: PushMessage,
        into writer: inout JSONStreamWriter
    ) throws(PayloadError) -> Int {
        var size = 0
        try outbound.encode(into: &writer) { writer throws(PayloadError) in
            size = try writeBody(message, for: outbound, into: &writer)
        }
        return size
    }

    /// Writes the outbound message for `device` into `writer` straight from its parts: the same
    /// bytes as ``envelope(_:of:eventID:createdAt:expiresAt:recipient:device:trace:)`` written by
    /// ``write(_:body:into:)``, without making the message, its request and its headers (and
    /// retaining their strings) for every device. `message` is
    /// ``pushMessage(_:eventID:createdAt:recipient:token:)`` for this device. On a throw what was
    /// written is incomplete.
    ///
    /// - Returns: the request body's size in bytes.
    /// - Throws: ``PayloadError`` (`.invalidToken`, `.payloadTooLarge`).
    public static func write(
        _ message: PushMessage,
        of rendered: RenderedNotification,
        eventID: String,
        createdAt: Timestamp,
        expiresAt: Timestamp?,
        recipient: String,
        device registered: RegisteredDevice,
        trace: (parent: String?, state: String?) = (nil, nil),
        into writer: inout JSONStreamWriter
    ) throws(PayloadError) -> Int {
        try write(
            message,
            of: rendered,
            eventID: eventID,
            createdAt: createdAt,
            expiresAt: expiresAt,
            recipient: recipient,
            provider: registered.provider,
            token: registered.token,
            appID: registered.appID,
            sandbox: registered.sandbox,
            trace: trace,
            into: &writer
        )
    }

    /// ``write(_:of:eventID:createdAt:expiresAt:recipient:device:trace:into:)`` given the device's
    /// fields it reads: the worker passes them from the directory's device where it is, as a
    /// device passed whole is copied out of its array, its five strings retained.
    static func write(
        _ message: PushMessage,
        of rendered: RenderedNotification,
        eventID: String,
        createdAt: Timestamp,
        expiresAt: Timestamp?,
        recipient: String,
        provider: PushProvider,
        token: String,
        appID: String,
        sandbox: Bool,
        trace: (parent: String?, state: String?),
        into writer: inout JSONStreamWriter
    ) throws(PayloadError) -> Int {
        if provider == .apns { try APNsPayloadBuilder.checkToken(token) }
        let environment: Device.Environment = sandbox ? .sandbox : .production
        var size = 0
        try OutboundMessage.encode(
            notificationID: message.notificationID,
            eventID: eventID,
            kind: rendered.kind,
            category: rendered.category,
            locale: rendered.locale,
            recipient: recipient,
            provider: provider,
            app: appID,
            environment: environment,
            token: token,
            createdAt: createdAt,
            expiresAt: expiresAt,
            attempt: 1,
            trace: trace,
            into: &writer
        ) { writer throws(PayloadError) in
            writer.member("method", literal: "POST")
            writer.key("path")
            switch provider {
            case .apns: writer.string("/3/device/", token)
            case .fcm: writer.string(fcmPath)
            case .expo: writer.string(expoPath)
            }
            writer.key("headers")
            writer.beginObject()
            switch provider {
            case .apns:
                APNsPayloadBuilder.forEachHeader(message, appID: appID) { name, value in
                    writer.key(name)
                    value.write(to: &writer)
                }
            case .fcm: for header in fcmHeaders { writer.member(header.name, header.value) }
            case .expo: for header in expoHeaders { writer.member(header.name, header.value) }
            }
            writer.endObject()
            writer.key("body")
            let device = Device(token: token, appID: appID, environment: environment)
            size = try writeBody(message, provider: provider, device: device, into: &writer)
        }
        return size
    }

    /// The provider's request body for `message` to the device `outbound` is for.
    ///
    /// - Throws: ``PayloadError`` (`.invalidToken`, `.payloadTooLarge`).
    public static func body(_ message: PushMessage, for outbound: OutboundMessage) throws(PayloadError) -> [UInt8] {
        try JSONStreamWriter.bytes { writer throws(PayloadError) in try writeBody(message, for: outbound, into: &writer)
        }
    }

    @discardableResult
    private static func writeBody(
        _ message: PushMessage,
        for outbound: OutboundMessage,
        into writer: inout JSONStreamWriter
    ) throws(PayloadError) -> Int {
        let device = Device(token: outbound.token, appID: outbound.app, environment: outbound.environment)
        return try writeBody(message, provider: outbound.provider, device: device, into: &writer)
    }

    private static func writeBody(
        _ message: PushMessage,
        provider: PushProvider,
        device: Device,
        into writer: inout JSONStreamWriter
    ) throws(PayloadError) -> Int {
        switch provider {
        case .apns: return try APNsPayloadBuilder.writeBody(message, into: &writer)
        case .fcm: return try FCMPayloadBuilder.write(message, for: device, into: &writer)
        case .expo: return try ExpoPayloadBuilder.write(message, for: device, into: &writer)
        }
    }
}
