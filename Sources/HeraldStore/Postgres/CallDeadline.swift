import Synchronization

/// Runs a call with a time limit, and returns when the limit passes even if the call has not
/// noticed its cancellation yet.
///
/// A structured race (a task group of the call and a timer) would wait for the cancelled call to
/// end; postgres-nio's wait for a pooled connection does not always end on cancellation while the
/// server is unreachable, and the caller would then wait as long as the outage lasts. Here the call
/// runs in a task of its own: on time-out (or when the caller is cancelled) it is cancelled and
/// left to finish by itself, and its result is discarded. The tests' `withTimeout` runs on it too.
package enum CallDeadline {
    package struct TimedOut: Error {}

    package static func run<R: Sendable>(
        _ limit: Duration,
        _ body: @escaping @Sendable () async throws -> R
    ) async throws -> R {
        let race = Race<R>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard race.start(continuation) else { return }
                let work = Task {
                    let result: Result<R, any Error>
                    do { result = .success(try await body()) } catch { result = .failure(error) }
                    race.finish(result)
                }
                let timer = Task {
                    do { try await Task.sleep(for: limit) } catch { return }
                    race.finish(.failure(TimedOut()))
                }
                race.track([work, timer])
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
        }
    }

    /// The first of the call, the timer and the caller's cancellation to finish resumes the caller
    /// and cancels the others.
    private final class Race<R: Sendable>: Sendable {
        private struct State {
            var continuation: CheckedContinuation<R, any Error>?
            var finished = false
            var tasks: [Task<Void, Never>] = []
        }
        private let state = Mutex(State())

        /// Takes the caller's continuation; `false` when the race is already over (the caller was
        /// cancelled first), in which case the continuation has been resumed.
        func start(_ continuation: CheckedContinuation<R, any Error>) -> Bool {
            let over = state.withLock { state in
                if !state.finished { state.continuation = continuation }
                return state.finished
            }
            if over { continuation.resume(throwing: CancellationError()) }
            return !over
        }

        func track(_ tasks: [Task<Void, Never>]) {
            let over = state.withLock { state in
                state.tasks = tasks
                return state.finished
            }
            if over { for task in tasks { task.cancel() } }
        }

        func finish(_ result: Result<R, any Error>) {
            let (continuation, tasks) = state.withLock { state in
                guard !state.finished else {
                    return (nil, []) as (CheckedContinuation<R, any Error>?, [Task<Void, Never>])
                }
                state.finished = true
                defer {
                    state.continuation = nil
                    state.tasks = []
                }
                return (state.continuation, state.tasks)
            }
            for task in tasks { task.cancel() }
            continuation?.resume(with: result)
        }
    }
}
