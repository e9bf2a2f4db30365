import Foundation
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldTestSupport
import HeraldWorker
import Logging
import Testing

@testable import HeraldProviders
@testable import HeraldStore

/// The worker's processing step without Kafka: messages in, records out.
@Suite("Event processing")
struct EventProcessorTests {
    let store: SQLiteStore
    let clock = TestClock("2026-11-21T12:00:00Z")
    let statistics = WorkerStatistics()

    init() throws {
        store = try SQLiteStore(path: ":memory:")
    }

    func processor(
        _ configure: (inout WorkerTopics) -> Void = { _ in },
        unknown: UnknownEventTypes = .deadLetter,
        maximumDevices: Int = EventProcessor.defaultMaximumDevicesPerRecipient
    )
        -> EventProcessor
    {
        var topics = WorkerTopics()
        configure(&topics)
        return EventProcessor(
            catalog: exampleCatalog,
            policy: .defaults,
            store: store,
            clock: clock,
            topics: topics,
            unknownEventTypes: unknown,
            statistics: statistics,
            logger: Logger(label: "test"),
            maximumDevicesPerRecipient: maximumDevices
        )
    }

    var offset: Int64 = 0

    mutating func message(_ value: String, topic: String = "messages.events") -> KafkaMessage {
        offset += 1
        return KafkaMessage(
            topic: topic,
            partition: 0,
            offset: offset,
            timestampMilliseconds: clock.now().epochMilliseconds,
            key: nil,
            value: KafkaBytes(value)
        )
    }

    mutating func chat(
        _ id: String,
        from sender: String = "Ana",
        at time: String? = "2026-11-21T12:00:00Z"
    ) -> KafkaMessage {
        message(
            cloudEvent(
                id: id,
                type: "message.received",
                source: "/chat",
                time: time,
                data: object([
                    ("recipientIds", .array([.string("u-en")])), ("chatId", .string("chat-1")),
                    ("senderName", .string(sender)), ("preview", .string("Hello \(id)")),
                ])
            )
        )
    }

    /// An order confirmed at 23:30 in Oslo, inside ``register(quietHours:)``'s quiet hours.
    mutating func lateOrder() -> KafkaMessage {
        message(
            cloudEvent(
                id: "late-order",
                type: "order.confirmed",
                source: "/orders",
                time: "2026-11-21T22:30:00Z",
                data: object([
                    ("userId", .string("u-en")), ("orderId", .string("ord-9")),
                    ("total", object([("amount", .number("10")), ("currency", .string("NOK"))])),
                    ("itemCount", .number("1")),
                ])
            ),
            topic: "orders.events"
        )
    }

    func register(quietHours: Bool = false) async throws {
        var changes: [DirectoryEvent] = [
            .deviceRegistered(
                DeviceRegistration(
                    userID: "u-en",
                    deviceID: "phone",
                    platform: "ios",
                    provider: .apns,
                    token: exampleUsers[0].token,
                    appID: "no.getdrop.app",
                    sandbox: false,
                    locale: "en",
                    at: Timestamp(rfc3339: "2026-11-01T00:00:00Z")!
                )
            ),
            .profileUpdated(
                userID: "u-en",
                locale: "en",
                timeZone: "Europe/Oslo",
                at: Timestamp(rfc3339: "2026-11-01T00:00:00Z")!
            ),
        ]
        if quietHours {
            changes.append(
                .preferencesUpdated(
                    userID: "u-en",
                    preferences: Preferences(
                        quietHours: QuietHours(start: "22:00", end: "07:00", timeZone: "Europe/Oslo")
                    ),
                    at: Timestamp(rfc3339: "2026-11-01T00:00:00Z")!
                )
            )
        }
        try await store.apply(changes)
    }

