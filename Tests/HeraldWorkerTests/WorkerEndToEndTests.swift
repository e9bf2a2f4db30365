import Foundation
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldStore
import HeraldTestSupport
import HeraldWorker
import Testing

/// The example recipients: one per locale, each on another provider.
let exampleUsers: [(user: String, provider: String, token: String, locale: String, timeZone: String)] = [
    ("u-en", "apns", "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad", "en", "Europe/Oslo"),
    ("u-pl", "fcm", "dGVzdC1mY20tcmVnaXN0cmF0aW9uLXRva2Vu:APA91bHPRgkF", "pl", "Europe/Oslo"),
    ("u-nb", "expo", "ExponentPushToken[nb-xxxxxxxxxxxxxxxxxxxx]", "nb", "Europe/Oslo"),
]

/// What each example kind must say in each locale, and where it links.
let expectedTexts: [String: (link: String, en: String, pl: String, nb: String)] = [
    "order.confirmed": (
        "https://getdrop.no/orders/ord-7f3a", "of NOK 1,234.50 (3 items) is confirmed",
        "na kwotę 1234,50 NOK (3 produkty)", "på 1 234,50 kr (3 varer) er bekreftet"
    ),
    "order.shipped": (
        "https://getdrop.no/orders/ord-7f3a/tracking", "Expected Tuesday, November 24, 2026.",
        "Przewidywana dostawa: wtorek, 24 listopada 2026.", "Forventet levert tirsdag 24. november 2026."
    ),
    "payment.received": (
        "https://getdrop.no/wallet", "Ahmad Karimi sent you NOK 5,000.00.", "Ahmad Karimi przesyła Ci 5000,00 NOK.",
        "Ahmad Karimi sendte deg 5 000,00 kr."
    ),
    "payment.failed": (
        "https://getdrop.no/payments/pay-91c3", "Your payment of €249.90 failed", "Płatność na kwotę 249,90 €",
        "Betalingen på 249,90 € feilet"
    ),
    "security.login": (
        "https://getdrop.no/profile/security", "on Nov 21, 2026, 11:15 PM", "(21 lis 2026, 23:15)",
        "21. nov. 2026, 23:15"
    ),
    "message.received": (
        "https://getdrop.no/chats/chat-55", "Are we still on for dinner?", "Are we still on for dinner?",
        "Are we still on for dinner?"
    ),
    "promo.offer": (
        "https://getdrop.no/offers/black-friday", "30% off until Dec 1, 2026.", "30% zniżki do 1 gru 2026.",
        "30 % rabatt frem til 1. des. 2026."
    ),
]

/// The example event of `kind`, addressed to `user` alone, with an id of its own.
func exampleEvent(_ kind: String, for user: String) throws -> KafkaProducerRecord {
    let path = repositoryRoot.appendingPathComponent("catalog/events/\(kind).json").path
    let bytes = try #require(FileManager.default.contents(atPath: path))
    guard case .object(var event) = try JSONParser().parse(Array(bytes)), case .object(var data)? = event["data"] else {
        throw TestFailure("\(path) is not an event with object data")
    }
    for (index, member) in data.members.enumerated() {
        switch member.key {
        case "userId": data.members[index].value = .string(user)
        case "recipientIds", "userIds": data.members[index].value = .array([.string(user)])
        default: break
        }
    }
    var topic = ""
    for (index, member) in event.members.enumerated() {
        switch member.key {
        case "id": event.members[index].value = .string("\(member.value.stringValue ?? "")-\(user)")
        case "data": event.members[index].value = .object(data)
        case "source": topic = domainTopics[member.value.stringValue ?? ""] ?? ""
        default: break
        }
    }
    return KafkaProducerRecord(
        topic: topic,
        key: KafkaBytes(user),
        value: KafkaBytes(JSONValue.object(event).serialized)
    )
}

/// The badge counts a provider body sets: APNs' and Expo's `badge`, FCM's Android
/// `notification_count` and its iOS `aps.badge`.
func providerBadges(_ body: [UInt8]) throws -> [JSONValue] {
    let json = try JSONParser().parse(body)
    return [
        json["aps"]?["badge"], json["badge"],
        json["message"]?["android"]?["notification"]?["notification_count"],
        json["message"]?["apns"]?["payload"]?["aps"]?["badge"],
    ].compactMap { $0 }
}

