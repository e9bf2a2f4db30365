import CHeraldThread
import Foundation

/// Runs blocking work on threads of its own, never on Swift's cooperative pool.
package enum DedicatedThread {
    /// Starts a named thread running `body`. The OS thread gets the name (at most 15 bytes on
    /// Linux), so `top -H` and profilers show which thread is Herald's poll loop.
    package static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            // Named by the thread itself, through the kernel. Foundation's `Thread.name` does not
            // reliably reach the OS thread: in runs of 2,400 starts, up to a few dozen threads
            // came out with a Dispatch worker's name ("-qos.overcommit"), whether the name was set
            // before `start()` or from inside the thread.
            _ = name.withCString { herald_name_current_thread($0) }
            body()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// The calling OS thread's name, as `top -H` shows it.
    package static var currentName: String {
        var buffer = [UInt8](repeating: 0, count: 17)
        let status = buffer.withUnsafeMutableBytes {
            herald_current_thread_name($0.baseAddress!.assumingMemoryBound(to: CChar.self))
        }
        guard status == 0 else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
    }

    /// Runs a blocking `body` on a new thread and returns its result to the awaiting task.
    package static func run<R: Sendable>(name: String, _ body: @escaping @Sendable () -> R) async -> R {
        await withCheckedContinuation { continuation in
            start(name: name) { continuation.resume(returning: body()) }
        }
    }
}