    @Test(
        "a redelivered batch yields the same records, with the same notification ids, and counts once; its decision records say when it was first decided"
    )
    mutating func redelivery() async throws {
        try await register()
        let processor = processor { $0.decisions = "herald.decisions" }
        let batch = [chat("m1"), chat("m2"), chat("m3")]
        let first = try await processor.process(batch)
        // Redelivered half an hour later (a worker that died before its records went out).
        clock.set("2026-11-21T12:30:00Z")
        let again = try await processor.process(batch)
        let outbound = first.filter { $0.topic == "herald.outbound" }
        #expect(outbound.count == 3)
        #expect(outbound.map(\.value) == again.filter { $0.topic == "herald.outbound" }.map(\.value))
        func decisions(_ records: [KafkaProducerRecord]) -> [String] {
            records.filter { $0.topic == "herald.decisions" }.map { String(decoding: Array($0.value!), as: UTF8.self) }
        }
        #expect(decisions(first).count == 3)
        #expect(!decisions(first).contains { $0.contains("recorded") }, "\(decisions(first))")
        #expect(decisions(again).count == 3)
        #expect(
            decisions(again).allSatisfy {
                $0.contains(#""reason":"duplicate","recorded":"sent""#)
                    && $0.contains(#""decidedAt":"2026-11-21T12:30:00.000Z","recordedAt":"2026-11-21T12:00:00.000Z""#)
            },
            "\(decisions(again))"
        )
        #expect(statistics.snapshot.decisionsByReason == ["sent": 3, "duplicate": 3])
        // Counted once: 97 more fit in the hour's limit of 100; the 98th is digested.
        var more: [KafkaMessage] = []
        for number in 4...101 { more.append(chat("m\(number)")) }
        let records = try await processor.process(more)
        #expect(records.filter { $0.topic == "herald.outbound" }.count == 97)
        #expect(statistics.snapshot.decisionsByReason["throttled.digested"] == 1)
    }

    @Test(
        "an event without a `time` is keyed and dated by its record's timestamp: a redelivery of the record is a duplicate with the same records, the same event in a new record is decided again with the same notification ids"
    )
    mutating func untimedEvent() async throws {
        try await register()
        let processor = processor { $0.decisions = "herald.decisions" }
        clock.set("2026-11-21T12:05:00Z")
        let untimed = chat("u1", at: nil)  // produced at 12:05
        let timed = chat("t1")  // occurred at 12:00, produced at 12:05
        clock.set("2026-11-21T12:20:00Z")  // the worker reaches them a quarter of an hour later
        let first = try await processor.process([untimed, timed])
        func outbound(_ records: [KafkaProducerRecord]) throws -> [JSONValue] {
            try records.filter { $0.topic == "herald.outbound" }.map { try JSONParser().parse(Array($0.value!)) }
        }
        func reasons(_ records: [KafkaProducerRecord]) throws -> [String] {
            try records.filter { $0.topic == "herald.decisions" }.map {
                try JSONParser().parse(Array($0.value!))["reason"]?.stringValue ?? ""
            }
        }
        let sent = try outbound(first)
        #expect(sent.map { $0["createdAt"]?.stringValue } == ["2026-11-21T12:05:00.000Z", "2026-11-21T12:00:00.000Z"])
        #expect(try reasons(first) == ["sent", "sent"])
        // The ledger holds the untimed event at its record's time, not at 0.
        let times = try await store.run { connection throws(StoreError) in
            var times: [String: Int64] = [:]
            try connection.query("SELECT event_id, event_time FROM decisions") {
                times[$0.text(0) ?? ""] = $0.integer(1)
            }
            return times
        }
        #expect(times == ["u1": untimed.timestampMilliseconds!, "t1": timed.timestampMilliseconds! - 300_000])

        // Redelivered an hour later (a worker that died before committing): the same records.
        clock.set("2026-11-21T13:20:00Z")
        let again = try await processor.process([untimed])
        #expect(try reasons(again) == ["duplicate"])
        #expect(try outbound(again) == [sent[0]])

        // Published again as a new record: another event to the ledger, dated by the new record,
        // with the same notification id, which the sender's delivery ledger tells apart.
        let republished = chat("u1", at: nil)
        let second = try await processor.process([republished])
        #expect(try reasons(second) == ["sent"])
        let resent = try outbound(second)
        #expect(resent.map { $0["createdAt"]?.stringValue } == ["2026-11-21T13:20:00.000Z"])
        #expect(resent.map { $0["notificationId"] } == [sent[0]["notificationId"]])
    }

    /// A sign-in by `u-en` at `time` (nil: none), whose template prints the time.
    mutating func login(_ id: String, at time: String?) -> KafkaMessage {
        message(
            cloudEvent(
                id: id,
                type: "security.login",
                source: "/identity",
                time: time,
                data: object([("userId", .string("u-en")), ("deviceName", .string("iPhone 15"))])
            ),
            topic: "identity.events"
        )
    }

    @Test(
        "an event without a `time` prints its record's time where a template prints the time (the example security.login), and so does one a deferral kept without a time"
    )
    mutating func untimedTemplateTime() async throws {
        try await register()
        let processor = processor()
        clock.set("2026-11-21T12:05:00Z")
        let untimed = login("untimed", at: nil)  // produced at 12:05
        let timed = login("timed", at: "2026-11-21T12:05:00Z")
        clock.set("2026-11-21T12:20:00Z")
        let records = try await processor.process([untimed, timed])
        func bodies(_ records: [KafkaProducerRecord]) throws -> [String] {
            try records.filter { $0.topic == "herald.outbound" }.map {
                let value = try JSONParser().parse(Array($0.value!))
                return value["request"]?["body"]?["aps"]?["alert"]?["body"]?.stringValue ?? ""
            }
        }
        #expect(!records.contains { $0.topic == WorkerTopics().eventsDeadLetter })
        let texts = try bodies(records)
        #expect(texts.count == 2)
        // Printed as if the event had said it occurred at 12:05 (13:05 in Oslo).
        #expect(texts.first == texts.last, "\(texts)")
        #expect(texts.first?.contains("iPhone 15") == true && texts.first?.contains("1:05") == true, "\(texts)")

        // A deferral a worker before this one kept without a time, keyed at its record's: resumed,
        // it prints that time.
        let key = DecisionKey(
            eventID: "kept",
            kind: "security.login",
            recipient: "u-en",
            eventTime: Timestamp(rfc3339: "2026-11-21T12:05:00Z")
        )
        let due = try #require(Timestamp(rfc3339: "2026-11-21T12:30:00Z"))
        let payload = String(decoding: login("kept", at: nil).value.map { Array($0) } ?? [], as: UTF8.self)
        _ = try await store.decide([
            DecisionRequest(
                key: key,
                plan: DecisionPlan(PolicyOutcome(.deferredQuietHours, dueAt: due, effects: [.schedule(at: due)])),
                decidedAt: clock.now(),
                payload: payload
            )
        ])
        clock.set("2026-11-21T12:30:00Z")
        let resumed = try await processor.processDue(limit: 10, lease: .seconds(60)).records
        #expect(!resumed.contains { $0.topic == WorkerTopics().eventsDeadLetter })
        #expect(try bodies(resumed) == [texts[0]])
    }

    @Test(
        "decision records name their recipient by its keyed hash (value and key), the logs' hash when keyed alike, or by the id when configured clear"
    )
    mutating func decisionRecipients() async throws {
        try await register(quietHours: true)
        let key = Array("0123456789abcdef-analytics".utf8)
        let hashing = processor {
            $0.decisions = "herald.decisions"
            $0.analyticsRecipients = .hashed(UserHash(key: key))
        }
        // Decided in the quiet hours, then again when they end: the deferral's record and the send's.
        clock.set("2026-11-21T22:30:00Z")  // 23:30 in Oslo
        let order = lateOrder()
        let hashed = try await hashing.process([order])
        clock.set("2026-11-22T06:00:00Z")  // 07:00 in Oslo
        let resumed = try await hashing.processDue(limit: 10, lease: .seconds(60)).records
        let records = (hashed + resumed).filter { $0.topic == "herald.decisions" }
        let reasons = try records.map { record in
            let value = try JSONParser().parse(Array(try #require(record.value)))
            // HMAC-SHA256("0123456789abcdef-analytics", "u-en"), its first 6 bytes (Python's hmac module).
            #expect(value["recipient"]?.stringValue == "u:E9EB88E43EFF")
            #expect(record.key.map { String(decoding: Array($0), as: UTF8.self) } == "u:E9EB88E43EFF")
            return value["reason"]?.stringValue ?? ""
        }
        #expect(reasons == ["deferred.quiet_hours", "sent"])
        #expect(UserHash(key: key)("u-en") == "u:E9EB88E43EFF")
        #expect(UserHash(key: nil)("u-en") != "u:E9EB88E43EFF")
        // The records of the user's decisions contain the id nowhere.
        for record in records {
            #expect(!String(decoding: Array(record.value!), as: UTF8.self).contains("u-en"))
        }

        let clear = try await processor {
            $0.decisions = "herald.decisions"
            $0.analyticsRecipients = .clear
        }.process([chat("m2")])
        let decision = try #require(clear.first { $0.topic == "herald.decisions" })
        #expect(try JSONParser().parse(Array(decision.value!))["recipient"]?.stringValue == "u-en")
        #expect(decision.key.map { String(decoding: Array($0), as: UTF8.self) } == "u-en")
    }

    @Test(
        "devices the directory removes over store.max_devices_per_user are counted, and the user's notification goes to the devices kept"
    )
    mutating func directoryDeviceLimit() async throws {
        let limited = try SQLiteStore(path: ":memory:", maximumDevicesPerUser: 2)
        let processor = EventProcessor(
            catalog: exampleCatalog,
            policy: .defaults,
            store: limited,
            clock: clock,
            topics: WorkerTopics(),
            unknownEventTypes: .deadLetter,
            statistics: statistics,
            logger: Logger(label: "test"),
            maximumDevicesPerRecipient: 2
        )
        let registrations = (0..<3).map { index in
            message(
                cloudEvent(
                    id: "r-\(index)",
                    type: "device.registered",
                    source: "/accounts",
                    time: "2026-11-01T0\(index):00:00Z",
                    data: object([
                        ("userId", .string("u-en")), ("deviceId", .string("device-\(index)")),
                        ("platform", .string("ios")), ("provider", .string("apns")),
                        ("token", .string(String(repeating: String(index), count: 64))),
                        ("appId", .string("no.getdrop.app")), ("locale", .string("en")),
                    ])
                ),
                topic: "herald.directory"
            )
        }
        #expect(try await processor.process(registrations).isEmpty)
        #expect(statistics.snapshot.devicesEvicted == 1)
        #expect(statistics.snapshot.directoryChanges == 3)
        let records = try await processor.process([chat("m1")])
        let outbound = try records.map { try OutboundMessage(decoding: $0.value ?? KafkaBytes([])) }
        #expect(outbound.map(\.token) == ["1", "2"].map { String(repeating: $0, count: 64) })
        #expect(statistics.snapshot.devicesLeftOut == 0, "the worker's limit had nothing left to leave out")
    }

    @Test(
        "a recipient with more devices than worker.max_devices_per_recipient gets the notification on the most recently registered, the rest counted"
    )
    mutating func deviceLimit() async throws {
        // Registered a minute apart, oldest first; their device ids sort the other way round.
        try await store.apply(
            (0..<5).map { index in
                .deviceRegistered(
                    DeviceRegistration(
                        userID: "u-en",
                        deviceID: "device-\(9 - index)",
                        platform: "ios",
                        provider: .apns,
                        token: String(repeating: String(index), count: 64),
                        appID: "no.getdrop.app",
                        sandbox: false,
                        locale: "en",
                        at: Timestamp(
                            epochMilliseconds: Timestamp(rfc3339: "2026-11-01T00:00:00Z")!.epochMilliseconds
                                + Int64(index) * 60_000
                        )
                    )
                )
            }
        )
        let records = try await processor(maximumDevices: 3).process([chat("m1")])
        let outbound = try records.map { try OutboundMessage(decoding: $0.value ?? KafkaBytes([])) }
        #expect(outbound.map(\.token) == (2..<5).map { String(repeating: String($0), count: 64) })
        #expect(statistics.snapshot.devicesLeftOut == 2)
        #expect(statistics.snapshot.decisionsByReason == ["sent": 1], "one decision for the recipient, as before")
        // Within the limit, every device.
        let all = try await processor(maximumDevices: 5).process([chat("m2")])
        #expect(all.count == 5)
        #expect(statistics.snapshot.devicesLeftOut == 2)
    }

    @Test(
        "a recipient's devices: one rendering per locale shared by its devices, each with its own notification id; a token no provider accepts is skipped, not dead-lettered"
    )
    mutating func devicesOfOneRecipient() async throws {
        let registered = Timestamp(rfc3339: "2026-11-01T00:00:00Z")!
        func device(_ id: String, _ provider: PushProvider, _ token: String, _ locale: String) -> DirectoryEvent {
            .deviceRegistered(
                DeviceRegistration(
                    userID: "u-en",
                    deviceID: id,
                    platform: provider == .apns ? "ios" : "android",
                    provider: provider,
                    token: token,
                    appID: "no.getdrop.app",
                    sandbox: false,
                    locale: locale,
                    at: registered
                )
            )
        }
        try await store.apply([
            .profileUpdated(userID: "u-en", locale: "en", timeZone: "Europe/Oslo", at: registered),
            device("phone", .apns, exampleUsers[0].token, "en"),
            device("tablet", .fcm, exampleUsers[1].token, "nb"),
            device("old-phone", .apns, "not-an-apns-token", "en"),
            device("watch", .apns, String(repeating: "b", count: 64), "en"),
        ])
        let records = try await processor().process([chat("m1")])
        #expect(!records.contains { $0.topic != "herald.outbound" }, "no dead letter: \(records.map(\.topic))")
        let outbound = try records.map { try OutboundMessage(decoding: $0.value ?? KafkaBytes([])) }
        #expect(
            outbound.map(\.token) == [exampleUsers[0].token, exampleUsers[1].token, String(repeating: "b", count: 64)]
        )
        #expect(outbound.map(\.locale) == ["en", "nb", "en"])
        #expect(
            outbound.map(\.notificationID)
                == outbound.map {
                    NotificationID.make(eventID: "m1", kind: "message.received", recipient: "u-en", device: $0.token)
                }
        )
        #expect(Set(outbound.map(\.notificationID)).count == 3)
        // Each request carries its own device's id (APNs in `apns-id`, FCM in the data), not the one
        // of the device before it.
        for message in outbound {
            if message.provider == .apns {
                let apnsID = message.request.headers.first { $0.name == "apns-id" }?.value
                #expect(apnsID == StableHash.uuid(from: message.notificationID))
            } else {
                let body = String(decoding: message.request.body, as: UTF8.self)
                #expect(body.contains(#""herald_notification_id":"\#(message.notificationID)""#), "\(body)")
            }
        }
        #expect(statistics.snapshot.skippedDevices == 1)
        #expect(statistics.snapshot.outboundByLocale == ["en": 2, "nb": 1])
    }

    @Test(
        "two users whose ids differ only in their Unicode normalization each get their own notification, on their own device"
    )
    mutating func recipientsByBytes() async throws {
        let (composed, decomposed) = ("jos\u{E9}", "jose\u{301}")
        let registered = Timestamp(rfc3339: "2026-11-01T00:00:00Z")!
        try await store.apply(
            [(composed, "a"), (decomposed, "b")].map { user, digit in
                .deviceRegistered(
                    DeviceRegistration(
                        userID: user,
                        deviceID: "phone",
                        platform: "ios",
                        provider: .apns,
                        token: String(repeating: digit, count: 64),
                        appID: "no.getdrop.app",
                        sandbox: false,
                        locale: "en",
                        at: registered
                    )
                )
            }
        )
        func chat(_ id: String, to users: [String]) -> KafkaMessage {
            message(
                cloudEvent(
                    id: id,
                    type: "message.received",
                    source: "/chat",
                    time: "2026-11-21T12:00:00Z",
                    data: object([
                        ("recipientIds", .array(users.map { .string($0) })), ("chatId", .string("chat-1")),
                        ("senderName", .string("Ana")), ("preview", .string("Hello")),
                    ])
                )
            )
        }
        // One event naming both, then one each: the second batch is answered from the directory cache.
        for batch in [
            [chat("m1", to: [composed, decomposed])], [chat("m2", to: [decomposed]), chat("m3", to: [composed])],
        ] {
            let records = try await processor().process(batch)
            let outbound = try records.map { try OutboundMessage(decoding: $0.value ?? KafkaBytes([])) }
            #expect(outbound.count == 2)
            for message in outbound {
                let expected = message.recipient.utf8.elementsEqual(composed.utf8) ? "a" : "b"
                #expect(message.token == String(repeating: expected, count: 64), "\(Array(message.recipient.utf8))")
            }
            #expect(Set(outbound.map { Array($0.recipient.utf8) }).count == 2)
        }
    }

    @Test("events of a type no kind handles are ignored, and counted, when so configured")
    mutating func unknownTypesIgnored() async throws {
        let processor = processor(unknown: .ignore)
        let records = try await processor.process([
            message(cloudEvent(id: "x", type: "order.teleported", data: object([])))
        ])
        #expect(records.isEmpty)
        #expect(statistics.snapshot.ignoredEvents == 1)
        #expect(statistics.snapshot.eventsByType == ["order.teleported": 1])
    }

    @Test("a notification deferred by quiet hours is sent when they end, with the id it would have had")
    mutating func deferral() async throws {
        try await register(quietHours: true)
        let processor = processor()
        clock.set("2026-11-21T22:30:00Z")  // 23:30 in Oslo
        let order = lateOrder()
        #expect(try await processor.process([order]).isEmpty)
        #expect(statistics.snapshot.decisionsByReason == ["deferred.quiet_hours": 1])
        #expect(try await processor.processDue(limit: 10, lease: .seconds(60)).claimed.isEmpty, "not due yet")

        clock.set("2026-11-22T06:00:00Z")  // 07:00 in Oslo
        let (records, claimed) = try await processor.processDue(limit: 10, lease: .seconds(60))
        #expect(claimed.count == 1)
        let sent = records.compactMap { try? OutboundMessage(decoding: Array($0.value!)) }
        #expect(sent.map(\.eventID) == ["late-order"])
        #expect(
            sent.first?.notificationID
                == NotificationIDs.expected("late-order", "order.confirmed", "u-en", exampleUsers[0].token)
        )
        try await store.complete(claimed)
        #expect(try await processor.processDue(limit: 10, lease: .seconds(60)).claimed.isEmpty, "sent once")
    }

