import Foundation
import Testing

let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

@Suite("herald catalog check and herald render")
struct CatalogCommandTests {
    @Test("the example catalog passes; a broken one exits 1 naming the file and key")
    func check() throws {
        let herald = try heraldExecutable().path
        let ok = try run(herald, ["catalog", "check", "\(repositoryRoot)/catalog"])
        #expect(ok.status == 0)
        #expect(ok.output.contains("catalog ok: 7 kind(s)"))

        let broken = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cli-\(UUID().uuidString)")
        try FileManager.default.copyItem(atPath: "\(repositoryRoot)/catalog", toPath: broken.path)
        let bundle = broken.appendingPathComponent("messages/en.json")
        let text = try String(contentsOf: bundle, encoding: .utf8)
            .replacingOccurrences(of: "{sender} sent you", with: "{sendr} sent you")
        try text.write(to: bundle, atomically: true, encoding: .utf8)
        let failed = try run(herald, ["catalog", "check", broken.path])
        #expect(failed.status == 1)
        #expect(failed.output.contains("error: messages/en.json: payment.received.body: uses 'sendr'"))
        #expect(failed.output.contains("catalog check failed: 1 error(s)"))
    }

    @Test("render prints what a phone shows, as text or JSON; a bad event exits 1 with its error code")
    func render() throws {
        let herald = try heraldExecutable().path
        let text = try run(
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

        let json = try run(
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
        let failed = try run(herald, ["render", "--catalog", "\(repositoryRoot)/catalog", "--event", badEvent.path])
        #expect(failed.status == 1)
        #expect(failed.error.contains("event.missing_attribute"))
    }
}
