import Synchronization

/// A counter one thread advances and others read, for benchmarks and progress displays.
package final class ProgressCounter: Sendable {
    private let storage = Atomic<Int>(0)

    package init() {}

    package var value: Int { storage.load(ordering: .relaxed) }

    package func store(_ value: Int) { storage.store(value, ordering: .relaxed) }

    package func add(_ amount: Int) { storage.add(amount, ordering: .relaxed) }
}
