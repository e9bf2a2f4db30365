import HeraldEvents
import Testing

@testable import HeraldProviders

let token = String(repeating: "ab01", count: 16)
let device = Device(token: token, appID: "no.getdrop.app", environment: .production)
let created = Timestamp(rfc3339: "2026-11-21T12:00:00Z")!

func message(
    body: String = "Your order ord-7 of 1 234,50 kr is confirmed.",
    configure: (inout PushMessage) -> Void = { _ in }
) -> PushMessage {
    var message = PushMessage(
        notificationID: "n-1",
        kind: "order.confirmed",
        title: "Order confirmed",
        body: body,
        deepLink: "https://getdrop.no/orders/ord-7",
        data: [.init("notificationType", "order.confirmed"), .init("orderId", "ord-7")],
        threadID: "orders",
        category: "ORDER",
        sound: "default",
        interruptionLevel: "active",
        collapseKey: "order-ord-7",
        timeToLive: 3600,
        createdAt: created
    )
    configure(&message)
    return message
}

func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

@Suite("APNs payloads")
struct APNsPayloadBuilderTests {
    @Test("an alert: the exact body and headers")
    func alertGolden() throws {
        let request = try APNsPayloadBuilder.build(message(), for: device)
        #expect(
            text(request.body)
                == #"{"aps":{"alert":{"title":"Order confirmed","body":"Your order ord-7 of 1 234,50 kr is confirmed."},"sound":"default","thread-id":"orders","category":"ORDER","interruption-level":"active"},"deepLink":"https://getdrop.no/orders/ord-7","notificationType":"order.confirmed","orderId":"ord-7"}"#
        )
        #expect(request.host == "api.push.apple.com")
        #expect(request.path == "/3/device/\(token)")
        #expect(
            request.headers.map(\.name) == [
                "apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id", "apns-topic", "apns-id",
            ]
        )
        #expect(request.header("apns-push-type") == "alert")
        #expect(request.header("apns-priority") == "10")
        #expect(request.header("apns-expiration") == "1795266000")  // 2026-11-21T13:00:00Z
        #expect(request.header("apns-collapse-id") == "order-ord-7")
        #expect(request.header("apns-topic") == "no.getdrop.app")
    }

    @Test("subtitle, badge, critical sound, relevance and mutable content")
    func presentationOptions() throws {
        let request = try APNsPayloadBuilder.build(
            message {
                $0.subtitle = "3 items"
                $0.badge = 2
                $0.criticalSoundVolume = 0.75
                $0.relevanceScore = 0.5
                $0.mutableContent = true
                $0.interruptionLevel = "critical"
                $0.data = []
                $0.deepLink = nil
            },
            for: Device(token: token, appID: "no.getdrop.app", environment: .sandbox)
        )
        #expect(
            text(request.body)
                == #"{"aps":{"alert":{"title":"Order confirmed","subtitle":"3 items","body":"Your order ord-7 of 1 234,50 kr is confirmed."},"badge":2,"sound":{"critical":1,"name":"default","volume":0.75},"thread-id":"orders","category":"ORDER","interruption-level":"critical","relevance-score":0.5,"mutable-content":1}}"#
        )
        #expect(request.host == "api.sandbox.push.apple.com")
    }

    @Test("localized alert keys instead of rendered text")
    func localizedKeys() throws {
        let request = try APNsPayloadBuilder.build(
            message {
                $0.alertLocalization = .init(
                    titleKey: "ORDER_TITLE",
                    bodyKey: "ORDER_BODY",
                    bodyArguments: ["ord-7", "1 234,50 kr"]
                )
                $0.data = []
                $0.deepLink = nil
            },
            for: device
        )
        #expect(
            text(request.body)
                == #"{"aps":{"alert":{"title-loc-key":"ORDER_TITLE","loc-key":"ORDER_BODY","loc-args":["ord-7","1 234,50 kr"]},"sound":"default","thread-id":"orders","category":"ORDER","interruption-level":"active"}}"#
        )
    }

    @Test("a silent push is background, priority 5, with content-available only")
    func background() throws {
        let request = try APNsPayloadBuilder.build(
            message {
                $0.contentAvailable = true
                $0.data = []
            },
            for: device
        )
        #expect(text(request.body) == #"{"aps":{"content-available":1},"deepLink":"https://getdrop.no/orders/ord-7"}"#)
        #expect(request.header("apns-push-type") == "background")
        #expect(request.header("apns-priority") == "5")
    }

    @Test("normal priority is 5; VoIP and other push types get their topic suffix; no TTL, no expiration")
    func pushTypes() throws {
        let normal = try APNsPayloadBuilder.build(
            message {
                $0.highPriority = false
                $0.timeToLive = nil
            },
            for: device
        )
        #expect(normal.header("apns-priority") == "5")
        #expect(normal.header("apns-expiration") == nil)
        let voip = try APNsPayloadBuilder.build(message(), for: device, pushType: .voip)
        #expect(voip.header("apns-topic") == "no.getdrop.app.voip")
        #expect(APNsPayloadBuilder.limit(for: .voip) == 5120)
        let live = try APNsPayloadBuilder.build(message(), for: device, pushType: .liveactivity)
        #expect(live.header("apns-topic") == "no.getdrop.app.push-type.liveactivity")
        // Each push type's header, written from its literal, in the request and in the worker's JSON.
        for pushType in APNsPayloadBuilder.PushType.allCases {
            let request = try APNsPayloadBuilder.build(message(), for: device, pushType: pushType)
            #expect(request.header("apns-push-type") == pushType.rawValue)
            var writer = JSONStreamWriter(capacity: 64)
            writer.beginObject()
            APNsPayloadBuilder.forEachHeader(message(), appID: "app", pushType: pushType) { name, value in
                writer.key(name)
                value.write(to: &writer)
            }
            writer.endObject()
            let headers = try JSONParser().parse(writer.bytes)
            #expect(headers["apns-push-type"] == .string(pushType.rawValue))
            #expect(headers["apns-priority"] == .string(pushType == .background ? "5" : "10"))
        }
    }

    @Test("apns-id is a UUID derived from the notification id: the same id gives the same UUID")
    func apnsID() throws {
        let first = try APNsPayloadBuilder.build(message(), for: device).header("apns-id")!
        let again = try APNsPayloadBuilder.build(message(), for: device).header("apns-id")!
        let other = try APNsPayloadBuilder.build(message { $0.notificationID = "n-2" }, for: device).header("apns-id")!
        #expect(first == again)
        #expect(first != other)
        let groups = first.split(separator: "-").map(\.count)
        #expect(groups == [8, 4, 4, 4, 12])
        #expect(first.split(separator: "-")[2].first == "8", "version 8")
        #expect("89AB".contains(first.split(separator: "-")[3].first!), "RFC 4122 variant")
    }

    @Test("a collapse id over 64 bytes is shortened at a grapheme boundary, and long keys stay distinct")
    func collapseID() throws {
        let long = String(repeating: "👩‍👩‍👧‍👦", count: 10) + "-a"
        let otherLong = String(repeating: "👩‍👩‍👧‍👦", count: 10) + "-b"
        let id = APNsPayloadBuilder.collapseID(long)
        #expect(id.utf8.count <= 64)
        #expect(id != APNsPayloadBuilder.collapseID(otherLong))
        #expect(id.hasPrefix("👩‍👩‍👧‍👦"))
        #expect(long.hasPrefix(String(id.split(separator: "~").first!)), "the kept part is whole graphemes of the key")
        #expect(APNsPayloadBuilder.collapseID("order-7") == "order-7")
    }

    @Test("a malformed device token is rejected without echoing it")
    func invalidToken() {
        for bad in ["", "not-hex", String(repeating: "z", count: 64), String(repeating: "a", count: 63)] {
            let error = #expect(throws: PayloadError.self) {
                try APNsPayloadBuilder.build(message(), for: Device(token: bad, appID: "no.getdrop.app"))
            }
            #expect(error?.code == .invalidToken)
            if !bad.isEmpty { #expect(error?.message.contains(bad) == false) }
        }
    }
}

