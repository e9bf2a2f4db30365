import HeraldApp
import HeraldTestSupport
import Testing

@Suite("Opening the store at start-up")
struct StoreStartupTests {
    @Test("while PostgreSQL does not answer, a warning says what start-up waits for, without the password")
    func waitingForPostgres() async throws {
        let capture = LogCapture()
        // Port 1: nothing listens, every connection is refused, and the migration waits.
        let location = try StoreLocation("postgres://herald:hunter2@127.0.0.1:1/herald")
        let opening = Task {
            try await location.withStore(logger: capture.logger(label: "test"), waitNotice: .milliseconds(200)) { _ in
                Issue.record("the store opened with nothing listening")
            }
        }
        defer { opening.cancel() }
        try await eventually("two warnings") {
            capture.recent.filter { $0.contains("waiting for the store") }.count >= 2
        }
        opening.cancel()
        await #expect(throws: (any Error).self) { try await opening.value }
        let warnings = capture.recent.filter { $0.contains("waiting for the store") }
        #expect(warnings.first?.contains("store=postgres://herald@127.0.0.1:1/herald") == true, "\(warnings)")
        #expect(warnings.first?.contains("warning") == true, "\(warnings)")
        #expect(!capture.recent.joined(separator: "\n").contains("hunter2"))
        // Once given up, nothing more is said.
        let said = capture.recent.filter { $0.contains("waiting for the store") }.count
        try await Task.sleep(for: .milliseconds(600))
        #expect(capture.recent.filter { $0.contains("waiting for the store") }.count == said)
    }
}