    @Test("a silent push goes out during quiet hours (it disturbs no one), as a background push")
    mutating func silentInQuietHours() async throws {
        try await register(quietHours: true)
        let processor = processor()
        clock.set("2026-11-21T22:30:00Z")  // 23:30 in Oslo, inside u-en's quiet hours
        let balance = message(
            cloudEvent(
                id: "late-balance",
                type: "account.balance_updated",
                source: "/payments",
                time: "2026-11-21T22:30:00Z",
                data: object([
                    ("userId", .string("u-en")), ("accountId", .string("acc-1")),
                    ("balance", object([("amount", .number("10")), ("currency", .string("NOK"))])),
                ])
            ),
            topic: "payments.events"
        )
        let sent = try await processor.process([balance]).compactMap {
            try? OutboundMessage(decoding: Array($0.value!))
        }
        #expect(statistics.snapshot.decisionsByReason == ["sent": 1])
        #expect(sent.map(\.kind) == ["account.synced"])
        #expect(sent.first?.request.headers.first { $0.name == "apns-push-type" }?.value == "background")
        // A visible notification at the same moment is still deferred.
        #expect(try await processor.process([lateOrder()]).isEmpty)
        #expect(statistics.snapshot.decisionsByReason == ["sent": 1, "deferred.quiet_hours": 1])
    }