@Suite("Size budget")
struct SizeBudgetTests {
    @Test("an oversize body is shortened with an ellipsis at a grapheme boundary; nothing else is dropped")
    func shortenBody() throws {
        let body = String(repeating: "Familie 👩‍👩‍👧‍👦 og flagg 🇳🇴 på café (e\u{301}). ", count: 200)
        let request = try APNsPayloadBuilder.build(message(body: body), for: device)
        #expect(request.body.count <= 4096)
        #expect(request.body.count > 4096 - 64, "as much of the body as fits is kept")
        let json = try JSONParser().parse(request.body)
        let shortened = json["aps"]?["alert"]?["body"]?.stringValue ?? ""
        #expect(shortened.hasSuffix("…"))
        #expect(body.hasPrefix(String(shortened.dropLast())))
        #expect(json["orderId"] == .string("ord-7"))
        #expect(json["deepLink"] != nil)
    }

    @Test("when shortening is not enough, data is dropped last-first, then the subtitle, then the deep link")
    func dropOrder() throws {
        let bigData = (0..<6).map { PushMessage.KeyValue("k\($0)", String(repeating: "x", count: 700)) }
        let request = try APNsPayloadBuilder.build(
            message {
                $0.data = bigData
                $0.subtitle = "sub"
            },
            for: device
        )
        let json = try JSONParser().parse(request.body)
        #expect(request.body.count <= 4096)
        #expect(json["k0"] != nil && json["k4"] != nil)
        #expect(json["k5"] == nil, "only the last data entry had to go")
        #expect(json["aps"]?["alert"]?["subtitle"] == .string("sub"))
    }

