import Foundation
import HeraldAuth
import HeraldEvents
import HeraldSimulator
import HeraldTestSupport
import HeraldWorker
import Testing

@testable import HeraldSender

/// Every row of the classification tables in `docs/providers.md`, driven through the simulator's
/// wire format: scripted answers for every row, and the simulator's own checks for the rows a
/// request can provoke.
@Suite("Provider answers, classified")
struct ProviderAnswerTests {
    /// A distinct, well-formed APNs token per row.
    static func apnsToken(_ index: Int) -> String {
        let hex = String(index, radix: 16)
        return String(repeating: "0", count: 64 - hex.count) + hex
    }

    @Test("every APNs reason, as the simulator sends it, gets its class (both transports)", arguments: [false, true])
    func everyAPNsReason(frames: Bool) async throws {
        try await SimulatorFixture.with(frames: frames) { fixture in
            for (index, row) in Classification.apnsReasons.enumerated() {
                let token = Self.apnsToken(index + 1)
                fixture.simulator.script(token: token, .init(status: row.status, reason: row.reason))
                let outcome = await fixture.apns.send(try SimulatorFixture.message(.apns, token: token))
                #expect(outcome.class == row.class, "\(row.reason)")
                #expect(outcome.reason?.code == "apns.\(row.reason)")
                if row.status == 410 {
                    #expect(outcome == .invalidToken(outcome.reason!, at: Timestamp(rfc3339: "2026-11-22T12:00:00Z")))
                }
            }
        }
    }

