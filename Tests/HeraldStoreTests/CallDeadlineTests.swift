import Synchronization
import Testing

@testable import HeraldStore

@Suite("PostgreSQL call deadline")
struct CallDeadlineTests {
    /// Stands for postgres-nio's wait for a connection while the server is unreachable: it does not
    /// end when cancelled, only when let go.
    final class Stuck: Sendable {
        let waiting = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let ended = Atomic<Bool>(false)

        func wait() async {
            await withCheckedContinuation { continuation in waiting.withLock { $0 = continuation } }
            ended.store(true, ordering: .releasing)
        }

        func release() { waiting.withLock { $0.take() }?.resume() }
    }

    /// The caller gets its answer while the call is still stuck: it cannot have waited for the call,
    /// which only ends when this test lets it go afterwards. (How soon after the limit depends on
    /// the cooperative pool, which other suites of the test process may keep busy for seconds.)
    @Test("a call that ignores cancellation still times out, not before its limit, and is left to end by itself")
    func timesOutAlthoughIgnoringCancellation() async throws {
        let stuck = Stuck()
        let started = ContinuousClock.now
        await #expect(throws: CallDeadline.TimedOut.self) {
            try await CallDeadline.run(.milliseconds(200)) {
                await stuck.wait()
                return 1
            }
        }
        #expect(ContinuousClock.now - started >= .milliseconds(200), "not before the limit")
        let endedBeforeRelease = stuck.ended.load(ordering: .acquiring)
        #expect(!endedBeforeRelease, "the call was still waiting when the caller went on")
        // Let go, the abandoned call ends; nobody waits for its result.
        while stuck.waiting.withLock({ $0 == nil }) { try await Task.sleep(for: .milliseconds(5)) }
        stuck.release()
        while !stuck.ended.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(5)) }
    }

    @Test("a call that answers in time gives its result or its error")
    func answersInTime() async throws {
        #expect(try await CallDeadline.run(.seconds(10)) { 42 } == 42)
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await CallDeadline.run(.seconds(10)) { () async throws -> Int in throw Refused() }
        }
    }

    @Test("a cancelled caller is let go at once, whatever the call does")
    func cancelledCaller() async throws {
        let stuck = Stuck()
        let caller = Task {
            try await CallDeadline.run(.seconds(600)) {
                await stuck.wait()
                return 1
            }
        }
        while stuck.waiting.withLock({ $0 == nil }) { try await Task.sleep(for: .milliseconds(5)) }
        caller.cancel()
        // The limit is ten minutes and the call never ends by itself: only the cancellation can
        // have let the caller go.
        await #expect(throws: CancellationError.self) { try await caller.value }
        let endedBeforeRelease = stuck.ended.load(ordering: .acquiring)
        #expect(!endedBeforeRelease, "the call was still waiting when the caller went on")
        stuck.release()
    }
}