    @Test(
        "an image: imageUrl for the service extension and mutable-content; dropped after the subtitle, before the link"
    )
    func image() throws {
        let url = "https://getdrop.no/images/offers/black-friday.jpg"
        let request = try APNsPayloadBuilder.build(message { $0.imageURL = url }, for: device)
        let json = try JSONParser().parse(request.body)
        #expect(json["imageUrl"] == .string(url))
        #expect(json["aps"]?["mutable-content"] == .number("1"))
        // A data entry of the same name does not write the key twice.
        let shadowed = try APNsPayloadBuilder.build(
            message {
                $0.imageURL = url
                $0.data.append(.init("imageUrl", "https://elsewhere.example/x.png"))
            },
            for: device
        )
        #expect(text(shadowed.body).ranges(of: "\"imageUrl\"").count == 1)
        // A silent push carries neither.
        let silent = try JSONParser().parse(
            APNsPayloadBuilder.build(
                message {
                    $0.imageURL = url
                    $0.contentAvailable = true
                },
                for: device
            ).body
        )
        #expect(silent["imageUrl"] == nil && silent["aps"]?["mutable-content"] == nil)
        // Too large: the data goes first, then the subtitle, then the image; the deep link stays.
        let bigData = (0..<6).map { PushMessage.KeyValue("k\($0)", String(repeating: "x", count: 700)) }
        let crowded = try JSONParser().parse(
            APNsPayloadBuilder.build(
                message {
                    $0.data = bigData
                    $0.subtitle = "sub"
                    $0.imageURL = "https://getdrop.no/" + String(repeating: "i", count: 3900)
                },
                for: device
            ).body
        )
        #expect(crowded["imageUrl"] == nil && crowded["aps"]?["mutable-content"] == nil)
        #expect(crowded["aps"]?["alert"]?["subtitle"] == nil && crowded["k0"] == nil)
        #expect(crowded["deepLink"] == .string("https://getdrop.no/orders/ord-7"))
    }