    @Test("the APNs answers a request provokes: headers, token, payload, provider token")
    func provokedAPNsAnswers() async throws {
        func with(_ message: OutboundMessage, _ change: (inout OutboundMessage) -> Void) -> OutboundMessage {
            var message = message
            change(&message)
            return message
        }
        func setHeader(_ name: String, _ value: String?) -> (inout OutboundMessage) -> Void {
            { message in
                message.request.headers.removeAll { $0.name == name }
                if let value { message.request.headers.append(.init(name, value)) }
            }
        }
        try await SimulatorFixture.with { fixture in
            let base = try SimulatorFixture.message(.apns)
            let cases: [(String, OutboundMessage)] = [
                ("BadCollapseId", with(base, setHeader("apns-collapse-id", String(repeating: "c", count: 65)))),
                ("BadDeviceToken", with(base) { $0.request.path = "/3/device/" + String(repeating: "z", count: 64) }),
                ("BadExpirationDate", with(base, setHeader("apns-expiration", "soon"))),
                ("BadMessageId", with(base, setHeader("apns-id", "not-a-uuid"))),
                ("BadPriority", with(base, setHeader("apns-priority", "7"))),
                (
                    "DuplicateHeaders",
                    with(base) { $0.request.headers.append(.init("apns-topic", SimulatorFixture.bundleID)) }
                ),
                ("InvalidPushType", with(base, setHeader("apns-push-type", "banner"))),
                ("MissingDeviceToken", with(base) { $0.request.path = "/3/device/" }),
                ("MissingTopic", with(base, setHeader("apns-topic", nil))),
                ("PayloadEmpty", with(base) { $0.request.body = [] }),
                ("TopicDisallowed", with(base, setHeader("apns-topic", "com.example.someone-else"))),
                (
                    "PayloadTooLarge",
                    with(base) {
                        $0.request.body = Array(#"{"aps":{"alert":"\#(String(repeating: "x", count: 4100))"}}"#.utf8)
                    }
                ),
                ("BadPath", with(base) { $0.request.path = "/3/device/\(SimulatorFixture.apnsToken)/extra" }),
            ]
            for (reason, message) in cases {
                let outcome = await fixture.apns.send(message)
                let row = try #require(Classification.apnsReasons.first { $0.reason == reason })
                #expect(outcome.reason?.code == "apns.\(reason)")
                #expect(outcome.class == row.class, "\(reason)")
            }
            #expect(fixture.simulator.deliveries.isEmpty)

            fixture.simulator.unregister(
                token: SimulatorFixture.apnsToken,
                at: Timestamp(rfc3339: "2026-11-20T08:00:00Z")!
            )
            let unregistered = await fixture.apns.send(base)
            #expect(
                unregistered
                    == .invalidToken(
                        .init("apns.Unregistered", "APNs answered 410 Unregistered"),
                        at: Timestamp(rfc3339: "2026-11-20T08:00:00Z")
                    )
            )
        }
        try await SimulatorFixture.with(trustedAPNsKey: false) { fixture in
            let outcome = await fixture.apns.send(try SimulatorFixture.message(.apns))
            #expect(
                outcome == .configuration(.init("apns.InvalidProviderToken", "APNs answered 403 InvalidProviderToken"))
            )
        }
    }

    @Test("a good APNs request is accepted once, under its apns-id, with its payload")
    func apnsDelivery() async throws {
        try await SimulatorFixture.with { fixture in
            let message = try SimulatorFixture.message(.apns, id: "order-1-user-1-device-1")
            #expect(await fixture.apns.send(message) == .delivered())
            let apnsID = try #require(message.request.headers.first { $0.name == "apns-id" }?.value)
            #expect(fixture.simulator.acceptedCount(id: apnsID) == 1)
            let delivery = try #require(fixture.simulator.deliveries.first)
            #expect(delivery.provider == .apns && delivery.token == SimulatorFixture.apnsToken)
            #expect(String(decoding: delivery.body ?? [], as: UTF8.self).contains("Order confirmed"))
            // Sandbox devices go to the sandbox host (here the same simulator).
            #expect(
                await fixture.apns.send(try SimulatorFixture.message(.apns, id: "n-2", sandbox: true)) == .delivered()
            )
        }
    }

    @Test(
        "provider faults: 500, 503 and 429 are retried, a dropped request too (both transports)",
        arguments: [false, true]
    )
    func faults(frames: Bool) async throws {
        for (rate, expected) in [
            ("500", "apns.InternalServerError"), ("503", "apns.ServiceUnavailable"), ("429", "apns.TooManyRequests"),
            ("drop", "transport.connection"),
        ] {
            try await SimulatorFixture.with(faults: try FaultProfile(parsing: "\(rate)=1"), frames: frames) { fixture in
                let outcome = await fixture.apns.send(try SimulatorFixture.message(.apns))
                #expect(outcome.class == .retry, "\(rate)")
                #expect(outcome.reason?.code == expected)
                if rate == "drop" {
                    // The cause is named (the simulator drops an HTTP/2 request by resetting its
                    // stream with CANCEL); the device token, in the request's URL, is not.
                    let message = outcome.reason?.message ?? ""
                    #expect(message.contains("Cancel"), "\(message)")
                    #expect(!message.contains(SimulatorFixture.apnsToken), "\(message)")
                }
            }
        }
    }

    @Test("every FCM error code, as the simulator sends it, gets its class")
    func everyFCMErrorCode() async throws {
        try await SimulatorFixture.with { fixture in
            for (index, row) in Classification.fcmErrorCodes.enumerated() {
                let token = "fcm-token-row-\(index)-0123456789abcdefghijklmnopqrstuvwxyz"
                fixture.simulator.script(
                    token: token,
                    .init(status: row.status, reason: row.code, retryAfterSeconds: 2)
                )
                let outcome = await fixture.fcm.send(try SimulatorFixture.message(.fcm, token: token))
                #expect(outcome.class == row.class, "\(row.code)")
                #expect(outcome.reason?.code == "fcm.\(row.code)")
                if row.code == "QUOTA_EXCEEDED" {
                    // FCM asks for at least a minute after a 429, whatever Retry-After says.
                    #expect(outcome == .retry(outcome.reason!, after: .seconds(60)))
                } else if row.class == .retry {
                    #expect(outcome == .retry(outcome.reason!, after: .seconds(2)))
                }
            }
            // Without an FcmError detail, the status decides.
            for (status, expected) in [
                (401, DeliveryOutcome.Class.configuration), (403, .configuration), (404, .configuration), (500, .retry),
                (400, .permanent),
            ] {
                let token = "fcm-token-status-\(status)-0123456789abcdefghijklmnopqrstuvwxyz"
                fixture.simulator.script(
                    token: token,
                    .init(status: status, reason: ProviderSimulatorStatus.rpc(status))
                )
                let outcome = await fixture.fcm.send(try SimulatorFixture.message(.fcm, token: token))
                #expect(outcome.class == expected, "\(status)")
            }
        }
    }

    @Test("the FCM answers a request provokes, and a delivery under the notification id")
    func provokedFCMAnswers() async throws {
        try await SimulatorFixture.with { fixture in
            let malformed = await fixture.fcm.send(try SimulatorFixture.message(.fcm, token: "short"))
            #expect(malformed == .permanent(.init("fcm.INVALID_ARGUMENT", "FCM answered 400 INVALID_ARGUMENT")))
            let message = try SimulatorFixture.message(.fcm, id: "n-fcm-1")
            #expect(await fixture.fcm.send(message) == .delivered())
            #expect(fixture.simulator.acceptedCount(id: "n-fcm-1") == 1)
            fixture.simulator.unregister(token: SimulatorFixture.fcmToken, at: fixture.senderClock.now())
            #expect(
                await fixture.fcm.send(message)
                    == .invalidToken(.init("fcm.UNREGISTERED", "FCM answered 404 UNREGISTERED"))
            )
        }
        try await SimulatorFixture.with(faults: try FaultProfile(parsing: "429=1,retry-after=5")) { fixture in
            let outcome = await fixture.fcm.send(try SimulatorFixture.message(.fcm))
            #expect(
                outcome == .retry(.init("fcm.QUOTA_EXCEEDED", "FCM answered 429 QUOTA_EXCEEDED"), after: .seconds(60))
            )
        }
        try await SimulatorFixture.with(faults: try FaultProfile(parsing: "503=1,retry-after=90")) { fixture in
            let outcome = await fixture.fcm.send(try SimulatorFixture.message(.fcm))
            #expect(outcome == .retry(.init("fcm.UNAVAILABLE", "FCM answered 503 UNAVAILABLE"), after: .seconds(90)))
        }
    }

    @Test("every Expo error, in a receipt or a ticket, gets its class; 250 messages go in 3 requests")
    func expoAnswers() async throws {
        try await SimulatorFixture.with { fixture in
            var tickets: [(row: (code: String, class: DeliveryOutcome.Class), ticket: String)] = []
            for (index, row) in Classification.expoErrors.enumerated() {
                let token = "ExponentPushToken[row-\(index)]"
                fixture.simulator.script(token: token, .init(status: 200, reason: row.code))
                let outcomes = await fixture.expo.send([try SimulatorFixture.message(.expo, token: token)])
                guard case .delivered(let receipt?)? = outcomes.first else {
                    Issue.record("\(row.code): no ticket: \(outcomes)")
                    continue
                }
                tickets.append((row, receipt))
            }
            let receipts = try await fixture.expo.receipts(tickets.map(\.ticket)).get()
            for (row, ticket) in tickets {
                #expect(receipts[ticket]?.class == row.class, "\(row.code)")
                #expect(receipts[ticket]?.reason?.code == "expo.\(row.code)")
            }

            // The payload builder refuses such a token, so the request is edited after building.
            var broken = try SimulatorFixture.message(.expo)
            broken.request.body = Array(
                String(decoding: broken.request.body, as: UTF8.self)
                    .replacingOccurrences(of: SimulatorFixture.expoToken, with: "ExponentPushToken-broken").utf8
            )
            let notAToken = await fixture.expo.send([broken])
            #expect(notAToken.first?.reason?.code == "expo.DeviceNotRegistered")

            let messages = try (0..<250).map { try SimulatorFixture.message(.expo, id: "n-expo-\($0)") }
            let outcomes = await fixture.expo.send(messages)
            #expect(outcomes.count == 250 && outcomes.allSatisfy { $0.class == .delivered })
            #expect((0..<250).allSatisfy { fixture.simulator.acceptedCount(id: "n-expo-\($0)") == 1 })
            #expect(fixture.simulator.statistics.answers["expo 200"] == Classification.expoErrors.count + 1 + 3)
            let ids = outcomes.compactMap { if case .delivered(let receipt) = $0 { receipt } else { nil } }
            let fetched = try await fixture.expo.receipts(ids).get()
            #expect(fetched.count == 250 && fetched.values.allSatisfy { $0 == .delivered() })
        }
        try await SimulatorFixture.with(faults: try FaultProfile(parsing: "429=1,retry-after=3")) { fixture in
            let outcomes = await fixture.expo.send([try SimulatorFixture.message(.expo)])
            #expect(
                outcomes == [
                    .retry(.init("expo.TOO_MANY_REQUESTS", "Expo answered 429 TOO_MANY_REQUESTS"), after: .seconds(3))
                ]
            )
        }
    }
}

