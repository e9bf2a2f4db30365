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
            data: rendered.data.map { PushMessage.KeyValue($0.key, $0.value) },
            threadID: presentation.threadID,
            category: presentation.iosCategory,
            sound: presentation.sound,
            interruptionLevel: presentation.interruptionLevel,
            collapseKey: presentation.collapseKey,
            androidChannel: presentation.androidChannel,
            timeToLive: presentation.timeToLive,
            highPriority: presentation.priority == "high",
            createdAt: createdAt
        )
    }

    /// FCM's and Expo's request headers, the same for every call: made once, not per device.
    static let fcmHeaders = [OutboundMessage.Header("content-type", "application/json; charset=UTF-8")]
    static let expoHeaders = [OutboundMessage.Header("content-type", "application/json")]

    /// When a notification of `kind` created at `createdAt` stops being worth sending, if ever.
    public static func expiry(of kind: NotificationKind, createdAt: Timestamp) -> Timestamp? {
        kind.presentation.timeToLive.map {
            Timestamp(epochMilliseconds: createdAt.epochMilliseconds + Int64($0) * 1000)
        }
    }

    /// The outbound message for `device`.
    ///
    /// - Throws: ``PayloadError`` (`.invalidToken`, `.payloadTooLarge`).
    public static func outbound(
        _ rendered: RenderedNotification,
        eventID: String,
        createdAt: Timestamp,
        expiresAt: Timestamp?,
        recipient: String,
        device registered: RegisteredDevice,
        trace: (parent: String?, state: String?) = (nil, nil)
    ) throws(PayloadError) -> OutboundMessage {
        try outbound(
            pushMessage(
                rendered,
                eventID: eventID,
                createdAt: createdAt,
                recipient: recipient,
                token: registered.token
            ),
            of: rendered,
            eventID: eventID,
            createdAt: createdAt,
            expiresAt: expiresAt,
            recipient: recipient,
            device: registered,
            trace: trace
        )
    }

    /// The outbound message for `device` from `message`, ``pushMessage(_:eventID:createdAt:recipient:token:)``
    /// for that device.
    public static func outbound(
        _ message: PushMessage,
        of rendered: RenderedNotification,
        eventID: String,
        createdAt: Timestamp,
        expiresAt: Timestamp?,
        recipient: String,
        device registered: RegisteredDevice,
        trace: (parent: String?, state: String?) = (nil, nil)
    ) throws(PayloadError) -> OutboundMessage {
        var (outbound, device) = try unwritten(
            message,
            of: rendered,
            eventID: eventID,
            createdAt: createdAt,
            expiresAt: expiresAt,
            recipient: recipient,
            device: registered,
            trace: trace
        )
        var writer = JSONStreamWriter(capacity: 1024)
        try writeBody(message, for: device, provider: registered.provider, into: &writer)
        outbound.request.body = writer.bytes
        return outbound
    }

    /// Writes the outbound message ``outbound(_:of:eventID:createdAt:expiresAt:recipient:device:trace:)``
    /// makes, byte for byte, into `writer`, with the provider's body built in place: no bytes of
    /// its own for the body, no copy of them. On a throw what was written is incomplete.
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
        let (outbound, device) = try unwritten(
            message,
            of: rendered,
            eventID: eventID,
            createdAt: createdAt,
            expiresAt: expiresAt,
            recipient: recipient,
            device: registered,
            trace: trace
        )
        var size = 0
        try outbound.encode(into: &writer) { writer throws(PayloadError) in
            size = try writeBody(message, for: device, provider: registered.provider, into: &writer)
        }
        return size
    }

    /// The outbound message with an empty request body, and the device the body is for.
    private static func unwritten(
        _ message: PushMessage,
        of rendered: RenderedNotification,
        eventID: String,
        createdAt: Timestamp,
        expiresAt: Timestamp?,
        recipient: String,
        device registered: RegisteredDevice,
        trace: (parent: String?, state: String?)
    ) throws(PayloadError) -> (OutboundMessage, Device) {
        let device = Device(
            token: registered.token,
            appID: registered.appID,
            environment: registered.sandbox ? .sandbox : .production
        )
        let request: OutboundMessage.Request
        switch registered.provider {
        case .apns:
            let apns = try APNsPayloadBuilder.head(message, for: device)
            request = OutboundMessage.Request(
                path: apns.path,
                headers: apns.headers.map { OutboundMessage.Header($0.name, $0.value) },
                body: []
            )
        case .fcm:
            // The sender puts the project in front: /v1/projects/{project}/messages:send.
            request = OutboundMessage.Request(path: "messages:send", headers: fcmHeaders, body: [])
        case .expo:
            request = OutboundMessage.Request(path: "/--/api/v2/push/send", headers: expoHeaders, body: [])
        }
        let outbound = OutboundMessage(
            notificationID: message.notificationID,
            eventID: eventID,
            kind: rendered.kind,
            category: rendered.category,
            recipient: recipient,
            provider: registered.provider,
            app: registered.appID,
            environment: device.environment,
            token: registered.token,
            request: request,
            createdAt: createdAt,
            expiresAt: expiresAt,
            traceParent: trace.parent,
            traceState: trace.state,
            locale: rendered.locale
        )
        return (outbound, device)
    }

    /// Writes the provider's request body for `device`.
    @discardableResult
    private static func writeBody(
        _ message: PushMessage,
        for device: Device,
        provider: PushProvider,
        into writer: inout JSONStreamWriter
    ) throws(PayloadError) -> Int {
        switch provider {
        case .apns: try APNsPayloadBuilder.writeBody(message, into: &writer)
        case .fcm: try FCMPayloadBuilder.write(message, for: device, into: &writer)
        case .expo: try ExpoPayloadBuilder.write(message, for: device, into: &writer)
        }
    }
}
