import Dispatch
import HeraldCatalog
import HeraldKafka
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The threads that render and build the parts of a batch: off the cooperative pool, and at a
/// lower priority than the rest of the process.
///
/// A part takes milliseconds of CPU without a suspension point. On the cooperative pool it held a
/// thread that the deciding task needed after every store call. At the same priority as everything
/// else, the deciding path still waited for a time slice at each hop: the store's queue, the
/// consumer, the producer. On two cores that was a quarter of a replay's time. The deciding path is
/// serial, and builds only fill the cores it leaves idle, so builds yield to it. They still get
/// every idle cycle: a lower priority only loses when something else wants the core.
package final class BuildThreads: Sendable {
    /// One thread per core, shared by every processor in the process.
    package static let shared = BuildThreads(count: Worker.onlineCores)

    /// How much lower than the process's priority builds run (`nice` steps; Linux sets it per thread).
    package static let niceness: Int32 = 5

    private let jobs = Mutex<[@Sendable (RenderPlans) -> Void]>([])
    private let queued = DispatchSemaphore(value: 0)

    /// Starts `count` threads that live as long as the process.
    package init(count: Int) {
        for index in 0..<max(count, 1) {
            DedicatedThread.start(name: "herald.build.\(index)") { [self] in
                #if canImport(Glibc)
                // `who` 0 is the calling thread on Linux. Failing leaves the priority as it was.
                let which = __priority_which_t(PRIO_PROCESS.rawValue)
                _ = setpriority(which, 0, min(getpriority(which, 0) + Self.niceness, 19))
                #endif
                // The thread's own, kept from one part to the next: a part's first render of each
                // kind and locale no longer resolves it again, and the date and money formatters a
                // plan keeps are found there (a part is about 500 events; its plans, made for it
                // alone, were mostly filled and thrown away).
                let plans = RenderPlans()
                while true {
                    queued.wait()
                    let job = jobs.withLock { $0.removeFirst() }
                    job(plans)
                }
            }
        }
    }

    /// Runs `body` on one of the threads, with that thread's render plans, and returns its result
    /// to the awaiting task.
    package func run<R: Sendable>(_ body: @escaping @Sendable (RenderPlans) -> R) async -> R {
        await withCheckedContinuation { continuation in
            jobs.withLock { $0.append { plans in continuation.resume(returning: body(plans)) } }
            queued.signal()
        }
    }
}
