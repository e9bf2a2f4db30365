import Foundation
import Testing

/// `herald dev`, what `make run` runs: the sample log through the whole pipeline in one process.
@Suite("herald dev")
struct DevCommandTests {
    @Test("the sample log runs to completion and its summary has the sample's expected counts")
    func sampleRun() throws {
        let herald = try heraldExecutable().path
        let result = try run(
            herald,
            [
                "dev", "--catalog", "\(repositoryRoot)/catalog", "--directory",
                "\(repositoryRoot)/samples/dev/directory.jsonl", "--events",
                "\(repositoryRoot)/samples/dev/events.jsonl",
            ]
        )
        #expect(result.status == 0, "\(result.output)\n\(result.error)")
        var rows: [String: String] = [:]
        for line in result.output.split(separator: "\n") {
            // "  delivered                 13  (details)": the name, then the count and any details.
            guard let match = line.firstMatch(of: /^  ([a-z][a-z -]+?)\s{2,}(\d+)(.*)$/) else { continue }
            rows[String(match.1)] = String(match.2) + String(match.3)
        }
        // The sample (samples/dev/events.jsonl), event by event:
        // 1 order.confirmed u-1024 → 2 calls (iPhone nb-NO, Pixel en-GB); 2 payment.received u-2048 → 1 (Expo);
        // 3 message u-1024 → 2; 4 order.shipped u-3072 → deferred (quiet hours 08–16 Berlin, it is 13:01);
        // 5 security.login u-3072 → 1 (security ignores quiet hours); 6 payment.failed u-5120 → 1, answered 503
        // once, retried, delivered; 7 order.confirmed u-4096 → 1, the token is unregistered → invalidated;
        // 8 promo u-1024 (opted in) → 2, u-2048 (not opted in) → suppressed; 9, 10 messages u-2048 → 2;
        // 11 promo u-1024 → 2 (second of two a week); 12 promo u-1024 → throttled; 13 a redelivery of 1 →
        // duplicate, the same 2 calls with the same ids, skipped by the sender; 14 not JSON, 15 unknown type,
        // 16 order without orderId → dead-lettered.
        #expect(rows["events published"] == "16")
        #expect(rows["directory changes"] == "13")
        #expect(
            rows["decisions"]
                == "14  (deferred.quiet_hours 1, duplicate 1, sent 10, suppressed.preference 1, throttled.dropped 1)"
        )
        #expect(rows["provider calls built"] == "16  (apns 7, expo 3, fcm 6)")
        #expect(rows["delivered"] == "13")
        #expect(rows["retried"] == "1")
        #expect(rows["skipped as duplicates"] == "2")
        #expect(rows["tokens invalidated"] == "1")
        #expect(rows["events dead-lettered"] == "3  (event.not_json 1, event.unknown_type 1, render.missing_field 1)")
        #expect(rows["calls dead-lettered"] == "0")
        // Shown as a phone displays them: the Norwegian iPhone's order, with the deep link.
        #expect(result.output.contains("▸ apns · iphone-15 (ios, nb-NO) · no.getdrop.app\n    Bestilling bekreftet"))
        #expect(result.output.contains("↳ https://getdrop.no/orders/ord-7f3a"))
        #expect(result.output.components(separatedBy: "▸ ").count - 1 == 13, "each delivered notification shown once")
    }
}
