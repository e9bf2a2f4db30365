import HeraldEvents
import HeraldPolicy
import Synchronization

/// Replay's clock: the time of the events being processed, moved forward by the replayer (never
/// back: an event recorded out of order is decided at the time already reached), so throttle
/// windows, quiet hours, digests and expiry come out as they did when the events happened — and
/// the same on every replay.
public final class EventTimeClock: HeraldClock {
    private let current: Atomic<Int64>

    public init(start: Timestamp = Timestamp(epochMilliseconds: 0)) {
        current = Atomic(start.epochMilliseconds)
    }

    public func now() -> Timestamp { Timestamp(epochMilliseconds: current.load(ordering: .acquiring)) }

    /// Moves the clock to `time` if that is later.
    public func advance(to time: Timestamp) {
        var expected = current.load(ordering: .relaxed)
        while time.epochMilliseconds > expected {
            let (exchanged, original) = current.compareExchange(
                expected: expected,
                desired: time.epochMilliseconds,
                ordering: .acquiringAndReleasing
            )
            if exchanged { return }
            expected = original
        }
    }
}
