import Foundation
import Testing

@Suite("herald replay and herald replay diff")
struct ReplayCommandTests {
    @Test("the README's replay tour: replay the sample log with a report, then diff two replays")
    func tour() async throws {
        let herald = try heraldExecutable().path
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let out = scratch.appendingPathComponent("before.jsonl").path
        let replayed = try await run(
            herald,
            [
                "replay", "\(repositoryRoot)/samples/replay/events.jsonl", "--catalog", "\(repositoryRoot)/catalog",
                "--directory", "\(repositoryRoot)/samples/replay/directory.jsonl", "--out", out, "--report",
                scratch.appendingPathComponent("report.html").path, "--log-level", "error",
            ]
        )
        #expect(replayed.status == 0)
        #expect(replayed.output.contains("replayed 2479 record(s)"))
        #expect(replayed.output.contains("dead letters: 4"))
        let html = try String(contentsOfFile: scratch.appendingPathComponent("report.html").path, encoding: .utf8)
        #expect(html.contains("<h2>Decisions by reason</h2>") && html.contains("throttled.digested"))

        let same = try await run(herald, ["replay", "diff", out, out])
        #expect(same.status == 0)
        #expect(same.output.contains("No differences."))

        // One notification fewer: exit 1, and the diff names it.
        let lines = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n")
        let after = scratch.appendingPathComponent("after.jsonl").path
        try (lines.dropFirst().joined(separator: "\n") + "\n").write(toFile: after, atomically: true, encoding: .utf8)
        let changed = try await run(herald, ["replay", "diff", out, after])
        #expect(changed.status == 1)
        #expect(changed.output.contains("added 0, removed 1, changed 0"))

        let wrong = try await run(
            herald,
            ["replay", "\(repositoryRoot)/samples/replay/events.jsonl", "--out", out, "--report", "r.txt"]
        )
        #expect(wrong.status != 0)
        #expect(wrong.error.contains("--report: r.txt must end in .md, .json or .html"))
    }
}

extension ReplayCommandTests {
    @Test(
        "the report and the decisions file name users by the hash the logs give them: keyed by HERALD_LOG_USER_HASH_KEY, as herald run keys it; --decisions-recipient clear gives the ids"
    )
    func reportHashesUsers() async throws {
        let herald = try heraldExecutable().path
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let key = "0123456789abcdef-log-key"
        /// The report's most-throttled users and the decision records' recipients.
        func replayedUsers(
            _ environment: [String: String],
            _ arguments: [String] = []
        ) async throws -> (throttled: [String], decided: Set<String>) {
            let report = scratch.appendingPathComponent("report-\(environment.count).json").path
            let decisions = scratch.appendingPathComponent("decisions.jsonl").path
            let replayed = try await run(
                herald,
                [
                    "replay", "\(repositoryRoot)/samples/replay/events.jsonl", "--catalog", "\(repositoryRoot)/catalog",
                    "--directory", "\(repositoryRoot)/samples/replay/directory.jsonl", "--out",
                    scratch.appendingPathComponent("out.jsonl").path, "--report", report, "--decisions", decisions,
                    "--log-level", "error",
                ] + arguments,
                environment: environment
            )
            #expect(replayed.status == 0, "\(replayed.error)")
            let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report)))
            let entries = (json as? [String: Any])?["mostThrottled"] as? [[String: Any]] ?? []
            let decided = try String(contentsOfFile: decisions, encoding: .utf8).split(separator: "\n").compactMap {
                line in
                let record = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                return record?["recipient"] as? String
            }
            return (entries.compactMap { $0["user"] as? String }, Set(decided))
        }
        let unkeyed = try await replayedUsers([:])
        let keyed = try await replayedUsers(["HERALD_LOG_USER_HASH_KEY": key])
        #expect(!unkeyed.throttled.isEmpty && unkeyed.throttled.count == keyed.throttled.count)
        #expect(Set(unkeyed.throttled).isDisjoint(with: keyed.throttled), "\(unkeyed) against \(keyed)")
        #expect(!unkeyed.decided.isEmpty && unkeyed.decided.isDisjoint(with: keyed.decided))
        // The same hashes `herald user-hash` gives for the sample's users under the key.
        let sampleUsers = Set(
            try String(contentsOfFile: "\(repositoryRoot)/samples/replay/directory.jsonl", encoding: .utf8)
                .split(separator: "\n").compactMap { line -> String? in
                    guard let range = line.range(of: #""userId":""#) else { return nil }
                    return String(line[range.upperBound...].prefix { $0 != "\"" })
                }
        )
        let hashed = try await run(
            herald,
            ["user-hash"] + Array(sampleUsers),
            environment: ["HERALD_LOG_USER_HASH_KEY": key]
        )
        let known = Set(
            hashed.output.split(separator: "\n").compactMap { $0.split(separator: "\t").first.map(String.init) }
        )
        #expect(Set(keyed.throttled).isSubset(of: known), "\(keyed.throttled) not among \(known.count) hashes")
        #expect(keyed.decided.isSubset(of: known), "\(keyed.decided.subtracting(known)) not among the hashes")
        // Asked for, the ids themselves.
        let clear = try await replayedUsers(["HERALD_LOG_USER_HASH_KEY": key], ["--decisions-recipient", "clear"])
        #expect(clear.decided.isSubset(of: sampleUsers) && clear.decided.count == keyed.decided.count)
    }
}