    @Test("a title that alone exceeds the limit is payload_too_large, never an oversize request")
    func tooLarge() {
        let error = #expect(throws: PayloadError.self) {
            try APNsPayloadBuilder.build(message { $0.title = String(repeating: "T", count: 5000) }, for: device)
        }
        #expect(error?.code == .payloadTooLarge)
    }

    @Test(
        "random unicode, emoji and right-to-left text never yields an oversize request, invalid UTF-8 or a split grapheme"
    )
    func property() throws {
        var random = SeededRandom(seed: 0x4845_5241_4C44)
        let pool = [
            "a", "Z", " ", "ø", "ß", "e\u{301}", "n\u{303}\u{323}", "👍🏽", "👩‍👩‍👧‍👦", "🏳️‍🌈", "🇳🇴", "🇵🇱",
            "مرحبا", "ש", "\u{200F}", "中", "日本", "한", "\"", "\\", "\n", "\u{01}", "€", "𝄞",
        ]
        func randomText(maximum: Int) -> String {
            var text = ""
            for _ in 0..<Int(random.next() % UInt64(maximum + 1)) {
                text += pool[Int(random.next() % UInt64(pool.count))]
            }
            return text
        }
        for _ in 0..<300 {
            let body = randomText(maximum: 3000)
            let title = randomText(maximum: 40)
            let data = (0..<Int(random.next() % 6)).map { PushMessage.KeyValue("d\($0)", randomText(maximum: 300)) }
            let voip = random.next() % 4 == 0
            let built = message(body: body) {
                $0.title = title
                $0.data = data
            }
            let request = try APNsPayloadBuilder.build(built, for: device, pushType: voip ? .voip : .alert)
            #expect(request.body.count <= (voip ? 5120 : 4096))
            #expect(String(validating: request.body, as: UTF8.self) != nil)
            let json = try JSONParser().parse(request.body)
            let rendered = json["aps"]?["alert"]?["body"]?.stringValue ?? ""
            if rendered != body {
                #expect(rendered.hasSuffix("…"))
                let kept = Array(rendered.dropLast())
                #expect(Array(body).starts(with: kept), "the shortened body is whole graphemes of the original")
            }
            #expect(json["aps"]?["alert"]?["title"]?.stringValue == title)

            let fcm = try FCMPayloadBuilder.build(built, for: Device(token: "fcm-token", appID: "a"))
            #expect(fcm.count <= FCMPayloadBuilder.limit && String(validating: fcm, as: UTF8.self) != nil)
            let expo = try ExpoPayloadBuilder.build(built, for: Device(token: "ExponentPushToken[x]", appID: "a"))
            #expect(expo.count <= ExpoPayloadBuilder.limit && (try? JSONParser().parse(expo)) != nil)
        }
    }
}

@Suite("APNs device tokens")
struct APNsTokenTests {
    /// The rule as written in the docs: 64 to 200 hex digits of either case, an even number.
    static func isHexToken(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 64 && bytes.count <= 200 && bytes.count % 2 == 0
            && bytes.allSatisfy {
                (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0)
            }
    }

    @Test("checked sixteen bytes at a time, the check agrees with the rule for 30,000 seeded strings and every byte")
    func matchesTheRule() {
        var random = SeededRandom(seed: 64)
        let hex = Array("0123456789abcdefABCDEF".utf8)
        for round in 0..<30_000 {
            let count = [63, 64, 65, 66, 80, 100, 128, 199, 200, 201, 202, Int.random(in: 0...210, using: &random)][
                round % 12
            ]
            var bytes = (0..<count).map { _ in hex.randomElement(using: &random)! }
            // Most strings get one byte that is not a hex digit, anywhere, often one next to a range.
            if count > 0 && round % 4 != 0 {
                let near: [UInt8] = [0x2F, 0x3A, 0x40, 0x47, 0x60, 0x67, 0x00, 0x20, 0x80, 0xFF, 0xC1, 0xE6]
                bytes[Int.random(in: 0..<count, using: &random)] =
                    round % 2 == 0 ? near.randomElement(using: &random)! : UInt8.random(in: 0...255, using: &random)
            }
            let token = String(decoding: bytes, as: UTF8.self)
            #expect(
                APNsPayloadBuilder.isValidToken(token) == Self.isHexToken(Array(token.utf8)),
                "\(token.debugDescription)"
            )
        }
        // Every byte value at every one of a 64-digit token's places.
        let valid = Array(String(repeating: "0123456789abcDEF", count: 4).utf8)
        for place in 0..<64 {
            for byte in UInt8.min...UInt8.max {
                var bytes = valid
                bytes[place] = byte
                let expected = Self.isHexToken(bytes)
                #expect(
                    bytes.withUnsafeBytes { APNsPayloadBuilder.isValidToken($0) } == expected,
                    "byte \(byte) at \(place)"
                )
            }
        }
    }
}
