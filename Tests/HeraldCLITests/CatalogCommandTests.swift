import Foundation
import Testing

let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

@Suite("herald catalog check and herald render")
struct CatalogCommandTests {
    @Test("the example catalog passes; a broken one exits 1 naming the file and key")
    func check() async throws {
        let herald = try heraldExecutable().path
        let ok = try await run(herald, ["catalog", "check", "\(repositoryRoot)/catalog"])
        #expect(ok.status == 0)
        #expect(ok.output.contains("catalog ok: 9 kind(s)"))

        let broken = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cli-\(UUID().uuidString)")
        try FileManager.default.copyItem(atPath: "\(repositoryRoot)/catalog", toPath: broken.path)
        defer { try? FileManager.default.removeItem(at: broken) }
        let bundle = broken.appendingPathComponent("messages/en.json")
        let text = try String(contentsOf: bundle, encoding: .utf8)
            .replacingOccurrences(of: "{sender} sent you", with: "{sendr} sent you")
        try text.write(to: bundle, atomically: true, encoding: .utf8)
        let failed = try await run(herald, ["catalog", "check", broken.path])
        #expect(failed.status == 1)
        #expect(failed.output.contains("error: messages/en.json: payment.received.body: uses 'sendr'"))
        #expect(failed.output.contains("catalog check failed: 1 error(s)"))
    }

    @Test("render prints what a phone shows, as text or JSON; a bad event exits 1 with its error code")
    func render() async throws {
        let herald = try heraldExecutable().path
        let text = try await run(
            herald,
            [
                "render", "--catalog", "\(repositoryRoot)/catalog", "--event",
                "\(repositoryRoot)/catalog/events/payment.received.json", "--locale", "de", "--time-zone",
                "Europe/Berlin",
            ]
        )
        #expect(text.status == 0)
        #expect(text.output.contains("title:     Zahlung erhalten"))
        #expect(text.output.contains("body:      Ahmad Karimi hat Ihnen 5.000,00\u{A0}NOK gesendet."))
        #expect(text.output.contains("deep link: https://getdrop.no/wallet"))

        let json = try await run(
            herald,
            [
                "render", "--catalog", "\(repositoryRoot)/catalog", "--event",
                "\(repositoryRoot)/catalog/events/order.shipped.json", "--json",
            ]
        )
        let object = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        #expect(object?["title"] as? String == "Bestillingen din er på vei")
        #expect((object?["deepLink"] as? [String: Any])?["scheme"] as? String == "drop://orders/ord-7f3a/tracking")

        let badEvent = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).json")
        try #"{"specversion":"1.0","id":"1","source":"/s"}"#.write(to: badEvent, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: badEvent) }
        let failed = try await run(
            herald,
            ["render", "--catalog", "\(repositoryRoot)/catalog", "--event", badEvent.path]
        )
        #expect(failed.status == 1)
        #expect(failed.error.contains("event.missing_attribute"))
    }
}

@Suite("herald payload")
struct PayloadCommandTests {
    @Test("notifykit: one output line per input line, errors as {\"error\": ...}, the size warning on stderr")
    func notifyKit() async throws {
        let big = String(repeating: "x", count: 3600)
        let input = """
            {"token":"t","notification":{"title":"Hi","body":"There"},"options":{"ttl":60}}
            {"notification":{}}
            {"token":"t","notification":{"title":"Big","body":"\(big)"}}
            """
        let result = try await run(
            try heraldExecutable().path,
            ["payload", "notifykit", "--now-ms", "1795262400000"],
            input: input
        )
        #expect(result.status == 0)
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[0].hasPrefix(#"{"token":"t","data":{"notifee_options":"#))
        #expect(lines[0].contains(#""apns-expiration":"1795262460""#))
        #expect(
            lines[1]
                == #"{"error":"[react-native-notify-kit/server] Routing: exactly one of 'token', 'topic', or 'condition' must be provided. Got: 0"}"#
        )
        #expect(result.error.contains("[react-native-notify-kit/server] Payload size "))
        #expect(result.error.contains("bytes approaches FCM 4KB limit. Consider reducing notifee_options."))
    }

    @Test("apns, fcm and expo show what one event sends to one device")
    func providers() async throws {
        let herald = try heraldExecutable().path
        let arguments = [
            "--catalog", "\(repositoryRoot)/catalog", "--event",
            "\(repositoryRoot)/catalog/events/order.confirmed.json",
        ]
        let apns = try await run(
            herald,
            ["payload", "apns"] + arguments + ["--device", "\(repositoryRoot)/catalog/devices/iphone.json"]
        )
        #expect(apns.status == 0)
        #expect(apns.output.contains("POST https://api.push.apple.com/3/device/740f4707"))
        #expect(apns.output.contains("apns-collapse-id: order-ord-7f3a"))
        #expect(
            apns.output.contains("\"body\":\"Bestillingen ord-7f3a på 1\u{A0}234,50\u{A0}kr (3 varer) er bekreftet.")
        )
        let fcm = try await run(
            herald,
            ["payload", "fcm"] + arguments + ["--device", "\(repositoryRoot)/catalog/devices/pixel.json"]
        )
        #expect(fcm.output.contains(#""title":"Order confirmed""#))
        let expo = try await run(
            herald,
            ["payload", "expo"] + arguments + ["--device", "\(repositoryRoot)/catalog/devices/expo.json"]
        )
        #expect(expo.output.contains(#""title":"Zamówienie potwierdzone""#))
        let wrongToken = try await run(
            herald,
            ["payload", "apns"] + arguments + ["--device", "\(repositoryRoot)/catalog/devices/expo.json"]
        )
        #expect(wrongToken.status == 1)
        #expect(wrongToken.error.contains("payload.invalid_token"))
    }
}
