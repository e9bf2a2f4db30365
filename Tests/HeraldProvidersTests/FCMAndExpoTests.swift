import HeraldEvents
import Testing

@testable import HeraldProviders

@Suite("FCM and Expo payloads")
struct FCMAndExpoTests {
    let fcmDevice = Device(token: "fcm-token-123:APA91b", appID: "no.getdrop.app")
    let expoDevice = Device(token: "ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]", appID: "no.getdrop.app")

    @Test("FCM HTTP v1 standard mode: the exact message")
    func fcmGolden() throws {
        let body = try FCMPayloadBuilder.build(message { $0.androidChannel = "transactional" }, for: fcmDevice)
        #expect(
            text(body)
                == #"{"message":{"token":"fcm-token-123:APA91b","notification":{"title":"Order confirmed","body":"Your order ord-7 of 1 234,50 kr is confirmed."},"data":{"herald_notification_id":"n-1","deepLink":"https://getdrop.no/orders/ord-7","notificationType":"order.confirmed","orderId":"ord-7"},"android":{"priority":"HIGH","ttl":"3600s","collapse_key":"order-ord-7","notification":{"channel_id":"transactional","sound":"default","tag":"order-ord-7"}},"apns":{"headers":{"apns-push-type":"alert","apns-priority":"10","apns-expiration":"1795266000","apns-collapse-id":"order-ord-7"},"payload":{"aps":{"sound":"default","thread-id":"orders","category":"ORDER","interruption-level":"active"}}}}}"#
        )
    }

    @Test("FCM: a badge is Android's notification_count and iOS's aps badge, even with no other Android option")
    func fcmBadge() throws {
        let body = try FCMPayloadBuilder.build(
            message {
                $0.badge = 7
                $0.sound = nil
                $0.collapseKey = nil
            },
            for: fcmDevice
        )
        let json = try JSONParser().parse(body)
        #expect(
            json["message"]?["android"]?["notification"]
                == .object(JSONObject([("notification_count", .number("7"))]))
        )
        #expect(json["message"]?["apns"]?["payload"]?["aps"]?["badge"] == .number("7"))
        let zero = try JSONParser().parse(FCMPayloadBuilder.build(message { $0.badge = 0 }, for: fcmDevice))
        #expect(zero["message"]?["android"]?["notification"]?["notification_count"] == .number("0"))
        let none = try JSONParser().parse(FCMPayloadBuilder.build(message(), for: fcmDevice))
        #expect(none["message"]?["android"]?["notification"]?["notification_count"] == nil)
        #expect(none["message"]?["apns"]?["payload"]?["aps"]?["badge"] == nil)
    }

    @Test("an image: FCM's notification.image and fcm_options.image, Expo's richContent; mutable content on iOS")
    func images() throws {
        let url = "https://getdrop.no/images/offers/black-friday.jpg"
        let fcm = try JSONParser().parse(FCMPayloadBuilder.build(message { $0.imageURL = url }, for: fcmDevice))
        #expect(fcm["message"]?["notification"]?["image"] == .string(url))
        #expect(fcm["message"]?["apns"]?["fcm_options"]?["image"] == .string(url))
        #expect(fcm["message"]?["apns"]?["payload"]?["aps"]?["mutable-content"] == .number("1"))
        let expo = try JSONParser().parse(ExpoPayloadBuilder.build(message { $0.imageURL = url }, for: expoDevice))
        #expect(expo["richContent"] == .object(JSONObject([("image", .string(url))])))
        #expect(expo["mutableContent"] == .bool(true))
        // Without an image, neither sets anything for one.
        let plainFCM = try JSONParser().parse(FCMPayloadBuilder.build(message(), for: fcmDevice))
        #expect(plainFCM["message"]?["notification"]?["image"] == nil)
        #expect(plainFCM["message"]?["apns"]?["fcm_options"] == nil)
        #expect(plainFCM["message"]?["apns"]?["payload"]?["aps"]?["mutable-content"] == nil)
        let plainExpo = try JSONParser().parse(ExpoPayloadBuilder.build(message(), for: expoDevice))
        #expect(plainExpo["richContent"] == nil && plainExpo["mutableContent"] == nil)
        // An image too large to fit is dropped before the deep link.
        let huge = "https://getdrop.no/" + String(repeating: "i", count: 3900)
        for body in [
            try FCMPayloadBuilder.build(message { $0.imageURL = huge }, for: fcmDevice),
            try ExpoPayloadBuilder.build(message { $0.imageURL = huge }, for: expoDevice),
        ] {
            #expect(body.count <= 4096)
            #expect(!text(body).contains(huge) && text(body).contains("https://getdrop.no/orders/ord-7"))
        }
    }

    @Test("FCM: a silent push has no notification; reserved data keys are left out; normal priority")
    func fcmSilentAndReserved() throws {
        let body = try FCMPayloadBuilder.build(
            message {
                $0.contentAvailable = true
                $0.highPriority = false
                $0.data.append(.init("google.sent_time", "1"))
                $0.data.append(.init("from", "x"))
                for reserved in ["notification", "message_type", "collapse_key", "gcm.n.e"] {
                    $0.data.append(.init(reserved, "x"))
                }
                // Keys that share a reserved key's first letter or prefix but are the app's own.
                $0.data.append(.init("chatId", "chat-1"))
                $0.data.append(.init("fromUser", "u-2"))
                $0.data.append(.init("googleish", "y"))
                // The length of three reserved keys, and a reserved key's first letter.
                $0.data.append(.init("message_typo", "z"))
            },
            for: fcmDevice
        )
        let json = try JSONParser().parse(body)
        #expect(json["message"]?["notification"] == nil)
        #expect(json["message"]?["android"]?["priority"] == .string("NORMAL"))
        let data = json["message"]?["data"]
        for reserved in ["google.sent_time", "from", "notification", "message_type", "collapse_key", "gcm.n.e"] {
            #expect(data?[reserved] == nil, "\(reserved)")
        }
        #expect(data?["chatId"] == .string("chat-1"))
        #expect(data?["fromUser"] == .string("u-2"))
        #expect(data?["googleish"] == .string("y"))
        #expect(data?["message_typo"] == .string("z"))
        #expect(
            json["message"]?["apns"]?["payload"]?["aps"] == .object(JSONObject([("content-available", .number("1"))]))
        )
        #expect(json["message"]?["apns"]?["headers"]?["apns-priority"] == .string("5"))
    }

    @Test("FCM: the whole message stays within 4096 bytes; a bad token is rejected")
    func fcmSizeAndToken() throws {
        let body = try FCMPayloadBuilder.build(message(body: String(repeating: "🇳🇴 ø ", count: 2000)), for: fcmDevice)
        #expect(body.count <= 4096)
        let error = #expect(throws: PayloadError.self) {
            try FCMPayloadBuilder.build(message(), for: Device(token: "has space", appID: "a"))
        }
        #expect(error?.code == .invalidToken)
    }

    @Test("Expo: the exact message, batches of 100, and token validation")
    func expo() throws {
        let built = try ExpoPayloadBuilder.build(
            message {
                $0.badge = 1
                $0.androidChannel = "transactional"
                $0.mutableContent = true
            },
            for: expoDevice
        )
        #expect(
            text(built)
                == #"{"to":"ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]","title":"Order confirmed","body":"Your order ord-7 of 1 234,50 kr is confirmed.","data":{"herald_notification_id":"n-1","deepLink":"https://getdrop.no/orders/ord-7","notificationType":"order.confirmed","orderId":"ord-7"},"sound":"default","badge":1,"channelId":"transactional","priority":"high","ttl":3600,"categoryId":"ORDER","mutableContent":true}"#
        )
        let batches = ExpoPayloadBuilder.batches(Array(repeating: built, count: 250))
        #expect(batches.count == 3)
        #expect(
            try batches.map { bytes -> Int in
                guard case .array(let messages) = try JSONParser().parse(bytes) else { return -1 }
                return messages.count
            } == [100, 100, 50]
        )
        let error = #expect(throws: PayloadError.self) {
            try ExpoPayloadBuilder.build(message(), for: Device(token: "abc", appID: "a"))
        }
        #expect(error?.code == .invalidToken)
        let long = try ExpoPayloadBuilder.build(message(body: String(repeating: "👩‍👩‍👧‍👦", count: 2000)), for: expoDevice)
        #expect(long.count <= 4096)
    }
}
