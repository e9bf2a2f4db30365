import Foundation

/// Runs blocking work on threads of its own, never on Swift's cooperative pool.
package enum DedicatedThread {
    /// Starts a named thread running `body`. The name is also given to the OS thread (at most 15
    /// bytes on Linux), so `top -H` and profilers show which thread is Herald's poll loop.
    package static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            // Foundation gives the OS thread its name only when it is set on the current thread.
            Thread.current.name = name
            body()
        }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Runs a blocking `body` on a new thread and returns its result to the awaiting task.
    package static func run<R: Sendable>(name: String, _ body: @escaping @Sendable () -> R) async -> R {
        await withCheckedContinuation { continuation in
            start(name: name) { continuation.resume(returning: body()) }
        }
    }
}
