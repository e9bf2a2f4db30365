#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value protected by a mutex, with a condition variable that threads can wait on.
///
/// The consumer's poll thread blocks on the condition inside librdkafka's rebalance callback until the
/// application has finished its in-flight messages; `Synchronization.Mutex` has no condition, so this
/// pairs a pthread mutex and condition variable around the value.
final class ConditionLock<Value>: @unchecked Sendable {
    // @unchecked: `value` is only read or written while `mutex` is held.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var value: Value

    init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        #if !canImport(Darwin)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        #endif
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Wakes every thread waiting in ``wait(until:deadline:)``.
    func broadcast() {
        pthread_cond_broadcast(condition)
    }

    /// Blocks the calling thread until `predicate` holds or the deadline passes.
    ///
    /// - Important: Never call this from Swift's cooperative thread pool; it is meant for the threads
    ///   that own librdkafka handles.
    /// - Returns: whether the predicate held.
    @discardableResult
    func wait(until predicate: (inout Value) -> Bool, deadline: ContinuousClock.Instant) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !predicate(&value) {
            let remaining = ContinuousClock.now.duration(to: deadline)
            if remaining <= .zero { return false }
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let (seconds, attoseconds) = remaining.components
            var nanoseconds = Int(now.tv_nsec) + Int(attoseconds / 1_000_000_000)
            var wholeSeconds = Int(now.tv_sec) + Int(seconds)
            wholeSeconds += nanoseconds / 1_000_000_000
            nanoseconds %= 1_000_000_000
            var until = timespec(tv_sec: wholeSeconds, tv_nsec: nanoseconds)
            pthread_cond_timedwait(condition, mutex, &until)
        }
        return true
    }
}