extension ProviderAnswerTests {
    @Test(
        "Expo tokens of several projects: requests go by app, and one Expo refuses for mixing projects is split by them"
    )
    func expoProjects() async throws {
        try await SimulatorFixture.with { fixture in
            func message(_ index: Int, app: String) throws -> OutboundMessage {
                var message = try SimulatorFixture.message(
                    .expo,
                    token: "ExponentPushToken[project-\(index)]",
                    id: "n-project-\(index)"
                )
                message.app = app
                return message
            }
            // Two apps, one Expo project each, interleaved; and an app whose tokens came from two
            // projects (development builds by two people), the third of its tokens in neither.
            fixture.simulator.registerExpoProject(
                "@team/other",
                tokens: (0..<10).map { "ExponentPushToken[project-\($0)]" }
            )
            fixture.simulator.registerExpoProject("@dev/alice", tokens: ["ExponentPushToken[project-10]"])
            fixture.simulator.registerExpoProject("@dev/bob", tokens: ["ExponentPushToken[project-11]"])
            let messages =
                try (0..<10).map { try message($0, app: "no.getdrop.other") }.enumerated().flatMap { index, other in
                    [other, try message(20 + index, app: SimulatorFixture.bundleID)]
                } + (10..<13).map { try message($0, app: "no.getdrop.dev") }
            let outcomes = await fixture.expo.send(messages)
            #expect(outcomes.count == messages.count)
            #expect(outcomes.allSatisfy { $0.class == .delivered }, "\(outcomes.filter { $0.class != .delivered })")
            for message in messages { #expect(fixture.simulator.acceptedCount(id: message.notificationID) == 1) }
            // Three requests by app, one refused and sent again as three.
            #expect(fixture.simulator.statistics.answers["expo 200"] == 5)
            #expect(fixture.simulator.statistics.answers["expo 400"] == 1)
        }
    }
}

extension ProviderAnswerTests {
    @Test("an Expo ticket id no store could keep as a key is not waited on; the message is still delivered")
    func expoTicketIDs() {
        func ticket(_ id: String) -> JSONValue {
            var writer = JSONStreamWriter()
            writer.beginObject()
            writer.member("status", "ok")
            writer.member("id", id)
            writer.endObject()
            return try! JSONParser().parse(writer.bytes)
        }
        #expect(ExpoClient.outcome(of: ticket("0b3c-ticket")) == .delivered(receipt: "0b3c-ticket"))
        #expect(ExpoClient.outcome(of: ticket(String(repeating: "t", count: 257))) == .delivered(receipt: nil))
        #expect(ExpoClient.outcome(of: ticket("a\u{0}b")) == .delivered(receipt: nil))
    }
}

extension ProviderAnswerTests {
    @Test("an answer's name is kept to 64 bytes of printable ASCII in its code, whoever sent it")
    func answerNames() {
        let long = String(repeating: "Reason", count: 1000)
        let apns = Classification.apns(status: 400, reason: long, timestamp: nil, retryAfter: nil)
        #expect(apns.reason?.code == "apns." + String(long.prefix(64)))
        #expect(apns.class == .permanent)
        let fcm = Classification.fcm(status: 503, errorCode: "bad \"code\"\n\u{0}é", rpcStatus: nil, retryAfter: nil)
        #expect(fcm.reason?.code == "fcm.bad_\"code\"____", "the space, newline, U+0000 and both bytes of é as _")
        #expect(fcm.class == .retry)
        #expect(Classification.expo(error: "", message: nil).reason?.code == "expo.empty")
        // The providers' own names are kept as they are.
        #expect(
            Classification.apns(status: 410, reason: "Unregistered", timestamp: nil, retryAfter: nil).class
                == .invalidToken
        )
        #expect(
            Classification.expo(error: "DeviceNotRegistered", message: nil).reason?.code == "expo.DeviceNotRegistered"
        )
    }

    @Test(
        "the sender's counters name at most 200 reasons and codes; a provider answering a new one each call adds to (other)"
    )
    func boundedReasonLabels() {
        var total = SenderStatistics.Counters()
        for call in 0..<300 {
            var batch = SenderStatistics.Counters()
            batch.answersByReason = ["fcm.STATUS_\(call)": 1]
            batch.deadLettersByCode = ["fcm.STATUS_\(call)": 1]
            batch.configurationErrors = ["fcm.STATUS_\(call)": 1]
            total.add(batch)
        }
        for counts in [total.answersByReason, total.deadLettersByCode, total.configurationErrors] {
            #expect(counts.count == 200)
            #expect(counts[MetricLabels.other] == 101, "199 named, (other) the 200th")
            #expect(counts.values.reduce(0, +) == 300)
        }
    }
}

