import HeraldEvents
import Testing

@testable import HeraldProviders

@Suite("NotifyKit FCM mode")
struct NotifyKitTests {
    let now: Int64 = 1_795_262_400_000  // 2026-11-21T12:00:00Z

    func build(_ json: String) throws -> NotifyKitPayloadBuilder.Output {
        try NotifyKitPayloadBuilder.build(try JSONParser().parse(Array(json.utf8)), nowMilliseconds: now)
    }

    func error(_ json: String) -> String? {
        do {
            _ = try build(json)
            return nil
        } catch let failure as NotifyKitPayloadBuilder.ValidationError {
            return failure.message
        } catch {
            return "unexpected: \(error)"
        }
    }

    @Test("the seed's quick-start example: Android data-only, iOS alert with mutable-content, one blob")
    func quickStart() throws {
        let output = try build(
            ##"{"token":"eZ-device-token","notification":{"id":"order-42","title":"Your order is on the way","body":"Tap to see live tracking.","data":{"orderId":"42","screen":"tracking"},"android":{"channelId":"orders","smallIcon":"ic_notification","color":"#4CAF50","pressAction":{"id":"open-order","launchActivity":"default"}},"ios":{"sound":"default","categoryId":"ORDER_UPDATE","interruptionLevel":"timeSensitive","attachments":[{"url":"https://cdn.example.com/orders/42.png"}]}},"options":{"androidPriority":"high","iosBadgeCount":1,"ttl":3600}}"##
        )
        let blob =
            ##"{"_v":1,"title":"Your order is on the way","body":"Tap to see live tracking.","android":{"channelId":"orders","smallIcon":"ic_notification","color":"#4CAF50","pressAction":{"id":"open-order","launchActivity":"default"}},"ios":{"sound":"default","categoryId":"ORDER_UPDATE","interruptionLevel":"timeSensitive","attachments":[{"url":"https://cdn.example.com/orders/42.png","identifier":"attachment-0"}]}}"##
        let json = try JSONParser().parse(output.message)
        #expect(json["token"] == .string("eZ-device-token"))
        #expect(json["data"]?["orderId"] == .string("42"))
        #expect(json["data"]?["notifee_options"] == .string(blob))
        #expect(json["apns"]?["payload"]?["notifee_options"] == .string(blob), "the same blob on both platforms")
        #expect(json["notification"] == nil, "Android is data-only")
        #expect(json["android"]?.serialized == #"{"priority":"HIGH","collapse_key":"order-42","ttl":"3600s"}"#)
        #expect(
            json["apns"]?["headers"]?.serialized
                == #"{"apns-push-type":"alert","apns-priority":"10","apns-collapse-id":"order-42","apns-expiration":"1795266000"}"#
        )
        #expect(
            json["apns"]?["payload"]?["aps"]?.serialized
                == #"{"alert":{"title":"Your order is on the way","body":"Tap to see live tracking."},"mutable-content":1,"sound":"default","category":"ORDER_UPDATE","interruption-level":"time-sensitive","badge":1}"#
        )
        #expect(output.sizeBytes == output.message.count)
        #expect(output.warning == nil)
    }

    @Test("options.collapseKey wins over notification.id; more than 5 data keys adds notifee_data")
    func collapseAndNotifeeData() throws {
        let output = try build(
            #"{"topic":"news","notification":{"id":"n-1","title":"T","body":"B","data":{"a":"1","b":"2","c":"3","d":"4","e":"5","f":"6"}},"options":{"collapseKey":"news","androidPriority":"normal"}}"#
        )
        let json = try JSONParser().parse(output.message)
        #expect(json["topic"] == .string("news"))
        #expect(json["android"]?["collapse_key"] == .string("news"))
        #expect(json["android"]?["priority"] == .string("NORMAL"))
        #expect(json["data"]?["notifee_data"] == .string(#"{"a":"1","b":"2","c":"3","d":"4","e":"5","f":"6"}"#))
        #expect(json["apns"]?["payload"]?["notifee_data"] == json["data"]?["notifee_data"])
    }

    @Test("a collapse key over 64 bytes is shortened for APNs' apns-collapse-id only; Android keeps it")
    func longCollapseKey() throws {
        let id = "thread-" + String(repeating: "x", count: 100)
        let output = try build(#"{"token":"t","notification":{"id":"\#(id)","title":"T","body":"B"}}"#)
        let json = try JSONParser().parse(output.message)
        #expect(json["android"]?["collapse_key"] == .string(id))
        guard case .string(let apns)? = json["apns"]?["headers"]?["apns-collapse-id"] else {
            Issue.record("no apns-collapse-id in \(json)")
            return
        }
        #expect(apns.utf8.count <= 64 && apns == APNsPayloadBuilder.collapseID(id) && apns.hasPrefix("thread-"))
    }

    @Test("integers written with a fraction (3600.0) are integers, as Number.isInteger says")
    func integralNumbers() throws {
        let json = try JSONParser().parse(
            try build(
                #"{"token":"t","notification":{"title":"T","body":"B"},"options":{"ttl":3600.0,"iosBadgeCount":2.0}}"#
            ).message
        )
        #expect(json["android"]?["ttl"] == .string("3600s"))
        #expect(json["apns"]?["payload"]?["aps"]?["badge"] == .number("2"))
    }

    @Test("above 3500 bytes the contract's warning is given, with the size measured in UTF-8")
    func sizeWarning() throws {
        let output = try build(
            #"{"token":"t","notification":{"title":"T","body":"\#(String(repeating: "😀", count: 500))"}}"#
        )
        #expect(output.sizeBytes > 3500)
        #expect(
            output.warning
                == "[react-native-notify-kit/server] Payload size \(output.sizeBytes) bytes approaches FCM 4KB limit. Consider reducing notifee_options."
        )
    }

    @Test(
        "every validation rule, with the contract's exact message",
        arguments: [
            (#"[1]"#, "Validation: input must be an object"),
            (
                #"{"notification":{}}"#,
                "Routing: exactly one of 'token', 'topic', or 'condition' must be provided. Got: 0"
            ),
            (
                #"{"token":"a","topic":"b","notification":{}}"#,
                "Routing: exactly one of 'token', 'topic', or 'condition' must be provided. Got: 2"
            ),
            (#"{"token":"","notification":{}}"#, "Routing: 'token' must be a non-empty string"),
            (#"{"topic":5,"notification":{}}"#, "Routing: 'topic' must be a non-empty string"),
            (#"{"condition":"","notification":{}}"#, "Routing: 'condition' must be a non-empty string"),
            (#"{"token":"t"}"#, "Validation: 'notification' is required and must be an object"),
            (
                #"{"token":"t","notification":{"id":"","title":"T","body":"B"}}"#,
                "Validation: notification.id must be a non-empty string when provided"
            ),
            (
                #"{"token":"t","notification":{"body":"B"}}"#,
                "Validation: notification.title is required and must be a non-empty string"
            ),
            (
                #"{"token":"t","notification":{"title":"T","body":""}}"#,
                "Validation: notification.body is required and must be a non-empty string"
            ),
            (
                #"{"token":"t","notification":{"title":"T","body":"B","data":[1]}}"#,
                "Validation: 'notification.data' must be an object"
            ),
            (
                #"{"token":"t","notification":{"title":"T","body":"B","data":{"n":5}}}"#,
                "Validation: FCM data values must be strings. Got number for key 'n'. Use JSON.stringify() if you need to pass complex values."
            ),
            (
                #"{"token":"t","notification":{"title":"T","body":"B","data":{"notifee_data":"x"}}}"#,
                "Validation: 'notifee_options' and 'notifee_data' are reserved keys and cannot be used in notification.data"
            ),
            (
                #"{"token":"t","notification":{"title":"T","body":"B","ios":{"attachments":{}}}}"#,
                "iOS: 'notification.ios.attachments' must be an array"
            ),
            (
                #"{"token":"t","notification":{"title":"T","body":"B","ios":{"attachments":[{"uri":"x"}]}}}"#,
                "iOS: each attachment must be an object with a string 'url' field"
            ),
            (
                #"{"token":"t","notification":{"title":"T","body":"B","ios":{"attachments":[{"url":"http://x/a.png"}]}}}"#,
                "iOS: iOS attachments require https:// URLs. Got: http://x/a.png"
            ),
            (
                #"{"token":"t","notification":{"title":"T","body":"B","ios":{"interruptionLevel":"urgent"}}}"#,
                "Validation: invalid interruptionLevel 'urgent'. Expected one of: passive, active, timeSensitive, critical"
            ),
            (
                #"{"token":"t","notification":{"title":"T","body":"B"},"options":[]}"#,
                "Validation: 'options' must be an object"
            ),
            (
                #"{"token":"t","notification":{"title":"T","body":"B"},"options":{"androidPriority":"max"}}"#,
                "Validation: 'options.androidPriority' must be 'high' or 'normal'. Got: max"
            ),
            (
                #"{"token":"t","notification":{"title":"T","body":"B"},"options":{"iosBadgeCount":-1}}"#,
                "Validation: 'options.iosBadgeCount' must be a non-negative integer"
            ),
            (
                #"{"token":"t","notification":{"title":"T","body":"B"},"options":{"ttl":0}}"#,
                "Validation: options.ttl must be a positive integer (seconds). Got: 0"
            ),
            (
                #"{"token":"t","notification":{"title":"T","body":"B"},"options":{"ttl":1.5}}"#,
                "Validation: options.ttl must be a positive integer (seconds). Got: 1.5"
            ),
            (
                #"{"token":"t","notification":{"title":"T","body":"B"},"options":{"collapseKey":""}}"#,
                "Validation: 'options.collapseKey' must be a non-empty string"
            ),
        ]
    )
    func validation(input: String, message: String) {
        #expect(error(input) == "[react-native-notify-kit/server] " + message)
    }
}