    @Test("a badge-only push goes out during quiet hours as an APNs alert push that carries the badge alone")
    mutating func badgeOnlyInQuietHours() async throws {
        try await register(quietHours: true)
        let processor = processor()
        clock.set("2026-11-21T22:30:00Z")  // 23:30 in Oslo, inside u-en's quiet hours
        let read = message(
            cloudEvent(
                id: "late-read",
                type: "message.read",
                source: "/chat",
                time: "2026-11-21T22:30:00Z",
                data: object([("userId", .string("u-en")), ("unreadCount", .number("4"))])
            ),
            topic: "chat.events"
        )
        let sent = try await processor.process([read]).compactMap {
            try? OutboundMessage(decoding: Array($0.value!))
        }
        #expect(statistics.snapshot.decisionsByReason == ["sent": 1])
        #expect(sent.map(\.kind) == ["messages.read"])
        let request = try #require(sent.first?.request)
        #expect(request.headers.first { $0.name == "apns-push-type" }?.value == "alert")
        #expect(request.headers.first { $0.name == "apns-priority" }?.value == "5")
        #expect(try JSONParser().parse(request.body)["aps"] == .object(JSONObject([("badge", .number("4"))])))
        // A visible notification at the same moment is still deferred.
        #expect(try await processor.process([lateOrder()]).isEmpty)
        #expect(statistics.snapshot.decisionsByReason == ["sent": 1, "deferred.quiet_hours": 1])
    }