/// google.rpc status names, for scripting answers without an FcmError detail.
enum ProviderSimulatorStatus {
    static func rpc(_ status: Int) -> String {
        switch status {
        case 400: "INVALID_ARGUMENT"
        case 401: "UNAUTHENTICATED"
        case 403: "PERMISSION_DENIED"
        case 404: "NOT_FOUND"
        default: "INTERNAL"
        }
    }
}

@Suite("docs/providers.md")
struct ProviderDocumentationTests {
    @Test("every classified answer has its row, with its class")
    func everyRowDocumented() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/providers.md").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let names: [DeliveryOutcome.Class: String] = [
            .delivered: "delivered", .retry: "retry", .invalidToken: "invalidate token",
            .configuration: "configuration error", .permanent: "permanent",
        ]
        for row in Classification.apnsReasons {
            #expect(text.contains("| `\(row.reason)` | \(row.status) | \(names[row.class]!) |"), "\(row.reason)")
        }
        for row in Classification.fcmErrorCodes {
            #expect(text.contains("| `\(row.code)` | \(row.status) | \(names[row.class]!) |"), "\(row.code)")
        }
        for row in Classification.expoErrors {
            #expect(text.contains("| `\(row.code)` | \(names[row.class]!) |"), "\(row.code)")
        }
    }
}
