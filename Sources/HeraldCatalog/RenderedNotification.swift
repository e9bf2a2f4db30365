/// One notification as a phone would show it, in one locale, before any provider payload is built.
public struct RenderedNotification: Sendable, Hashable {
    public var kind: String
    public var category: String
    public var app: String
    /// The bundle locale used, after fallback.
    public var locale: String
    /// Whether the requested locale was missing and a fallback was used.
    public var usedFallbackLocale: Bool
    public var title: String
    public var subtitle: String?
    public var body: String
    public var deepLink: DeepLink?
    /// Data for the app, as strings, in a stable order.
    public var data: [(key: String, value: String)]
    public var presentation: Presentation

    /// A deep link in each of the app's forms (the URLs are built when asked for).
    public struct DeepLink: Sendable, Hashable {
        /// The encoded path, e.g. `/orders/ord-7`.
        public var path: String
        /// The app's custom URL scheme, e.g. `drop`.
        public var scheme: String?
        /// The app's universal/app link host, e.g. `getdrop.no`.
        public var universalLinkHost: String?

        /// The custom-scheme URL, e.g. `drop://orders/ord-7`.
        public var schemeURL: String? { scheme.map { "\($0):/\(path)" } }
        /// The universal/app link, e.g. `https://getdrop.no/orders/ord-7`.
        public var universalURL: String? { universalLinkHost.map { "https://\($0)\(path)" } }

        /// The link to hand to the app: the universal link when there is one.
        public var preferred: String { universalURL ?? schemeURL ?? path }
    }

    public static func == (lhs: RenderedNotification, rhs: RenderedNotification) -> Bool {
        lhs.kind == rhs.kind && lhs.locale == rhs.locale && lhs.title == rhs.title && lhs.subtitle == rhs.subtitle
            && lhs.body == rhs.body && lhs.deepLink == rhs.deepLink
            && lhs.data.map(\.key) == rhs.data.map(\.key) && lhs.data.map(\.value) == rhs.data.map(\.value)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(locale)
        hasher.combine(title)
        hasher.combine(body)
    }
}
