import HeraldEvents

/// Decides, for one (event, recipient) pair, whether a notification is sent now, later or never.
///
/// Pure: everything it depends on is passed in (the recipient's preferences, how many notifications
/// the recipient's throttle windows hold, the current time from the injected ``HeraldClock``: event
/// time in replay), and the store applies the returned effects atomically with the decision. The
/// same inputs always give the same outcome. Deduplication is the store's: its decision ledger
/// answers a redelivered (event, kind, recipient) with the decision it recorded.
public struct Policy: Sendable {
    /// Policies by category name; a category without one is treated as transactional.
    public var categories: [String: CategoryPolicy] {
        didSet { listed = Self.listed(categories) }
    }
    /// `categories` as a list, for ``policy(for:)`` to search when there are few: every decision
    /// looks its category up, and comparing a short name (up to 15 bytes, kept in the string
    /// itself) is a compare of two words, where the dictionary hashes the name first.
    private var listed: [(name: String, policy: CategoryPolicy)]?

    /// Seed 004's defaults for security, transactional, messages and marketing.
    public static let defaults = Policy(categories: [
        "security": .security, "transactional": .transactional, "messages": .messages, "marketing": .marketing,
    ])

    public init(categories: [String: CategoryPolicy]) {
        self.categories = categories
        listed = Self.listed(categories)
    }

    private static func listed(_ categories: [String: CategoryPolicy]) -> [(name: String, policy: CategoryPolicy)]? {
        categories.count <= 16 ? categories.map { ($0.key, $0.value) } : nil
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
        /// A push that makes no sound and shows no alert (a background push, or one that only sets
        /// the app icon's badge): quiet hours, which keep a phone from disturbing its owner, do not
        /// hold it back. Preferences and throttles still apply.
        public var silent: Bool

        public init(
            kind: String,
            category: String,
            recipient: String,
            deviceCount: Int,
            preferences: Preferences = Preferences(),
            expiresAt: Timestamp? = nil,
            silent: Bool = false
        ) {
            self.kind = kind
            self.category = category
            self.recipient = recipient
            self.deviceCount = deviceCount
            self.preferences = preferences
            self.expiresAt = expiresAt
            self.silent = silent
        }
    }

    /// The throttle windows that apply to `input` at `now`.
    public func throttleKeys(for input: Input, now: Timestamp) -> [ThrottleKey] {
        plan(input, now: now).limits.map(\.key)
    }

    /// Decides everything that does not depend on shared state, and lists the throttle limits that
    /// still apply. The store resolves the plan against its counters atomically, so that workers
    /// sharing a store never let more than a limit through (``DecisionPlan/resolved(counts:)`` is
    /// the rule it applies).
    /// How long after its window closes a digest is sent. A notification decided just before the
    /// close is written to the store a moment later (its whole batch is); flushing at the close
    /// would send it in a second, one-item digest for the same window.
    public static let digestGrace: Duration = .seconds(30)

    public func plan(_ input: Input, now: Timestamp) -> DecisionPlan {
        if let expiresAt = input.expiresAt, now >= expiresAt { return DecisionPlan(PolicyOutcome(.expired)) }
        if input.deviceCount == 0 { return DecisionPlan(PolicyOutcome(.noDevices)) }
        let category = policy(for: input.category)
        if !category.alwaysDelivered {
            let enabled = input.preferences.categories[input.category] ?? category.enabledByDefault
            if !input.preferences.pushEnabled || !enabled {
                return DecisionPlan(PolicyOutcome(.suppressedPreference))
            }
            if !input.silent, let quiet = input.preferences.quietHours, quiet.contains(now) {
                switch category.quietHours {
                case .defer:
                    let end = quiet.endsAfter(now)
                    return DecisionPlan(PolicyOutcome(.deferredQuietHours, dueAt: end, effects: [.schedule(at: end)]))
                case .drop:
                    return DecisionPlan(PolicyOutcome(.suppressedQuietHours))
                case .ignore:
                    break
                }
            }
        }
        var limits: [ThrottleLimit] = []
        for rule in category.throttle where rule.kind == nil || rule.kind == input.kind {
            let windowKey = key(rule, recipient: input.recipient, now: now)
            let windowEnd = Timestamp(
                epochMilliseconds: windowKey.windowStart.epochMilliseconds + rule.window.milliseconds
            )
            let overLimit: PolicyOutcome
            switch rule.overLimit {
            case .drop: overLimit = PolicyOutcome(.throttledDropped)
            case .digest:
                let flushAt = Timestamp(
                    epochMilliseconds: windowEnd.epochMilliseconds + Self.digestGrace.milliseconds
                )
                overLimit = PolicyOutcome(
                    .throttledDigested,
                    dueAt: flushAt,
                    effects: [.addToDigest(windowKey, flushAt: flushAt)]
                )
            case .defer:
                overLimit = PolicyOutcome(.deferredThrottle, dueAt: windowEnd, effects: [.schedule(at: windowEnd)])
            }
            limits.append(ThrottleLimit(key: windowKey, limit: rule.limit, windowEnd: windowEnd, overLimit: overLimit))
        }
        return DecisionPlan(PolicyOutcome(.sent), limits: limits)
    }

    /// Decides with the counts the recipient's throttle windows hold: ``plan(_:now:)`` resolved.
    ///
    /// - Parameter counts: how many notifications each of ``throttleKeys(for:now:)`` already holds.
    public func decide(_ input: Input, counts: [ThrottleKey: Int], now: Timestamp) -> PolicyOutcome {
        plan(input, now: now).resolved(counts: counts)
    }

    func policy(for category: String) -> CategoryPolicy {
        guard let listed else { return categories[category] ?? .transactional }
        for index in listed.indices where listed[index].name == category { return listed[index].policy }
        return .transactional
    }

    func key(_ rule: ThrottleRule, recipient: String, now: Timestamp) -> ThrottleKey {
        let window = rule.window.milliseconds
        let start = now.epochMilliseconds - ((now.epochMilliseconds % window) + window) % window
        return ThrottleKey(recipient: recipient, rule: rule.name, windowStart: Timestamp(epochMilliseconds: start))
    }
}

extension Duration {
    /// Whole milliseconds (sub-millisecond parts are dropped): the unit of Herald's timestamps.
    /// Saturates at `Int64.min` and `Int64.max` (about 292 million years) rather than trapping.
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? .min : .max }
        let (total, overflowAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        return overflowAgain ? (whole < 0 ? .min : .max) : total
    }
}
