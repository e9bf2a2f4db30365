/// How one category of notifications is treated. Open-ended (catalogs define categories), so a
/// struct with the seed's defaults as static members.
public struct CategoryPolicy: Sendable, Hashable {
    /// What happens to a notification that arrives during the recipient's quiet hours.
    public enum QuietHoursBehaviour: Sendable, Hashable {
        /// Hold it until quiet hours end.
        case `defer`
        /// Drop it.
        case drop
        /// Deliver it anyway.
        case ignore
    }

    /// Delivered whatever the recipient's switches and quiet hours say (security alerts).
    public var alwaysDelivered: Bool
    /// On unless the recipient turned it off (`false`: off unless they opted in).
    public var enabledByDefault: Bool
    public var quietHours: QuietHoursBehaviour
    public var throttle: [ThrottleRule]

    public init(
        alwaysDelivered: Bool = false,
        enabledByDefault: Bool = true,
        quietHours: QuietHoursBehaviour = .defer,
        throttle: [ThrottleRule] = []
    ) {
        self.alwaysDelivered = alwaysDelivered
        self.enabledByDefault = enabledByDefault
        self.quietHours = quietHours
        self.throttle = throttle
    }

    /// Seed 004: security is always delivered, ignoring opt-outs and quiet hours; unlimited.
    public static let security = CategoryPolicy(alwaysDelivered: true, quietHours: .ignore)
    /// Seed 004: transactional is on by default and unlimited; held during quiet hours.
    public static let transactional = CategoryPolicy(quietHours: .defer)
    /// Seed 004: messages are on by default, 100 per hour, then one digest ("5 new messages").
    public static let messages = CategoryPolicy(
        quietHours: .defer,
        throttle: [ThrottleRule(name: "messages", limit: 100, window: .seconds(3600), overLimit: .digest)]
    )
    /// Seed 004: marketing is off unless the user opted in; 2 per 7 days, the excess dropped; and
    /// dropped during quiet hours.
    public static let marketing = CategoryPolicy(
        enabledByDefault: false,
        quietHours: .drop,
        throttle: [ThrottleRule(name: "marketing", limit: 2, window: .seconds(7 * 86_400), overLimit: .drop)]
    )
}

/// At most `limit` notifications per recipient per `window`; what happens to the rest.
public struct ThrottleRule: Sendable, Hashable {
    public enum OverLimit: Sendable, Hashable {
        case drop
        /// Collect the excess and send one summary when the window ends (``Policy/digestGrace`` later).
        case digest
        /// Hold the excess until the window ends, then decide again.
        case `defer`
    }

    /// Names the counter (and scopes it: a rule per kind has its own name).
    public var name: String
    public var limit: Int
    /// Fixed windows aligned to the Unix epoch.
    public var window: Duration
    public var overLimit: OverLimit
    /// Only notifications of this kind count, if set.
    public var kind: String?

    public init(name: String, limit: Int, window: Duration, overLimit: OverLimit, kind: String? = nil) {
        self.name = name
        self.limit = limit
        self.window = window
        self.overLimit = overLimit
        self.kind = kind
    }
}
