/// Catalog-wide settings (`catalog.yaml`).
public struct CatalogSettings: Sendable, Hashable {
    /// The locale every message must exist in, and the last fallback.
    public var defaultLocale: String
    /// The locales the catalog has bundles for.
    public var locales: [String]
    /// Policy classes a kind may belong to.
    public var categories: [String]
    /// Android notification channels a kind may use.
    public var channels: [String]
    /// Each app's deep-link bases.
    public var apps: [String: App]
    /// House-style money patterns per locale or language (ICU decimal patterns, e.g. `#,##0.00 ¤`);
    /// locales without one use ICU's.
    public var moneyPatterns: [String: String]
    /// Rules per category that replace seed 004's defaults (`policies:`); a category not listed,
    /// and a rule member not given, keeps its default.
    public var policies: [String: CategoryRules] = [:]

    /// How a category's notifications are treated; `nil` members keep the category's default.
    public struct CategoryRules: Sendable, Hashable {
        public var alwaysDelivered: Bool?
        public var enabledByDefault: Bool?
        /// `defer`, `drop` or `ignore`.
        public var quietHours: String?
        public var throttle: [Throttle]?

        /// At most `limit` per recipient per window; `overLimit`: `drop`, `digest` or `defer`.
        public struct Throttle: Sendable, Hashable {
            public var name: String
            public var limit: Int
            public var windowSeconds: Int64
            public var overLimit: String
            /// Only this kind counts, if set.
            public var kind: String?
        }
    }

    public struct App: Sendable, Hashable {
        /// A custom URL scheme: `drop` gives `drop://orders/7`.
        public var scheme: String?
        /// A universal/app link host: `getdrop.no` gives `https://getdrop.no/orders/7`.
        public var universalLinkHost: String?
    }
}