    @Test("over the messages limit, the rest of the hour becomes one digest: \"3 new messages from Cleo and 1 other\"")
    mutating func digest() async throws {
        try await register()
        let processor = processor()
        var batch: [KafkaMessage] = []
        for number in 1...100 { batch.append(chat("m\(number)")) }
        batch += [chat("d1", from: "Ben"), chat("d2", from: "Ben"), chat("d3", from: "Cleo")]
        let records = try await processor.process(batch)
        #expect(records.count == 100)
        #expect(statistics.snapshot.decisionsByReason == ["sent": 100, "throttled.digested": 3])

        // The window closes at 13:00; its digest goes out Policy.digestGrace later, not before.
        clock.set("2026-11-21T13:00:29Z")
        #expect(try await processor.processDue(limit: 10, lease: .seconds(60)).claimed.isEmpty)
        clock.set("2026-11-21T13:00:30Z")
        let (due, claimed) = try await processor.processDue(limit: 10, lease: .seconds(60))
        #expect(claimed.count == 1)
        let digests = due.compactMap { try? OutboundMessage(decoding: Array($0.value!)) }
        #expect(digests.count == 1)
        let body = String(decoding: digests.first?.request.body ?? [], as: UTF8.self)
        #expect(body.contains("3 new messages from Cleo and 1 other"), "\(body)")
        #expect(digests.first?.eventID.hasPrefix("digest:") == true)
    }

    @Test(
        "events the store refuses alone are dead-lettered as store.rejected; a batch it refuses every event of waits instead"
    )
    mutating func storeRefusals() async throws {
        try await register()
        try await store.run { connection throws(StoreError) in
            try connection.execute(
                """
                CREATE TRIGGER refuse BEFORE INSERT ON decisions WHEN NEW.event_id LIKE 'refused-%'
                BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;
                """
            )
        }
        let processor = processor()
        let records = try await processor.process([chat("refused-1"), chat("m1"), chat("refused-2")])
        #expect(records.filter { $0.topic == "herald.events.dlq" }.count == 2)
        #expect(
            records.filter { $0.topic == "herald.events.dlq" }.allSatisfy {
                $0.headers.first(named: HeraldHeader.errorCode)?.string == "store.rejected"
            }
        )
        #expect(records.filter { $0.topic == "herald.outbound" }.count == 1)
        // Every event refused: the store is more likely at fault than each event, so nothing is
        // dead-lettered and the batch is left to be tried again.
        let all = [chat("refused-3"), chat("refused-4")]
        let error = await #expect(throws: StoreError.self) { try await processor.process(all) }
        #expect(error?.code == .storeRejected)
    }
}