@Suite("The README's tour")
struct TourTests {
    /// The shell lines of the tour's `steps`, as the README has them.
    static func tourLines(steps: ClosedRange<Int>) throws -> [String] {
        let readme = try String(contentsOfFile: "\(repositoryRoot)/README.md", encoding: .utf8)
        guard let tour = readme.range(of: "## A five-minute tour"),
            let block = readme.range(of: "```sh\n", range: tour.upperBound..<readme.endIndex),
            let end = readme.range(of: "\n```", range: block.upperBound..<readme.endIndex)
        else { throw TourError("the README has no tour") }
        var lines: [String] = []
        var step = 0
        var continued = false
        for line in readme[block.upperBound..<end.lowerBound].split(separator: "\n") {
            if let number = line.firstMatch(of: /^# (\d+)\./)?.1 { step = Int(number) ?? 0 }
            guard steps.contains(step), !line.hasPrefix("#"), !line.trimmingCharacters(in: .whitespaces).isEmpty
            else { continue }
            // A line ending in a backslash goes on in the next one: the shell runs both as one command.
            if continued, let last = lines.popLast() {
                lines.append(last + "\n" + line)
            } else {
                lines.append(String(line))
            }
            continued = line.hasSuffix("\\")
        }
        return lines
    }

    @Test("render, catalog check, replay and diff run as the README writes them")
    func stepsTwoToFour() async throws {
        let herald = try heraldExecutable().path
        let lines = try Self.tourLines(steps: 2...4)
        #expect(lines.count == 6)
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-tour-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        try FileManager.default.copyItem(
            atPath: "\(repositoryRoot)/catalog",
            toPath: scratch.appendingPathComponent("catalog").path
        )
        try FileManager.default.createSymbolicLink(
            atPath: scratch.appendingPathComponent("samples").path,
            withDestinationPath: "\(repositoryRoot)/samples"
        )
        var outputs: [String] = []
        for line in lines {
            let command = line.replacingOccurrences(of: ".build/debug/herald", with: herald)
            let result = try await run("/bin/bash", ["-c", "cd '\(scratch.path)' && \(command)"])
            outputs.append(result.output)
            // diff exits 1 when the replays differ, as they do after the edit.
            let expected: Int32 = line.contains("replay diff") ? 1 : 0
            #expect(result.status == expected, "\(line) exited \(result.status): \(result.error)")
        }
        #expect(outputs[0].contains("Zahlung erhalten"))
        #expect(outputs[1].contains("catalog ok"))
        #expect(outputs[2].contains("replayed 2479 record(s)"))
        let diff = try #require(outputs.last)
        #expect(diff.contains("after:  Bestellung angenommen"))
        #expect(diff.contains("removed 0"))
    }
}

extension ReplayCommandTests {
    @Test("a log of 1,000 poison lines: every one dead-lettered, 20 logged, and the next logged line counts the rest")
    func poisonFloodLogsSampled() async throws {
        let herald = try heraldExecutable().path
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let log = scratch.appendingPathComponent("poison.jsonl").path
        try (0..<1000).map { "not json \($0)\n" }.joined().write(toFile: log, atomically: true, encoding: .utf8)
        let replayed = try await run(
            herald,
            [
                "replay", log, "--catalog", "\(repositoryRoot)/catalog", "--out", "/dev/null", "--dead-letters",
                "/dev/null",
            ]
        )
        #expect(replayed.status == 0)
        #expect(replayed.output.contains("dead letters: 1000"), "\(replayed.output)")
        let logged = replayed.error.split(separator: "\n").filter { $0.contains("event dead-lettered") }
        #expect(logged.count == LogSamplerDefaults.limit, "\(logged.count) lines")
    }

    @Test("--max-devices-per-recipient bounds a recipient's fan-out as the worker's setting does; 0 is refused")
    func deviceLimit() async throws {
        let herald = try heraldExecutable().path
        func notifications(_ extra: [String]) async throws -> Int {
            let replayed = try await run(
                herald,
                [
                    "replay", "\(repositoryRoot)/samples/replay/events.jsonl", "--directory",
                    "\(repositoryRoot)/samples/replay/directory.jsonl", "--catalog", "\(repositoryRoot)/catalog",
                    "--out", "/dev/null",
                ] + extra
            )
            #expect(replayed.status == 0, "\(replayed.error)")
            let line = replayed.output.split(separator: "\n").first { $0.hasPrefix("notifications: ") }
            return Int(line?.dropFirst("notifications: ".count).prefix { $0.isNumber } ?? "") ?? -1
        }
        let all = try await notifications([])
        let one = try await notifications(["--max-devices-per-recipient", "1"])
        // The sample's users have one to three devices: with one each, fewer notifications, but some.
        #expect(all > 0 && one > 0 && one < all, "\(one) against \(all)")
        let refused = try await run(
            herald,
            ["replay", "x.jsonl", "--out", "/dev/null", "--max-devices-per-recipient", "0"]
        )
        #expect(refused.status != 0)
        #expect(refused.error.contains("--max-devices-per-recipient: must be from 1 to 100000"), "\(refused.error)")
    }
}

/// `LogSampler`'s defaults, as the worker uses them.
enum LogSamplerDefaults {
    static let limit = 20
}

struct TourError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
