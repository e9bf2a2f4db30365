import HeraldEvents
import Synchronization

/// Stops calling a provider that keeps failing, so that retries wait out an outage on the retry
/// topics instead of hammering it: after `failureThreshold` failed calls (no answer, or a 5xx or
/// 429) with no success between them, the circuit opens for `openDuration`; then one batch is let
/// through as a probe, and its answers close the circuit or open it again.
public final class CircuitBreaker: Sendable {
    public struct Configuration: Sendable {
        public var failureThreshold = 20
        public var openDuration = Duration.seconds(30)

        public init() {}
    }

    public enum State: String, Sendable {
        case closed
        case open
        case halfOpen = "half-open"
    }

    let configuration: Configuration
    private let state: Mutex<(state: State, failures: Int, openUntil: Int64, probing: Bool)>

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        state = Mutex((.closed, 0, 0, false))
    }

    public var current: State { state.withLock { $0.state } }

    /// Whether a call may go out at `now`; if not, when to come back.
    public func permit(at now: Timestamp) -> Timestamp? {
        state.withLock { state in
            switch state.state {
            case .closed:
                return nil
            case .open:
                guard now.epochMilliseconds >= state.openUntil else {
                    return Timestamp(epochMilliseconds: state.openUntil)
                }
                state.state = .halfOpen
                state.probing = true
                return nil
            case .halfOpen:
                // One probe at a time; the others wait a little.
                if state.probing { return Timestamp(epochMilliseconds: now.epochMilliseconds + 1000) }
                state.probing = true
                return nil
            }
        }
    }

    /// Records the calls of one batch: any success closes the circuit (the provider answers);
    /// failures without one add up, and open it at the threshold (or at once when half-open).
    public func record(successes: Int, failures: Int, at now: Timestamp) {
        guard successes + failures > 0 else { return }
        state.withLock { state in
            state.probing = false
            if successes > 0 {
                state.state = .closed
                state.failures = 0
                return
            }
            state.failures += failures
            if state.state == .halfOpen || state.failures >= configuration.failureThreshold {
                state.state = .open
                state.openUntil = now.epochMilliseconds + configuration.openDuration.milliseconds
            }
        }
    }

    /// A failure of the provider (not of the request): no answer, or a retryable answer.
    public static func isProviderFailure(_ outcome: DeliveryOutcome) -> Bool {
        if case .retry = outcome { return true }
        return false
    }
}
