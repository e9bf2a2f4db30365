import Foundation
import HeraldCatalog
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldProviders
import HeraldWorker
import Testing

@testable import HeraldStore

@Suite("Outbound message schema")
struct OutboundMessageTests {
    static let body = Array(
        #"{"aps":{"alert":{"title":"Ordre bekreftet","body":"1 234,50 kr — \"ord-7\" 😀"}},"n":[1,2.50,null]}"#.utf8
    )

    static func message(body: [UInt8] = body) -> OutboundMessage {
        OutboundMessage(
            notificationID: "n-1",
            eventID: "e-1",
            kind: "order.confirmed",
            category: "transactional",
            recipient: "ana",
            provider: .apns,
            app: "no.getdrop.app",
            environment: .sandbox,
            token: String(repeating: "ab", count: 32),
            request: .init(
                path: "/3/device/" + String(repeating: "ab", count: 32),
                headers: [.init("apns-push-type", "alert"), .init("apns-priority", "10")],
                body: body
            ),
            createdAt: Timestamp(rfc3339: "2026-11-22T12:00:00Z")!,
            expiresAt: Timestamp(rfc3339: "2026-11-23T12:00:00Z")!,
            attempt: 3,
            traceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            locale: "nb-NO"
        )
    }

    @Test("a message reads back as written, its request body byte for byte, from an array or a Kafka value")
    func roundTrip() throws {
        let message = Self.message()
        let encoded = message.encoded()
        #expect(try OutboundMessage(decoding: encoded) == message)
        // A consumed value is a slice of a larger buffer.
        let value = KafkaBytes(Array("xx".utf8) + encoded + Array("yy".utf8)).dropFirst(2).dropLast(2)
        let decoded = try OutboundMessage(decoding: value)
        #expect(decoded.request.body == Self.body)
        #expect(decoded == message)
    }

    @Test("a request body written with whitespace is passed on as written, not rewritten")
    func bodyAsWritten() throws {
        let spaced = Array(#"{ "aps" : { "alert" : "hi" } }"#.utf8)
        let decoded = try OutboundMessage(decoding: Self.message(body: spaced).encoded())
        #expect(decoded.request.body == spaced)
    }

    @Test(
        "a message that cannot be read names what is wrong",
        arguments: [
            ("{\"schema\":1}", "'schema' must be a string"),
            ("[]", "not a JSON object"),
            ("not json", "not a JSON object"),
        ]
    )
    func unreadable(text: String, problem: String) {
        let failure = #expect(throws: OutboundMessageError.self) { try OutboundMessage(decoding: Array(text.utf8)) }
        #expect(failure?.message == problem)
    }

    @Test(
        "what the delivery ledger keeps must be storable: an id of printable ASCII up to 128 bytes, a recipient and token up to 1,024 bytes without U+0000"
    )
    func ledgerValues() throws {
        func decoding(_ change: (inout OutboundMessage) -> Void) throws -> OutboundMessage {
            var message = Self.message()
            change(&message)
            return try OutboundMessage(decoding: message.encoded())
        }
        let longestID = String(repeating: "f", count: 128)
        #expect(try decoding { $0.notificationID = longestID }.notificationID == longestID)
        let longest = String(repeating: "é", count: 512)
        #expect(
            try decoding {
                $0.recipient = longest
                $0.token = longest
            }.recipient == longest
        )
        let refusals: [(String, (inout OutboundMessage) -> Void)] = [
            ("'notificationId' must be 1 to 128 printable ASCII characters", { $0.notificationID = longestID + "f" }),
            ("'notificationId' must be 1 to 128 printable ASCII characters", { $0.notificationID = "n-\u{0}" }),
            ("'notificationId' must be 1 to 128 printable ASCII characters", { $0.notificationID = "n 1" }),
            ("'notificationId' must be 1 to 128 printable ASCII characters", { $0.notificationID = "" }),
            ("'recipient' must be 1 to 1024 bytes without U+0000", { $0.recipient = "ana\u{0}" }),
            ("'recipient' must be 1 to 1024 bytes without U+0000", { $0.recipient = longest + "x" }),
            ("'target.token' must be 1 to 1024 bytes without U+0000", { $0.token = "" }),
            ("'target.token' must be 1 to 1024 bytes without U+0000", { $0.token = "\u{0}" + longest }),
        ]
        for (problem, change) in refusals {
            let failure = #expect(throws: OutboundMessageError.self) { try decoding(change) }
            #expect(failure?.message == problem)
        }
    }

