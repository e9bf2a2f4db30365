import HeraldEvents
import Testing

@testable import HeraldProviders

/// A push that only sets the app icon's badge, as each provider is given it: no text, no sound,
/// nothing a phone shows besides the count, whatever else the message holds.
@Suite("Badge-only pushes")
struct BadgeOnlyPushTests {
    let fcmDevice = Device(token: "fcm-token-123:APA91b", appID: "no.getdrop.app")
    let expoDevice = Device(token: "ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]", appID: "no.getdrop.app")

    /// The example message made badge-only; its title, sound, category, channel and image are left
    /// in, for the builders to show that they leave them out.
    func badgeOnly(_ count: Int = 3) -> PushMessage {
        message {
            $0.badgeOnly = true
            $0.badge = count
            $0.highPriority = false
            $0.androidChannel = "messages"
            $0.imageURL = "https://getdrop.no/i.png"
            $0.mutableContent = true
        }
    }

    @Test("APNs: an alert push, priority 5, whose aps holds the badge alone")
    func apns() throws {
        let request = try APNsPayloadBuilder.build(badgeOnly(), for: device)
        #expect(
            text(request.body)
                == #"{"aps":{"badge":3},"deepLink":"https://getdrop.no/orders/ord-7","notificationType":"order.confirmed","orderId":"ord-7"}"#
        )
        #expect(request.header("apns-push-type") == "alert")
        #expect(request.header("apns-priority") == "5")
        #expect(request.header("apns-topic") == "no.getdrop.app")
        #expect(request.header("apns-collapse-id") == "order-ord-7")
        // 0 clears the badge: still sent.
        let cleared = try APNsPayloadBuilder.build(badgeOnly(0), for: device)
        #expect(try JSONParser().parse(cleared.body)["aps"] == .object(JSONObject([("badge", .number("0"))])))
    }

    @Test("FCM: a data message with the count for the app (a string) and in aps, no notification")
    func fcm() throws {
        var pushed = badgeOnly(7)
        // A data field of the same name gives way to the count.
        pushed.data.append(.init(FCMPayloadBuilder.badgeKey, "the kind's own"))
        let json = try JSONParser().parse(FCMPayloadBuilder.build(pushed, for: fcmDevice))
        let fcm = try #require(json["message"])
        #expect(fcm["notification"] == nil)
        #expect(fcm["data"]?[FCMPayloadBuilder.badgeKey] == .string("7"))
        let data = try #require(fcm["data"].flatMap { if case .object(let object) = $0 { object } else { nil } })
        #expect(data.members.filter { $0.key == FCMPayloadBuilder.badgeKey }.count == 1, "one herald_badge")
        #expect(fcm["android"]?["notification"] == nil, "no channel, sound or notification_count")
        #expect(fcm["android"]?["priority"] == .string("NORMAL"))
        #expect(fcm["android"]?["collapse_key"] == .string("order-ord-7"))
        #expect(fcm["apns"]?["headers"]?["apns-push-type"] == .string("alert"))
        #expect(fcm["apns"]?["headers"]?["apns-priority"] == .string("5"))
        #expect(fcm["apns"]?["payload"]?["aps"] == .object(JSONObject([("badge", .number("7"))])))
        #expect(fcm["apns"]?["fcm_options"] == nil, "no image")
        // A visible push carries no herald_badge: its count is the notification's.
        let visible = try JSONParser().parse(FCMPayloadBuilder.build(message { $0.badge = 7 }, for: fcmDevice))
        #expect(visible["message"]?["data"]?[FCMPayloadBuilder.badgeKey] == nil)
        #expect(visible["message"]?["android"]?["notification"]?["notification_count"] == .number("7"))
    }

    @Test("Expo: only the badge, the data and the delivery options")
    func expo() throws {
        let json = try JSONParser().parse(ExpoPayloadBuilder.build(badgeOnly(), for: expoDevice))
        guard case .object(let object) = json else {
            Issue.record("not an object: \(json)")
            return
        }
        #expect(object.members.map(\.key) == ["to", "data", "sound", "badge", "priority", "ttl"])
        #expect(json["badge"] == .number("3"))
        #expect(json["sound"] == .null)
        #expect(json["priority"] == .string("normal"))
        #expect(json["data"]?["herald_notification_id"] == .string("n-1"))
    }
}
