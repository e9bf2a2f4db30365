import HeraldKafka

/// Runs `body`, which blocks (waits for a child process, a tool, a file), on a thread of its own and
/// returns its result to the awaiting test.
///
/// Not on Swift's cooperative pool: it has one thread per core, and tests that waited there for a
/// child process (a `herald` command that runs for a minute, `initdb`) held both of a 2-core
/// machine's threads, so that every other test in the process stood still meanwhile; one that
/// timed a 20 ms schedule failed so, its sleeping task not resumed within 30 seconds.
public func offPool<R: Sendable, Failure: Error>(
    _ body: @escaping @Sendable () throws(Failure) -> R
) async throws(Failure) -> R {
    try await DedicatedThread.run(name: "herald-test-wait") { Result(catching: body) }.get()
}
