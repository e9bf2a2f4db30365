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
    /// The same (event, kind, recipient) was decided before: the earlier decision stands.
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

    public var description: String { "\(rule)@\(windowStart)" }
}