/// The image URLs a provider body carries: APNs' `imageUrl`, FCM's `notification.image` and
/// `apns.fcm_options.image`, Expo's `richContent.image`.
func providerImages(_ body: [UInt8]) throws -> [JSONValue] {
    let json = try JSONParser().parse(body)
    return [
        json["imageUrl"], json["richContent"]?["image"], json["message"]?["notification"]?["image"],
        json["message"]?["apns"]?["fcm_options"]?["image"],
    ].compactMap { $0 }
}

@Suite("Worker end to end on the embedded broker", .serialized)
struct WorkerEndToEndTests {
    @Test(
        "every example kind in three locales becomes the expected provider call (provider, token, text, deep link)",
        // The stores a worker runs with (the memory store is replay's).
        arguments: [StoreKind.sqlite, .postgres]
    )
    func examplesInThreeLocales(_ kind: StoreKind) async throws {
        let pipeline = try Pipeline()
        try await withStore(kind) { store in
            // Before the events: the last partition's events must not race the directory.
            let clock = TestClock("2026-11-21T08:00:00Z")
            let worker = try pipeline.worker(store: store, clock: clock)
            try await pipeline.withCollector(["herald.outbound", "herald.events.dlq"]) { received in
                try await withRunningServices([worker]) {
                    try await pipeline.produce(
                        exampleUsers.flatMap {
                            recipientRecords($0)
                        }
                    )
                    try await eventually("the directory holds the three users") {
                        try await store.recipients(exampleUsers.map(\.user)).values.filter { !$0.devices.isEmpty }
                            .count == 3
                    }
                    var events: [KafkaProducerRecord] = []
                    for kind in expectedTexts.keys.sorted() {
                        for user in exampleUsers { events.append(try exampleEvent(kind, for: user.user)) }
                    }
                    try await pipeline.produce(events)
                    try await eventually("21 outbound messages") { received.count >= 21 }
                    // Nothing more arrives: no duplicates, no dead letters.
                    try await Task.sleep(for: .milliseconds(500))
                }
                let messages = received.all
                #expect(messages.filter { $0.topic == "herald.events.dlq" }.map(\.text) == [])
                let outbound = messages.compactMap(\.outbound)
                #expect(outbound.count == 21)
                for (kindName, expected) in expectedTexts {
                    for user in exampleUsers {
                        let found = outbound.filter { $0.kind == kindName && $0.recipient == user.user }
                        #expect(found.count == 1, "\(kindName) for \(user.user)")
                        guard let message = found.first else { continue }
                        // ICU separates amounts, currencies and times with no-break spaces.
                        let body = String(decoding: message.request.body, as: UTF8.self)
                            .replacingOccurrences(of: "\u{00A0}", with: " ").replacingOccurrences(
                                of: "\u{202F}",
                                with: " "
                            )
                        let text = user.locale == "en" ? expected.en : user.locale == "pl" ? expected.pl : expected.nb
                        #expect(message.provider.rawValue == user.provider)
                        #expect(message.token == user.token)
                        #expect(body.contains(text), "\(kindName) in \(user.locale): \(body)")
                        #expect(body.contains(expected.link), "\(kindName) links to \(expected.link): \(body)")
                        #expect(message.eventID.hasSuffix("-\(user.user)"))
                        #expect(message.attempt == 1)
                        // The chat kind's badge is the sample's unread count, on every provider; the
                        // other kinds leave the badge alone.
                        let badges = try providerBadges(message.request.body)
                        let expectedBadges = kindName == "message.received" ? (user.provider == "fcm" ? 2 : 1) : 0
                        #expect(badges.count == expectedBadges, "\(kindName) to \(user.provider): \(body)")
                        #expect(badges.allSatisfy { $0 == .number("3") }, "\(kindName) to \(user.provider): \(body)")
                        // The offer's picture, where each provider takes it (FCM twice: Android, iOS).
                        let images = try providerImages(message.request.body)
                        #expect(
                            images.count == (kindName == "promo.offer" ? (user.provider == "fcm" ? 2 : 1) : 0),
                            "\(kindName) to \(user.provider): \(body)"
                        )
                        #expect(
                            images.allSatisfy { $0 == .string("https://getdrop.no/images/offers/black-friday.jpg") },
                            "\(kindName) to \(user.provider): \(body)"
                        )
                        #expect(
                            message.notificationID
                                == NotificationIDs.expected(message.eventID, kindName, user.user, user.token)
                        )
                    }
                }
                // The outbound record is keyed by the recipient, and has no headers (docs/outbound.md).
                #expect(messages.filter { $0.topic == "herald.outbound" }.allSatisfy { $0.key != nil })
                #expect(messages.filter { $0.topic == "herald.outbound" }.allSatisfy { $0.headers.isEmpty })
            }
        }
    }

    @Test(
        "an event without a `time` is dated by its Kafka record's timestamp, and published again as a new record is decided again with the same notification id"
    )
    func untimedEvent() async throws {
        let pipeline = try Pipeline()
        try await withStore(.sqlite) { store in
            // The worker's clock is days behind the records' timestamps (the broker's wall clock).
            let worker = try pipeline.worker(store: store, clock: TestClock("2026-11-21T08:00:00Z"))
            try await pipeline.withCollector(["herald.outbound", "herald.events.dlq"]) { received in
                try await withRunningServices([worker]) {
                    try await pipeline.produce(exampleUsers.flatMap { recipientRecords($0) })
                    try await eventually("the directory holds the three users") {
                        try await store.recipients(exampleUsers.map(\.user)).values.filter { !$0.devices.isEmpty }
                            .count == 3
                    }
                    var record = try exampleEvent("order.confirmed", for: exampleUsers[0].user)
                    guard case .object(var event) = try JSONParser().parse(Array(try #require(record.value))) else {
                        throw TestFailure("the example event is not an object")
                    }
                    event.members.removeAll { $0.key == "time" }
                    record.value = KafkaBytes(JSONValue.object(event).serialized)
                    let before = WallClock().now()
                    try await pipeline.produce([record])
                    try await eventually("one outbound message") { received.count >= 1 }
                    let between = WallClock().now()
                    try await pipeline.produce([record])
                    try await eventually("two outbound messages") { received.count >= 2 }
                    let after = WallClock().now()
                    try await Task.sleep(for: .milliseconds(300))

                    let messages = received.all
                    #expect(messages.filter { $0.topic == "herald.events.dlq" }.map(\.text) == [])
                    let outbound = messages.compactMap(\.outbound)
                    try #require(outbound.count == 2)
                    #expect(outbound[0].notificationID == outbound[1].notificationID)
                    // Each dated by its own record: produced in its window, not at the worker's 08:00.
                    let (first, second) = (outbound[0].createdAt, outbound[1].createdAt)
                    #expect(first >= before && first <= between, "\(first)")
                    #expect(second >= between && second <= after, "\(second)")
                }
            }
        }
    }

    @Test(
        "small batches of one user's messages past the throttle limit: the first 100 are sent, in consumption order",
        arguments: [StoreKind.sqlite, .postgres]
    )
    func throttledInConsumptionOrder(_ kind: StoreKind) async throws {
        // The worker prepares one batch while the store decides the one before it, and every other
        // decide answers late: the limit must still be counted in the order the events were
        // consumed, batch after batch.
        let pipeline = try Pipeline()
        try await withStore(kind) { store in
            let clock = TestClock("2026-11-21T12:00:00Z")  // 13:00 in Oslo: no quiet hours
            let uneven = UnevenLatencyStore(store)
            let worker = try pipeline.worker(store: uneven, clock: clock, batchSize: 5)
            let user = exampleUsers[0]
            let total = 130
            try await pipeline.withCollector(["herald.outbound"]) { received in
                try await withRunningServices([worker]) {
                    try await pipeline.produce(
                        recipientRecords(user)
                    )
                    try await eventually("the directory holds the user") {
                        try await store.recipients([user.user])[OpaqueID(user.user)]?.devices.isEmpty == false
                    }
                    // Keyed by the user: one partition, consumed in this order.
                    try await pipeline.produce(
                        (0..<total).map { number in
                            KafkaProducerRecord(
                                topic: "messages.events",
                                key: KafkaBytes(user.user),
                                value: KafkaBytes(
                                    cloudEvent(
                                        id: "msg-\(number)",
                                        type: "message.received",
                                        source: "/chat",
                                        time: "2026-11-21T11:59:00Z",
                                        data: object([
                                            ("recipientIds", .array([.string(user.user)])),
                                            ("chatId", .string("chat-1")), ("senderName", .string("Ana")),
                                            ("preview", .string("message \(number)")),
                                        ])
                                    )
                                )
                            )
                        }
                    )
                    try await eventually("every message is decided") {
                        worker.statistics.snapshot.decisionsByReason.values.reduce(0, +) >= total
                    }
                    try await eventually("the sent messages' provider calls") { received.count >= 100 }
                    try await Task.sleep(for: .milliseconds(300))
                }
                #expect(
                    worker.statistics.snapshot.decisionsByReason == ["sent": 100, "throttled.digested": total - 100]
                )
                let sent = Set(received.all.compactMap(\.outbound).map(\.eventID))
                #expect(sent == Set((0..<100).map { "msg-\($0)" }))
                // The store saw the messages in their order, in more than a few calls.
                let decided = uneven.decidedBatches.flatMap { $0.map(\.eventID) }
                #expect(decided == (0..<total).map { "msg-\($0)" })
                #expect(uneven.decidedBatches.count > 10)
            }
        }
    }

    @Test("each poison class lands in the dead-letter topic with its code, and the partition keeps moving")
    func poisonEvents() async throws {
        let pipeline = try Pipeline()
        let store = try SQLiteStore(path: ":memory:")
        let clock = TestClock("2026-11-21T08:00:00Z")
        let worker = try pipeline.worker(store: store, clock: clock)
        let user = exampleUsers[0]
        let order = "orders.events"
        func record(_ value: String, key: String = "k") -> KafkaProducerRecord {
            KafkaProducerRecord(
                topic: order,
                partition: 0,
                key: KafkaBytes(key),
                value: KafkaBytes(value),
                headers: [KafkaHeader("origin", string: "test")]
            )
        }
        let orderData: [(String, JSONValue)] = [
            ("userId", .string(user.user)), ("orderId", .string("ord-1")),
            ("total", object([("amount", .number("10")), ("currency", .string("NOK"))])), ("itemCount", .number("1")),
        ]
        let poison: [(code: String, record: KafkaProducerRecord)] = [
            ("event.not_json", record("this is not JSON")),
            ("event.missing_attribute", record(#"{"specversion":"1.0","type":"order.confirmed","source":"/orders"}"#)),
            // A minute before year 0: written in its outbound message, this time crashed the worker. Dead
            // letters of the decoding stage come before those of rendering, hence its place here.
            (
                "event.bad_time",
                record(
                    #"{"specversion":"1.0","id":"p8","source":"/orders","type":"order.confirmed","#
                        + #""time":"0000-01-01T00:00:00+00:01","data":"# + object(orderData).serialized + "}"
                )
            ),
            // Longer than the decision ledger's key may be: PostgreSQL refused the batch, for ever.
            (
                "event.bad_attribute",
                record(
                    cloudEvent(id: String(repeating: "9", count: 600), type: "order.confirmed", data: object(orderData))
                )
            ),
            ("event.unknown_type", record(cloudEvent(id: "p3", type: "order.teleported", data: object(orderData)))),
            (
                "render.field_type_mismatch",
                record(
                    cloudEvent(
                        id: "p4",
                        type: "order.confirmed",
                        data: object(orderData.map { $0.0 == "itemCount" ? ($0.0, .string("three")) : $0 })
                    )
                )
            ),
            (
                "render.missing_recipient",
                record(
                    cloudEvent(id: "p5", type: "order.confirmed", data: object(orderData.filter { $0.0 != "userId" }))
                )
            ),
            (
                "render.bad_time_zone",
                record(
                    cloudEvent(
                        id: "p6",
                        type: "security.login",
                        data: object([
                            ("userId", .string("u-mars")), ("deviceName", .string("Pixel")),
                            ("location", .string("Oslo")),
                        ])
                    )
                )
            ),
            (
                "payload_too_large",
                record(
                    cloudEvent(
                        id: "p7",
                        type: "message.received",
                        data: object([
                            // A long sender name is shortened in the title; a chat id of 6,000 bytes is
                            // in the thread id (APNs) or collapse key (FCM), which are never shortened.
                            ("recipientIds", .array([.string(user.user)])),
                            ("chatId", .string(String(repeating: "A", count: 6000))),
                            ("senderName", .string("Ann")), ("preview", .string("Hi")),
                        ])
                    )
                )
            ),
        ]
        let good = record(cloudEvent(id: "good", type: "order.confirmed", data: object(orderData)), key: user.user)

        try await pipeline.withCollector(["herald.outbound", "herald.events.dlq"]) { received in
            try await withRunningServices([worker]) {
                try await pipeline.produce(
                    recipientRecords(user)
                        + recipientRecords(
                            "u-mars",
                            provider: "fcm",
                            token: "mars-token",
                            locale: "en",
                            timeZone: "UTC"
                        )
                        // A profile update naming an unknown zone is dead-lettered, not stored.
                        + [
                            directoryRecord(
                                "u-mars",
                                "u-mars-zone",
                                "user.profile.updated",
                                [("timeZone", .string("Mars/Olympus_Mons"))]
                            )
                        ]
                )
                try await eventually("the directory holds both users, and the bad update is dead-lettered") {
                    try await store.recipients([user.user, "u-mars"]).count == 2 && received.count == 1
                }
                #expect(try await store.recipients(["u-mars"])[OpaqueID("u-mars")]?.timeZone == "UTC")
                // A zone stored before profile updates were checked (or by another tool) still fails
                // when a notification with a date is rendered for the user.
                try await store.apply([
                    .profileUpdated(
                        userID: "u-mars",
                        locale: nil,
                        timeZone: "Mars/Olympus_Mons",
                        at: Timestamp(rfc3339: "2026-11-02T09:00:00Z")!
                    )
                ])
                try await pipeline.produce(poison.map(\.record) + [good])
                try await eventually("every poison event dead-lettered and the good one sent") {
                    received.count >= poison.count + 2
                }
            }
            let directoryLetters = received.all.filter {
                $0.topic == "herald.events.dlq" && $0.headerText(HeraldHeader.originalTopic) == "herald.directory"
            }
            #expect(directoryLetters.map { $0.headerText(HeraldHeader.errorCode) } == ["directory.invalid_event"])
            let letters = received.all.filter {
                $0.topic == "herald.events.dlq" && $0.headerText(HeraldHeader.originalTopic) == order
            }
            #expect(letters.map { $0.headerText(HeraldHeader.errorCode) ?? "" } == poison.map(\.code))
            for (letter, original) in zip(letters, poison) {
                #expect(letter.text == String(decoding: Array(original.record.value!), as: UTF8.self))
                #expect(letter.key.map { Array($0) } == Array("k".utf8))
                #expect(letter.headerText("origin") == "test", "the original headers are kept")
                #expect(letter.headerText(HeraldHeader.originalTopic) == order)
                #expect(letter.headerText(HeraldHeader.originalPartition) == "0")
                #expect(letter.headerText(HeraldHeader.originalOffset) != nil)
                #expect(letter.headerText(HeraldHeader.originalTimestamp) != nil)
                #expect(letter.headerText(HeraldHeader.version) == DeadLetter.heraldVersion)
                #expect(!(letter.headerText(HeraldHeader.errorMessage) ?? "").isEmpty)
            }
            let offsets = letters.compactMap { $0.headerText(HeraldHeader.originalOffset).flatMap { Int64($0) } }
            #expect(offsets == offsets.sorted(), "dead letters keep the partition's order")
            let sent = received.all.compactMap(\.outbound)
            #expect(sent.map(\.eventID) == ["good"], "the event after the poison ones is handled")
        }
        let statistics = worker.statistics.snapshot
        #expect(statistics.deadLettersByCode.values.reduce(0, +) == poison.count + 1)
    }
}

/// Notification ids computed independently of the worker: FNV-1a over the unit-separated parts.
enum NotificationIDs {
    static func expected(_ eventID: String, _ kind: String, _ recipient: String, _ token: String) -> String {
        let key = Array([eventID, kind, recipient, token].joined(separator: "\u{1F}").utf8)
        func fnv(_ seed: UInt64) -> UInt64 {
            var hash = seed
            for byte in key {
                hash ^= UInt64(byte)
                hash = hash &* 0x100_0000_01b3
            }
            return hash
        }
        let high = fnv(0xcbf2_9ce4_8422_2325)
        let low = fnv(high ^ 0x9E37_79B9_7F4A_7C15)
        func hex(_ value: UInt64) -> String {
            let digits = String(value, radix: 16, uppercase: true)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        return hex(high) + hex(low)
    }
}
