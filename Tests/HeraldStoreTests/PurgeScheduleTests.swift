import HeraldEvents
import HeraldStore
import HeraldTestSupport
import Logging
import Synchronization
import Testing

@Suite("Purge schedule")
struct PurgeScheduleTests {
    struct Refused: Error {}

    @Test("purges at once and then every interval, before now minus the retention; a failure does not stop it")
    func schedule() async throws {
        let clock = TestClock("2026-11-21T12:00:00Z")
        let calls = Mutex<[Timestamp]>([])
        let counted = Mutex(0)
        let schedule = PurgeSchedule(retention: .seconds(86_400), interval: .milliseconds(20))
        let running = Task {
            await schedule.run(
                what: "test ledger",
                clock: clock,
                logger: Logger(label: "test"),
                purge: { before in
                    let call = calls.withLock { calls in
                        calls.append(before)
                        return calls.count
                    }
                    // The first purge fails (the store unreachable): the schedule carries on.
                    if call == 1 { throw Refused() }
                    clock.advance(by: .seconds(60))
                    return 2
                },
                purged: { count in counted.withLock { $0 += count } }
            )
        }
        // Three purges 20 ms apart take a moment; the limit is for a schedule that stopped. It is
        // long because the suite shares the cooperative pool with CPU-bound tests (replays in a
        // debug build), which kept each 20 ms sleep from resuming for up to 3 s: 19-39 s in all.
        #expect(await eventually(within: .seconds(180)) { calls.withLock { $0.count >= 3 } })
        running.cancel()
        await running.value
        let made = calls.withLock { $0 }
        #expect(
            Array(made.prefix(3))
                == ["2026-11-20T12:00:00Z", "2026-11-20T12:00:00Z", "2026-11-20T12:01:00Z"].map {
                    Timestamp(rfc3339: $0)!
                }
        )
        #expect(counted.withLock { $0 } == 2 * (made.count - 1))
    }

    @Test("an interval of zero never purges")
    func disabled() async {
        let called = Mutex(false)
        await PurgeSchedule(interval: .zero).run(
            what: "test ledger",
            clock: TestClock("2026-11-21T12:00:00Z"),
            logger: Logger(label: "test"),
            purge: { _ in
                called.withLock { $0 = true }
                return 0
            },
            purged: { _ in }
        )
        #expect(!called.withLock { $0 })
    }
}
