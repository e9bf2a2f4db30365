import Foundation
import HeraldEvents

/// Why an (event, recipient) pair ended the way it did: a closed, documented set, used as a metric
/// label and in `herald.decisions`.
public enum DecisionReason: String, Sendable, CaseIterable {
    /// Delivered to the recipient's devices now.
    case sent
    /// The recipient turned push, or this category, off (or never opted in to marketing).
    case suppressedPreference = "suppressed.preference"
    /// Quiet hours, and the category drops what arrives during them.
    case suppressedQuietHours = "suppressed.quiet_hours"
    /// Quiet hours, and the category holds it until they end.
    case deferredQuietHours = "deferred.quiet_hours"
    /// Over a throttle limit whose behaviour is to hold it until the window ends.
    case deferredThrottle = "deferred.throttle"
    /// Over a throttle limit that drops the excess.
    case throttledDropped = "throttled.dropped"
    /// Over a throttle limit that collects the excess into one digest at the window's end.
    case throttledDigested = "throttled.digested"
    /// The same (event, kind, recipient) was decided before (a redelivery): the earlier decision
    /// stands and is repeated, counting nothing again. The label under which redeliveries are
    /// counted; the store returns the earlier reason itself.
    case duplicate
    /// The recipient has no device that can receive it.
    case noDevices = "no_devices"
    /// Past its expiry.
    case expired
    /// The event cannot be handled (bad envelope, unknown type, bad fields).
    case invalidEvent = "invalid_event"
}

/// The policy's answer for one (event, recipient) pair: exactly one reason, and what the store must
/// do so that the next decision sees this one.
public struct PolicyOutcome: Sendable, Hashable {
    public var reason: DecisionReason
    /// For deferrals and digests: when the held notification (or the digest) comes due.
    public var dueAt: Timestamp?
    /// What to record, atomically with the decision.
    public var effects: [PolicyEffect]

    public init(_ reason: DecisionReason, dueAt: Timestamp? = nil, effects: [PolicyEffect] = []) {
        self.reason = reason
        self.dueAt = dueAt
        self.effects = effects
    }
}

/// A change the store applies with the decision.
public enum PolicyEffect: Sendable, Hashable {
    /// Count one notification against a throttle window.
    case count(ThrottleKey)
    /// Add the notification to the digest of a throttle window, to be sent at `flushAt`.
    case addToDigest(ThrottleKey, flushAt: Timestamp)
    /// Hold the notification and decide it again at `at`.
    case schedule(at: Timestamp)
}

/// One throttle window of one rule for one recipient.
public struct ThrottleKey: Sendable, Hashable, CustomStringConvertible {
    public var recipient: String
    /// The rule's name (its category, and kind if the rule is per kind).
    public var rule: String
    /// The window's start: windows are fixed, aligned to the Unix epoch.
    public var windowStart: Timestamp

    public init(recipient: String, rule: String, windowStart: Timestamp) {
        self.recipient = recipient
        self.rule = rule
        self.windowStart = windowStart
    }

    public var description: String { "\(rule)@\(windowStart)" }

    // The recipient by its bytes (``OpaqueID``): two users whose ids differ only in their Unicode
    // normalization have windows of their own, as the databases' rows are.
    public static func == (lhs: ThrottleKey, rhs: ThrottleKey) -> Bool {
        lhs.windowStart == rhs.windowStart && lhs.rule == rhs.rule && lhs.recipient.hasSameBytes(as: rhs.recipient)
    }

    public func hash(into hasher: inout Hasher) {
        recipient.hashBytes(into: &hasher)
        hasher.combine(rule)
        hasher.combine(windowStart)
    }
}

/// What the policy decided without shared state, and the throttle limits the store still checks.
public struct DecisionPlan: Sendable, Hashable {
    /// The outcome unless a limit is reached: final for anything but `.sent`.
    public var outcome: PolicyOutcome
    /// Checked in order, only when `outcome` is `.sent`: the first window already holding its limit
    /// decides the outcome; if none does, the notification counts once against every window.
    public var limits: [ThrottleLimit]

    public init(_ outcome: PolicyOutcome, limits: [ThrottleLimit] = []) {
        self.outcome = outcome
        self.limits = limits
    }

    /// Whether deciding this plan may leave work that comes due later, which a store keeps the
    /// event with: a deferral, or a throttle limit whose window may digest or defer it. A plan
    /// without either is final once decided, and its event need not be written out.
    public var mayLeaveWorkDue: Bool { outcome.dueAt != nil || !limits.isEmpty }

    /// The outcome, given how many notifications each window holds. Stores apply exactly this rule,
    /// atomically with their counters.
    public func resolved(counts: [ThrottleKey: Int]) -> PolicyOutcome {
        resolved { limit in counts[limit.key] ?? 0 }
    }

    /// The same rule, with each window's count read as it is needed: a store whose counts live in
    /// memory answers without building a dictionary per decision.
    public func resolved<Failure: Error>(
        count: (ThrottleLimit) throws(Failure) -> Int
    ) throws(Failure) -> PolicyOutcome {
        guard outcome.reason == .sent else { return outcome }
        for limit in limits where try count(limit) >= limit.limit { return limit.overLimit }
        return PolicyOutcome(.sent, effects: limits.map { .count($0.key) })
    }
}

/// One throttle window a notification must fit into.
public struct ThrottleLimit: Sendable, Hashable {
    public var key: ThrottleKey
    public var limit: Int
    public var windowEnd: Timestamp
    /// The outcome when the window already holds `limit` notifications.
    public var overLimit: PolicyOutcome

    public init(key: ThrottleKey, limit: Int, windowEnd: Timestamp, overLimit: PolicyOutcome) {
        self.key = key
        self.limit = limit
        self.windowEnd = windowEnd
        self.overLimit = overLimit
    }
}

/// The current time, injected: wall-clock time in live processing, event time in replay, so that
/// throttle windows, quiet hours, digests and expiry come out the same on every replay of a log.
public protocol HeraldClock: Sendable {
    func now() -> Timestamp
}

/// The system's wall clock.
public struct WallClock: HeraldClock {
    public init() {}

    public func now() -> Timestamp {
        Timestamp(epochMilliseconds: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
    }
}
