import HeraldTestSupport
import Testing

/// The time limit the Kafka tests put on waits for deliveries and tasks: it has to fail the test,
/// not hang it, when what it waits for ignores cancellation.
@Suite("withTimeout", .timeLimit(.minutes(2)))
struct WithTimeoutTests {
    @Test("a body that ignores cancellation (a task's value) fails on time instead of hanging")
    func uncooperativeBody() async throws {
        let started = ContinuousClock.now
        // An unstructured task: cancelling the awaiting task does not cancel it, so awaiting its
        // value waits the whole 60 s whatever happens around it. The limits below leave room for a
        // loaded machine (the suite starts beside every other one): 7.5 s has been seen.
        let slow = Task { try? await Task.sleep(for: .seconds(60)) }
        let error = await #expect(throws: TimedOut.self) {
            try await withTimeout(.milliseconds(200), "the slow task") { await slow.value }
        }
        let waited = ContinuousClock.now - started
        #expect(waited < .seconds(30), "withTimeout returned after \(waited)")
        #expect(error?.description == "the slow task did not finish within 0.2 seconds")
        slow.cancel()
    }

    @Test("a body that finishes in time gives its value, or its error")
    func finishedBody() async throws {
        let value = try await withTimeout(.seconds(10)) { 42 }
        #expect(value == 42)
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await withTimeout(.seconds(10)) { () async throws -> Int in throw Refused() }
        }
    }

    @Test("cancelling the caller ends the wait at once, with the body left to end by itself")
    func callerCancelled() async throws {
        let slow = Task { try? await Task.sleep(for: .seconds(60)) }
        let started = ContinuousClock.now
        let waiting = Task {
            try await withTimeout(.seconds(50)) { await slow.value }
        }
        try await Task.sleep(for: .milliseconds(100))
        waiting.cancel()
        let outcome = await waiting.result
        #expect(throws: CancellationError.self) { try outcome.get() }
        #expect(ContinuousClock.now - started < .seconds(30))
        slow.cancel()
    }
}
