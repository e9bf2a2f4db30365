import HeraldEvents
import HeraldPolicy
import Synchronization

/// A clock the test sets.
public final class TestClock: HeraldClock {
    private let time: Mutex<Timestamp>

    public init(_ text: String) { time = Mutex(Timestamp(rfc3339: text)!) }

    public func now() -> Timestamp { time.withLock { $0 } }

    public func set(_ text: String) { time.withLock { $0 = Timestamp(rfc3339: text)! } }

    public func advance(by duration: Duration) {
        let (seconds, attoseconds) = duration.components
        time.withLock { $0.epochMilliseconds += seconds * 1000 + attoseconds / 1_000_000_000_000_000 }
    }
}
