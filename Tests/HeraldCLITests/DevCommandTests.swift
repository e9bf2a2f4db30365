import Foundation
import Testing

/// `herald dev`, what `make run` runs: the sample log through the whole pipeline in one process.
@Suite("herald dev")
struct DevCommandTests {
    @Test("the sample log runs to completion and its summary has the sample's expected counts")
    func sampleRun() async throws {
        let herald = try heraldExecutable().path
        let result = try await run(
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
        // 16 order without orderId → dead-lettered; 17 messages read by u-1024 → 2 badge-only pushes.
        #expect(rows["events published"] == "17")
        #expect(rows["directory changes"] == "13")
        #expect(
            rows["decisions"]
                == "15  (deferred.quiet_hours 1, duplicate 1, sent 11, suppressed.preference 1, throttled.dropped 1)"
        )
        #expect(rows["provider calls built"] == "18  (apns 8, expo 3, fcm 7)")
        #expect(rows["delivered"] == "15")
        #expect(rows["retried"] == "1")
        #expect(rows["skipped as duplicates"] == "2")
        #expect(rows["tokens invalidated"] == "1")
        #expect(rows["events dead-lettered"] == "3  (event.not_json 1, event.unknown_type 1, render.missing_field 1)")
        #expect(rows["calls dead-lettered"] == "0")
        // Shown as a phone displays them: the Norwegian iPhone's order, with the deep link.
        #expect(result.output.contains("▸ apns · iphone-15 (ios, nb-NO) · no.getdrop.app\n    Bestilling bekreftet"))
        #expect(result.output.contains("↳ https://getdrop.no/orders/ord-7f3a"))
        // The offer's picture, shown by each of u-1024's phones.
        #expect(
            result.output.components(separatedBy: "    image https://getdrop.no/images/offers/black-friday.jpg\n").count
                - 1 == 2,
            "\(result.output)"
        )
        // The chat service's unread count is the badge: the second message to u-2048 says 2.
        #expect(
            result.output.contains("Zadzwoń, jak będziesz mógł\n    ↳ https://getdrop.no/chats/chat-71\n    badge 2"),
            "\(result.output)"
        )
        // The read messages clear the badge on both of u-1024's phones, with nothing else shown.
        for phone in ["apns · iphone-15 (ios, nb-NO)", "fcm · pixel-8 (android, en-GB)"] {
            #expect(
                result.output.contains(
                    "▸ \(phone) · no.getdrop.app\n    (badge only: no text, no sound)\n    badge 0\n"
                ),
                "\(result.output)"
            )
        }
        #expect(result.output.components(separatedBy: "▸ ").count - 1 == 15, "each delivered notification shown once")
    }

    @Test(
        "the README's tour steps 1 and 5, as written, against `herald dev --follow`: kcat's event is shown, dead letters listed and re-driven",
        .timeLimit(.minutes(3))
    )
    func tourAgainstFollow() async throws {
        let steps = try TourTests.tourLines(steps: 1...1) + TourTests.tourLines(steps: 5...5)
        #expect(steps.count == 3, "one kcat command, dlq list, dlq redrive: \(steps)")
        let herald = try heraldExecutable().path
        let dev = Process()
        dev.executableURL = URL(fileURLWithPath: herald)
        dev.arguments = ["dev", "--follow"]
        // The README's commands run from the repository's root, as a newcomer does.
        dev.currentDirectoryURL = URL(fileURLWithPath: repositoryRoot)
        let output = Pipe()
        dev.standardOutput = output
        dev.standardError = FileHandle.nullDevice
        dev.standardInput = FileHandle.nullDevice
        let shown = CollectedOutput(output.fileHandleForReading)
        try dev.run()
        defer { if dev.isRunning { dev.interrupt() } }

        let ready = await shown.wait(for: "Ctrl-C stops.", timeout: 120)
        #expect(ready, "herald dev --follow did not settle the sample: \(shown.text)")
        let bootstrap = try #require(
            shown.text.firstMatch(of: /embedded broker at (127\.0\.0\.1:\d+)/).map { String($0.1) },
            "the bootstrap servers are printed: \(shown.text)"
        )
        var results: [String] = []
        for line in steps {
            let command = line.replacingOccurrences(of: ".build/debug/herald", with: herald)
                .replacingOccurrences(of: "127.0.0.1:PORT", with: bootstrap)
            let result: (status: Int32, output: String, error: String) = try await run(
                "/bin/bash",
                ["-c", "cd '\(repositoryRoot)' && \(command)"]
            )
            #expect(result.status == 0, "\(line) exited \(result.status): \(result.error)")
            results.append(result.output)
            if line.contains("kcat -P") {
                // The phone display: u-2048's Polish Expo phone, the amount in Polish money format.
                let display =
                    "▸ expo · expo-phone (android, pl) · no.getdrop.app\n    Otrzymano płatność\n    Ana przesyła Ci 42,50"
                #expect(await shown.wait(for: display, timeout: 30), "kcat's event was not shown: \(shown.text)")
            }
        }
        #expect(results[1].contains("3 dead letters: event.not_json 1, event.unknown_type 1, render.missing_field 1"))
        #expect(results[2].contains("re-drove 1 of 1 dead letters: 1 to orders.events"))
        // The re-driven event is still broken, so the worker dead-letters it again: it went round, not lost.
        #expect(await shown.wait(for: "dead-lettered 4", timeout: 30), "\(shown.text)")

        dev.interrupt()  // SIGINT, as Ctrl-C
        dev.waitUntilExit()
        #expect(dev.terminationReason == .exit && dev.terminationStatus == 0)
    }
}

/// A process's standard output, collected on a thread while the test goes on.
final class CollectedOutput: @unchecked Sendable {
    // @unchecked: the reader thread appends and the test reads, both under the lock.
    private let lock = NSLock()
    private var data = Data()

    init(_ handle: FileHandle) {
        Thread {
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return }
                self.lock.withLock { self.data.append(chunk) }
            }
        }.start()
    }

    var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }

    /// Whether `needle` appears in the output within `timeout` seconds. Sleeps as a task, not as a
    /// thread, so that the cooperative pool's threads stay free meanwhile.
    func wait(for needle: String, timeout: Double) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if text.contains(needle) { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return text.contains(needle)
    }
}
