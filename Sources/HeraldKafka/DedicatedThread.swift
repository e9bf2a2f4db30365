import Foundation

/// Runs blocking work on threads of its own, never on Swift's cooperative pool.
package enum DedicatedThread {
    /// Starts a named thread running `body`.
    package static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread(block: body)
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