    @Test(
        "a request HTTP/2 could not carry, or that sets what the sender sets, is refused: header names, line breaks, the path, the method"
    )
    func requestOnTheWire() throws {
        func decoding(_ change: (inout OutboundMessage.Request) -> Void) throws -> OutboundMessage {
            var message = Self.message()
            change(&message.request)
            return try OutboundMessage(decoding: message.encoded())
        }
        let fine = try decoding {
            $0.headers.append(.init("content-type", "application/json; charset=UTF-8"))
            $0.headers.append(.init("x-custom_1.~", String(repeating: "v", count: 4096)))
        }
        #expect(fine.request.headers.count == 4)
        let names =
            "'request.headers' names must be lower-case HTTP field names other than "
            + "authorization, connection, host, keep-alive, proxy-connection, te, transfer-encoding, upgrade"
        let refusals: [(String, (inout OutboundMessage.Request) -> Void)] = [
            (names, { $0.headers.append(.init("authorization", "bearer someone-else")) }),
            (names, { $0.headers.append(.init("Apns-Priority", "5")) }),
            (names, { $0.headers.append(.init(":path", "/elsewhere")) }),
            (names, { $0.headers.append(.init("x y", "1")) }),
            (names, { $0.headers.append(.init("", "1")) }),
            (names, { $0.headers.append(.init("transfer-encoding", "chunked")) }),
            (
                "'request.headers.apns-topic' must be at most 4096 bytes without CR, LF or U+0000",
                { $0.headers.append(.init("apns-topic", "a\r\nauthorization: bearer x")) }
            ),
            (
                "'request.headers.x' must be at most 4096 bytes without CR, LF or U+0000",
                { $0.headers.append(.init("x", String(repeating: "v", count: 4097))) }
            ),
            ("'request.path' must be 1 to 4096 printable ASCII characters", { $0.path = "/3/device/ab cd" }),
            ("'request.path' must be 1 to 4096 printable ASCII characters", { $0.path = "" }),
            ("'request.path' must be 1 to 4096 printable ASCII characters", { $0.path = "/3/device/é" }),
            ("'request.method' must be POST", { $0.method = "GET" }),
        ]
        for (problem, change) in refusals {
            let failure = #expect(throws: OutboundMessageError.self) { try decoding(change) }
            #expect(failure?.message == problem)
        }
    }

