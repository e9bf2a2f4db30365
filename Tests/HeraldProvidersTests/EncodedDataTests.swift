import HeraldEvents
import Testing

@testable import HeraldProviders

@Suite("A message's data written once and copied into each payload")
struct EncodedDataTests {
    /// Keys of every class the builders leave out, and keys that only look like them.
    static let keys = [
        "orderId", "deepLink", "aps", "imageUrl", "google.sent_time", "from", "herald_notification_id",
        "herald_badge", "notification", "deepLinks", "apsx", "chatId", "fromUser", "é-key",
    ]
    static let values = ["ord-7", "", "a \"quoted\" value", "line\nbreak\ttab", "🇳🇴 ø", "back\\slash", "\u{1}"]

    /// What the builders wrote before the data was encoded once: each kept entry written on its own.
    static func reference(
        _ data: [KeyValue],
        kept: Int,
        filtered: (String) -> Bool,
        skipped: (String) -> Bool
    ) -> [UInt8] {
        JSONStreamWriter.bytes { writer in
            writer.beginObject()
            writer.member("first", "written before the data")
            for entry in data.filter({ !filtered($0.key) }).prefix(kept) where !skipped(entry.key) {
                writer.member(entry.key, entry.value)
            }
            writer.member("last", "written after it")
            writer.endObject()
        }
    }

    static func encoded(
        _ data: [KeyValue],
        kept: Int,
        filtered: EncodedData.KeyClass,
        skipping: EncodedData.KeyClass
    ) -> [UInt8] {
        let encoded = EncodedData(data)
        return JSONStreamWriter.bytes { writer in
            writer.beginObject()
            writer.member("first", "written before the data")
            encoded.write(kept: kept, filtered: filtered, skipping: skipping, into: &writer)
            writer.member("last", "written after it")
            writer.endObject()
        }
    }

    @Test(
        "each provider's choice of entries, over 2,000 seeded data maps, is byte for byte what writing each entry gives"
    )
    func matchesEntryByEntry() throws {
        var random = SeededRandom(seed: 20_261_128)
        // What each builder filters (not counted against the size budget) and skips (written by itself).
        let builders: [(name: String, filtered: EncodedData.KeyClass, skipping: EncodedData.KeyClass)] = [
            ("APNs", [], [.aps, .deepLink]),
            ("APNs with an image", [], [.aps, .deepLink, .imageURL]),
            ("FCM", .fcmReserved, [.deepLink, .notificationID]),
            ("FCM badge-only", .fcmReserved, [.deepLink, .notificationID, .badge]),
            ("Expo", [], [.deepLink, .notificationID]),
        ]
        for _ in 0..<2_000 {
            let data = (0..<Int.random(in: 0...8, using: &random)).map { _ in
                KeyValue(Self.keys.randomElement(using: &random)!, Self.values.randomElement(using: &random)!)
            }
            for builder in builders {
                let filtered = { (key: String) in !EncodedData.KeyClass(key: key).isDisjoint(with: builder.filtered) }
                let skipped = { (key: String) in !EncodedData.KeyClass(key: key).isDisjoint(with: builder.skipping) }
                let sendable = data.filter { !filtered($0.key) }.count
                #expect(EncodedData(data).count(excluding: builder.filtered) == sendable)
                for kept in 0...sendable {
                    let expected = Self.reference(data, kept: kept, filtered: filtered, skipped: skipped)
                    let actual = Self.encoded(
                        data,
                        kept: kept,
                        filtered: builder.filtered,
                        skipping: builder.skipping
                    )
                    #expect(
                        actual == expected,
                        "\(builder.name), \(kept) kept of \(data): \(String(decoding: actual, as: UTF8.self))"
                    )
                    // Whatever is left out, the object stays JSON.
                    #expect(throws: Never.self) { try JSONParser().parse(actual) }
                }
            }
        }
    }

    @Test("a key's classes: the exact names only, and FCM's reserved names and prefixes")
    func keyClasses() {
        #expect(EncodedData.KeyClass(key: "deepLink") == .deepLink)
        #expect(EncodedData.KeyClass(key: "aps") == .aps)
        #expect(EncodedData.KeyClass(key: "imageUrl") == .imageURL)
        #expect(EncodedData.KeyClass(key: "herald_notification_id") == .notificationID)
        #expect(EncodedData.KeyClass(key: "herald_badge") == .badge)
        for reserved in ["from", "notification", "message_type", "collapse_key", "google.x", "gcm.n.e"] {
            #expect(EncodedData.KeyClass(key: reserved) == .fcmReserved, "\(reserved)")
        }
        // Near misses: the same length or first letter as a class's name.
        for own in [
            "deepLinks", "Aps", "imageURL", "fromUser", "googleish", "", "orderId", "deepLinx", "apz", "fro",
            "herald_badgE", "herald_notification_iD", "notificatioN", "message_typo", "collapse_kez", "gcm", "google",
            "nonsense", "mmmm",
        ] {
            #expect(EncodedData.KeyClass(key: own) == [], "\(own)")
        }
    }

    @Test("changing a message's data changes what every provider's payload carries")
    func changedDataIsEncodedAgain() throws {
        var message = PushMessage(
            notificationID: "n-1",
            kind: "order.confirmed",
            title: "Order confirmed",
            body: "Your order is confirmed.",
            data: [KeyValue("orderId", "ord-7")],
            createdAt: Timestamp(epochMilliseconds: 1_795_262_400_000)
        )
        message.data.append(KeyValue("trackingUrl", "https://sporing.posten.no/ord-7"))
        message.data[0].value = "ord-8"
        let device = Device(token: String(repeating: "ab", count: 32), appID: "no.getdrop.app")
        for body in [
            try APNsPayloadBuilder.build(message, for: device).body,
            try FCMPayloadBuilder.build(message, for: Device(token: "fcm-1:APA91b", appID: "no.getdrop.app")),
            try ExpoPayloadBuilder.build(message, for: Device(token: "ExponentPushToken[x]", appID: "no.getdrop.app")),
        ] {
            let text = String(decoding: body, as: UTF8.self)
            #expect(text.contains(#""orderId":"ord-8","trackingUrl":"https://sporing.posten.no/ord-7""#), "\(text)")
            #expect(!text.contains(#""orderId":"ord-7""#), "\(text)")
        }
    }
}
