import Foundation
import Testing

@Suite("herald replay and herald replay diff")
struct ReplayCommandTests {
    @Test("the README's replay tour: replay the sample log with a report, then diff two replays")
    func tour() throws {
        let herald = try heraldExecutable().path
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let out = scratch.appendingPathComponent("before.jsonl").path
        let replayed = try run(
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

        let same = try run(herald, ["replay", "diff", out, out])
        #expect(same.status == 0)
        #expect(same.output.contains("No differences."))

        // One notification fewer: exit 1, and the diff names it.
        let lines = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n")
        let after = scratch.appendingPathComponent("after.jsonl").path
        try (lines.dropFirst().joined(separator: "\n") + "\n").write(toFile: after, atomically: true, encoding: .utf8)
        let changed = try run(herald, ["replay", "diff", out, after])
        #expect(changed.status == 1)
        #expect(changed.output.contains("added 0, removed 1, changed 0"))

        let wrong = try run(
            herald,
            ["replay", "\(repositoryRoot)/samples/replay/events.jsonl", "--out", out, "--report", "r.txt"]
        )
        #expect(wrong.status != 0)
        #expect(wrong.error.contains("--report: r.txt must end in .md, .json or .html"))
    }
}