    @Test("a broken or missing request body is rejected, not passed on")
    func brokenBody() throws {
        let encoded = String(decoding: Self.message().encoded(), as: UTF8.self)
        let broken = encoded.replacingOccurrences(of: #""n":[1,2.50,null]"#, with: #""n":[1,2.50,]"#)
        #expect(broken != encoded)
        let failure = #expect(throws: OutboundMessageError.self) { try OutboundMessage(decoding: Array(broken.utf8)) }
        #expect(failure?.message == "not a JSON object")
        let missing = encoded.replacingOccurrences(of: #""body":"#, with: #""bodx":"#)
        let noBody = #expect(throws: OutboundMessageError.self) { try OutboundMessage(decoding: Array(missing.utf8)) }
        #expect(noBody?.message == "'request' must be an object with a 'body'")
        // Two 'request' members: the first is the message's, and it has no body of its own.
        let twice = encoded.replacingOccurrences(
            of: #""request":{"#,
            with: #""request":{"method":"POST","path":"/elsewhere"},"request":{"#
        )
        #expect(twice != encoded)
        let mixed = #expect(throws: OutboundMessageError.self) { try OutboundMessage(decoding: Array(twice.utf8)) }
        #expect(mixed?.message == "'request' must be an object with a 'body'")
    }

    @Test("a name given twice counts once, as first written; unknown members are passed over but must be JSON")
    func repeatedAndUnknownMembers() throws {
        let encoded = String(decoding: Self.message().encoded(), as: UTF8.self)
        let repeated = encoded.replacingOccurrences(
            of: #""attempt":3"#,
            with: #""attempt":3,"attempt":"x","schema":"herald.outbound.v9","target":{},"extra":{"a":[1,{"b":null}]}"#
        )
        #expect(repeated != encoded)
        #expect(try OutboundMessage(decoding: Array(repeated.utf8)) == Self.message())
        let broken = encoded.replacingOccurrences(of: #""attempt":3"#, with: #""attempt":3,"extra":[1,,2]"#)
        let failure = #expect(throws: OutboundMessageError.self) { try OutboundMessage(decoding: Array(broken.utf8)) }
        #expect(failure?.message == "not a JSON object")
        // The sender counts a retry as attempt + 1, which trapped for the largest integer.
        for attempt in ["0", "-1", "1000001", "9223372036854775807", "1.5"] {
            let bad = encoded.replacingOccurrences(of: #""attempt":3"#, with: #""attempt":"# + attempt)
            let refused = #expect(throws: OutboundMessageError.self, "\(attempt)") {
                try OutboundMessage(decoding: Array(bad.utf8))
            }
            #expect(refused?.message == "'attempt' must be an integer from 1 to 1000000")
        }
        let wrongType = encoded.replacingOccurrences(of: #""kind":"order.confirmed""#, with: #""kind":["order"]"#)
        let wrong = #expect(throws: OutboundMessageError.self) { try OutboundMessage(decoding: Array(wrongType.utf8)) }
        #expect(wrong?.message == "'kind' must be a string")
        let headerTwice = encoded.replacingOccurrences(
            of: #""apns-priority":"10""#,
            with: #""apns-priority":"10","apns-priority":"5""#
        )
        let decoded = try OutboundMessage(decoding: Array(headerTwice.utf8))
        #expect(decoded.request.headers.filter { $0.name == "apns-priority" }.map(\.value) == ["10", "5"])
    }

    @Test(
        "a message written in place is byte for byte the one built as a value, for every provider, a body over the limit and a bad token"
    )
    func writtenInPlace() throws {
        let renderer = Renderer(catalog: exampleCatalog)
        let kind = try #require(exampleCatalog.kind(named: "order.confirmed"))
        let eventPath = repositoryRoot.appendingPathComponent("catalog/events/order.confirmed.json").path
        let event = try EventDecoder().decode(value: Array(try Data(contentsOf: URL(fileURLWithPath: eventPath))))
        var rendered = try renderer.render(event, as: kind, locale: "nb", timeZone: "Europe/Oslo")
        func device(_ provider: PushProvider, _ token: String) -> RegisteredDevice {
            RegisteredDevice(
                deviceID: "d",
                platform: provider == .apns ? "ios" : "android",
                provider: provider,
                token: token,
                appID: "no.getdrop.app",
                sandbox: provider == .apns,
                locale: nil,
                registeredAt: Timestamp(epochMilliseconds: 0)
            )
        }
        let devices = [
            device(.apns, String(repeating: "ab", count: 32)), device(.fcm, "fcm-token:APA91b"),
            device(.expo, "ExponentPushToken[xyz]"),
        ]
        let createdAt = try #require(Timestamp(rfc3339: "2026-11-22T12:00:00Z"))
        let trace = (
            parent: Optional("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"), state: Optional("a=1")
        )
        func envelope(_ push: PushMessage, _ device: RegisteredDevice) throws(PayloadError) -> OutboundMessage {
            try OutboundBuilder.envelope(
                push,
                of: rendered,
                eventID: event.id,
                createdAt: createdAt,
                expiresAt: nil,
                recipient: "ana",
                device: device,
                trace: trace
            )
        }
        /// The worker's way: the message written straight from its parts.
        func writeFromParts(
            _ push: PushMessage,
            _ device: RegisteredDevice,
            into writer: inout JSONStreamWriter
        ) throws(PayloadError) -> Int {
            try OutboundBuilder.write(
                push,
                of: rendered,
                eventID: event.id,
                createdAt: createdAt,
                expiresAt: nil,
                recipient: "ana",
                device: device,
                trace: trace,
                into: &writer
            )
        }
        // Once as rendered, once with a body too long for any provider (shortened to fit).
        for long in [false, true] {
            if long { rendered.body = String(repeating: "Lang tekst med æøå og 😀. ", count: 400) }
            for device in devices {
                let push = OutboundBuilder.pushMessage(
                    rendered,
                    eventID: event.id,
                    createdAt: createdAt,
                    recipient: "ana",
                    token: device.token
                )
                let unwritten = try envelope(push, device)
                #expect(unwritten.request.body.isEmpty)
                var built = unwritten
                built.request.body = try OutboundBuilder.body(push, for: unwritten)
                // Written after something else, as the worker's reused buffer may be.
                var writer = JSONStreamWriter(capacity: 16)
                writer.beginObject()
                writer.member("before", "x")
                writer.truncate(to: 0)
                let size = try OutboundBuilder.write(unwritten, body: push, into: &writer)
                #expect(writer.bytes == built.encoded(), "\(device.provider) long: \(long)")
                #expect(size == built.request.body.count)
                #expect(size <= 4096 && (!long || size > 3000), "\(device.provider): \(size) bytes")
                #expect(try OutboundMessage(decoding: writer.bytes) == built)
                // The worker's way: the same bytes straight from the parts, without the message.
                writer.truncate(to: 0)
                let direct = try writeFromParts(push, device, into: &writer)
                #expect(writer.bytes == built.encoded(), "\(device.provider) long: \(long), from parts")
                #expect(direct == size)
            }
        }
        // Bad tokens: FCM's is found as its body is written, APNs' as its envelope is made.
        let push = OutboundBuilder.pushMessage(rendered, createdAt: createdAt)
        let fcm = try envelope(push, device(.fcm, "has space"))
        var writer = JSONStreamWriter()
        let badToken = #expect(throws: PayloadError.self) { try OutboundBuilder.write(fcm, body: push, into: &writer) }
        #expect(badToken?.code == .invalidToken)
        let badAPNsToken = #expect(throws: PayloadError.self) { try envelope(push, device(.apns, "not-hex")) }
        #expect(badAPNsToken?.code == .invalidToken)
        for bad in [device(.apns, "not-hex"), device(.fcm, "has space")] {
            let fromParts = #expect(throws: PayloadError.self) { try writeFromParts(push, bad, into: &writer) }
            #expect(fromParts?.code == .invalidToken, "\(bad.provider)")
        }
    }

    @Test("a silent kind is a background push on every provider: no text, content-available, the data")
    func silentKind() throws {
        let kind = try #require(exampleCatalog.kind(named: "account.synced"))
        let path = repositoryRoot.appendingPathComponent("catalog/events/account.synced.json").path
        let event = try EventDecoder().decode(value: Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        let rendered = try Renderer(catalog: exampleCatalog).render(event, as: kind, locale: "pl", timeZone: "UTC")
        #expect(rendered.title.isEmpty && rendered.body.isEmpty && rendered.subtitle == nil)
        let createdAt = try #require(event.time)
        for (provider, token) in [
            (PushProvider.apns, String(repeating: "ab", count: 32)), (.fcm, "fcm-token:APA91b"),
            (.expo, "ExponentPushToken[xyz]"),
        ] {
            let device = RegisteredDevice(
                deviceID: "d",
                platform: provider == .apns ? "ios" : "android",
                provider: provider,
                token: token,
                appID: "no.getdrop.app",
                sandbox: false,
                locale: "pl",
                registeredAt: Timestamp(epochMilliseconds: 0)
            )
            let push = OutboundBuilder.pushMessage(
                rendered,
                eventID: event.id,
                createdAt: createdAt,
                recipient: "u-1024",
                token: token
            )
            var writer = JSONStreamWriter()
            _ = try OutboundBuilder.write(
                push,
                of: rendered,
                eventID: event.id,
                createdAt: createdAt,
                expiresAt: OutboundBuilder.expiry(of: kind, createdAt: createdAt),
                recipient: "u-1024",
                device: device,
                into: &writer
            )
            let message = try OutboundMessage(decoding: writer.bytes)
            let body = try JSONParser().parse(message.request.body)
            let headers = Dictionary(uniqueKeysWithValues: message.request.headers.map { ($0.name, $0.value) })
            let shown = String(decoding: message.request.body, as: UTF8.self)
            switch provider {
            case .apns:
                #expect(headers["apns-push-type"] == "background" && headers["apns-priority"] == "5")
                #expect(body["aps"] == .object(JSONObject([("content-available", .number("1"))])), "\(shown)")
                #expect(body["accountId"] == .string("acc-7") && body["balance"] == .string("5230.75 NOK"))
            case .fcm:
                #expect(body["message"]?["notification"] == nil, "\(shown)")
                // A background refresh: normal priority unless the kind asks for more.
                #expect(body["message"]?["android"]?["priority"] == .string("NORMAL"))
                #expect(body["message"]?["data"]?["accountId"] == .string("acc-7"))
                #expect(body["message"]?["apns"]?["headers"]?["apns-push-type"] == .string("background"))
                #expect(
                    body["message"]?["apns"]?["payload"]?["aps"]
                        == .object(JSONObject([("content-available", .number("1"))]))
                )
            case .expo:
                #expect(body["title"] == nil && body["body"] == nil, "\(shown)")
                #expect(body["_contentAvailable"] == .bool(true))
                #expect(body["data"]?["accountId"] == .string("acc-7"))
            }
            #expect(!shown.contains("\"alert\""), "\(provider): \(shown)")
            // herald dev and replay diffs read it back as silent.
            #expect(DisplayedText(provider: provider.rawValue, payload: body).silent, "\(provider): \(shown)")
            #expect(message.expiresAt?.epochMilliseconds == createdAt.epochMilliseconds + 3_600_000)
        }
    }
}
