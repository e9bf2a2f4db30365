import Synchronization

/// Numbered turns taken in order by concurrent tasks: batch `n`'s records are enqueued only after
/// batch `n - 1`'s, whichever build finishes first, so each partition's records stay in order.
///
/// Every turn must be finished, also when its work failed, or the turns after it wait forever.
package final class Turnstile: Sendable {
    private struct State {
        /// Every turn before this one has finished.
        var next = 0
        var waiters: [(turn: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    package init() {}

    /// Returns once every turn before `turn` has finished.
    package func wait(until turn: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state in
                guard state.next < turn else { return true }
                state.waiters.append((turn, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Finishes `turn`: the turn after it may go.
    package func finish(_ turn: Int) {
        let ready = state.withLock { state in
            state.next = max(state.next, turn + 1)
            let next = state.next
            let ready = state.waiters.filter { $0.turn <= next }.map(\.continuation)
            state.waiters.removeAll { $0.turn <= next }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }
}
