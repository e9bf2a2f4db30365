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

    public struct App: Sendable, Hashable {
        /// A custom URL scheme: `drop` gives `drop://orders/7`.
        public var scheme: String?
        /// A universal/app link host: `getdrop.no` gives `https://getdrop.no/orders/7`.
        public var universalLinkHost: String?
    }
}
