import HeraldStore
import ServiceLifecycle

/// Runs `services` for the duration of `body`, then cancels them (which each Herald service treats as
/// a graceful shutdown) and waits for them to finish.
public func withRunningServices<R: Sendable>(
    _ services: [any Service],
    _ body: () async throws -> R
) async throws -> R {
    try await withThrowingTaskGroup(of: Void.self) { group in
        for service in services {
            group.addTask { try await service.run() }
        }
        let result: Result<R, any Error>
        do {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        group.cancelAll()
        while (try await group.next()) != nil {}
        return try result.get()
    }
}

/// Runs `service` in a task of its own. `ended` says how its run ended, `nil` while it runs: a test
/// can look without awaiting the task, whose value may never come.
public func startService(
    _ service: any Service
) -> (running: Task<Void, any Error>, ended: SharedValue<Result<Void, any Error>?>) {
    let ended = SharedValue<Result<Void, any Error>?>(nil)
    let running = Task {
        do {
            try await service.run()
            ended.update { $0 = .success(()) }
        } catch {
            ended.update { $0 = .failure(error) }
            throw error
        }
    }
    return (running, ended)
}

/// Fails with ``TimedOut`` if `body` has not finished within `limit`, whether or not `body` stops
/// when it is cancelled: awaiting a task's `value` or a continuation does not, and a task group
/// racing the body against a timer would wait for it all the same (a hung test instead of a
/// failed one). The body runs in a task of its own (``CallDeadline``), cancelled when the time is up
/// and then left to end by itself.
public func withTimeout<R: Sendable>(
    _ limit: Duration,
    _ what: String = "operation",
    _ body: @escaping @Sendable () async throws -> R
) async throws -> R {
    do {
        return try await CallDeadline.run(limit, body)
    } catch is CallDeadline.TimedOut {
        throw TimedOut(what: what, limit: limit)
    }
}

/// A test step did not finish in time.
public struct TimedOut: Error, CustomStringConvertible {
    public var what: String
    public var limit: Duration
    public var description: String { "\(what) did not finish within \(limit)" }
}

/// Polls `condition` every 20 ms until it holds or `limit` passes. Returns whether it held.
public func eventually(
    within limit: Duration = .seconds(30),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}
