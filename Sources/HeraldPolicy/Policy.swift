import HeraldEvents

/// Decides, for one (event, recipient) pair, whether a notification is sent now, later or never.
///
/// Pure: everything it depends on is passed in (the recipient's preferences, how many notifications
/// the recipient's throttle windows hold, the current time from the injected clock: event time in
/// replay), and the store applies the returned effects atomically with the decision. The same
/// inputs always give the same outcome.
public struct Policy: Sendable {
    /// Policies by category name; a category without one is treated as transactional.
    public var categories: [String: CategoryPolicy]

    /// Seed 004's defaults for security, transactional, messages and marketing.
    public static let defaults = Policy(categories: [
        "security": .security, "transactional": .transactional, "messages": .messages, "marketing": .marketing,
    ])

    public init(categories: [String: CategoryPolicy]) {
        self.categories = categories
    }

    /// One (event, recipient) pair to decide.
    public struct Input: Sendable {
        public var kind: String
        public var category: String
        public var recipient: String
        /// Devices that can receive it.
        public var deviceCount: Int
        public var preferences: Preferences
        /// When the notification stops being worth sending, if ever.
        public var expiresAt: Timestamp?
        /// The decision already recorded for this (event, kind, recipient), on redelivery.
        public var earlierDecision: DecisionReason?

        public init(
            kind: String,
            category: String,
            recipient: String,
            deviceCount: Int,
            preferences: Preferences = Preferences(),
            expiresAt: Timestamp? = nil,
            earlierDecision: DecisionReason? = nil
        ) {
            self.kind = kind
            self.category = category
            self.recipient = recipient
            self.deviceCount = deviceCount
            self.preferences = preferences
            self.expiresAt = expiresAt
            self.earlierDecision = earlierDecision
        }
    }

    /// The throttle windows that apply to `input` at `now`: the store reads their counts.
    public func throttleKeys(for input: Input, now: Timestamp) -> [ThrottleKey] {
        policy(for: input.category).throttle.filter { $0.kind == nil || $0.kind == input.kind }.map { rule in
            key(rule, recipient: input.recipient, now: now)
        }
    }

    /// Decides.
    ///
    /// - Parameter counts: how many notifications each of ``throttleKeys(for:now:)`` already holds.
    public func decide(_ input: Input, counts: [ThrottleKey: Int], now: Timestamp) -> PolicyOutcome {
        // A redelivered event gets the decision it got before, and counts nothing again.
        if input.earlierDecision != nil { return PolicyOutcome(.duplicate) }
        if let expiresAt = input.expiresAt, now >= expiresAt { return PolicyOutcome(.expired) }
        if input.deviceCount == 0 { return PolicyOutcome(.noDevices) }
        let category = policy(for: input.category)
        if !category.alwaysDelivered {
            let enabled = input.preferences.categories[input.category] ?? category.enabledByDefault
            if !input.preferences.pushEnabled || !enabled { return PolicyOutcome(.suppressedPreference) }
            if let quiet = input.preferences.quietHours, quiet.contains(now) {
                switch category.quietHours {
                case .defer:
                    let end = quiet.endsAfter(now)
                    return PolicyOutcome(.deferredQuietHours, dueAt: end, effects: [.schedule(at: end)])
                case .drop:
                    return PolicyOutcome(.suppressedQuietHours)
                case .ignore:
                    break
                }
            }
        }
        var effects: [PolicyEffect] = []
        for rule in category.throttle where rule.kind == nil || rule.kind == input.kind {
            let windowKey = key(rule, recipient: input.recipient, now: now)
            guard (counts[windowKey] ?? 0) >= rule.limit else {
                effects.append(.count(windowKey))
                continue
            }
            let windowEnd = Timestamp(
                epochMilliseconds: windowKey.windowStart.epochMilliseconds + rule.window.milliseconds
            )
            switch rule.overLimit {
            case .drop: return PolicyOutcome(.throttledDropped)
            case .digest:
                return PolicyOutcome(
                    .throttledDigested,
                    dueAt: windowEnd,
                    effects: [.addToDigest(windowKey, flushAt: windowEnd)]
                )
            case .defer: return PolicyOutcome(.deferredThrottle, dueAt: windowEnd, effects: [.schedule(at: windowEnd)])
            }
        }
        return PolicyOutcome(.sent, effects: effects)
    }

    func policy(for category: String) -> CategoryPolicy {
        categories[category] ?? .transactional
    }

    func key(_ rule: ThrottleRule, recipient: String, now: Timestamp) -> ThrottleKey {
        let window = rule.window.milliseconds
        let start = now.epochMilliseconds - ((now.epochMilliseconds % window) + window) % window
        return ThrottleKey(recipient: recipient, rule: rule.name, windowStart: Timestamp(epochMilliseconds: start))
    }
}

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
