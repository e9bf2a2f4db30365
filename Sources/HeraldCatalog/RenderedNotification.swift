import HeraldEvents

/// One notification as a phone would show it, in one locale, before any provider payload is built.
///
/// Its fields live in one shared object, copied on the first write to a shared one: a rendering is
/// kept for each locale a recipient's devices use and handed to the payload builders, and a copy
/// of a dozen strings retained and released each of them.
public struct RenderedNotification: Sendable, Hashable {
    @inlinable public var kind: String {
        _read { yield storage.fields.kind }
        _modify { yield &storage.fields.kind }
    }
    @inlinable public var category: String {
        _read { yield storage.fields.category }
        _modify { yield &storage.fields.category }
    }
    @inlinable public var app: String {
        _read { yield storage.fields.app }
        _modify { yield &storage.fields.app }
    }
    /// The bundle locale used, after fallback.
    @inlinable public var locale: String {
        _read { yield storage.fields.locale }
        _modify { yield &storage.fields.locale }
    }
    /// Whether the requested locale was missing and a fallback was used.
    @inlinable public var usedFallbackLocale: Bool {
        _read { yield storage.fields.usedFallbackLocale }
        _modify { yield &storage.fields.usedFallbackLocale }
    }
    @inlinable public var title: String {
        _read { yield storage.fields.title }
        _modify { yield &storage.fields.title }
    }
    @inlinable public var subtitle: String? {
        _read { yield storage.fields.subtitle }
        _modify { yield &storage.fields.subtitle }
    }
    @inlinable public var body: String {
        _read { yield storage.fields.body }
        _modify { yield &storage.fields.body }
    }
    @inlinable public var deepLink: DeepLink? {
        _read { yield storage.fields.deepLink }
        _modify { yield &storage.fields.deepLink }
    }
    /// Data for the app, as strings, in a stable order.
    @inlinable public var data: [KeyValue] {
        _read { yield storage.fields.data }
        _modify { yield &storage.fields.data }
    }
    /// The kind's presentation, as the catalog has it: its collapse key and thread id are
    /// templates; ``collapseKey`` and ``threadID`` are this notification's.
    @inlinable public var presentation: Presentation {
        _read { yield storage.fields.presentation }
        _modify { yield &storage.fields.presentation }
    }
    /// The kind's collapse key with this event's values; nil without one or without a value.
    @inlinable public var collapseKey: String? {
        _read { yield storage.fields.collapseKey }
        _modify { yield &storage.fields.collapseKey }
    }
    /// The kind's iOS thread id with this event's values; nil without one or without a value.
    @inlinable public var threadID: String? {
        _read { yield storage.fields.threadID }
        _modify { yield &storage.fields.threadID }
    }
    /// The https URL of the image shown with the notification (the kind's `push.image` field).
    @inlinable public var imageURL: String? {
        _read { yield storage.fields.imageURL }
        _modify { yield &storage.fields.imageURL }
    }
    /// The app icon's badge count (the kind's `push.badge`); nil leaves the badge as it is.
    @inlinable public var badge: Int? {
        _read { yield storage.fields.badge }
        _modify { yield &storage.fields.badge }
    }

    /// The most UTF-8 a title or a subtitle keeps; a longer one is shortened at a grapheme boundary
    /// and ends with `…`. A phone shows a line or two of either, and the provider's byte budget
    /// (4 KB) shortens only the body: a chat message from someone whose display name is 6,000
    /// characters long would otherwise never fit and be dead-lettered, not sent.
    public static let maximumHeadingBytes = 256

    @usableFromInline var storage: SharedFields<Fields>

    @usableFromInline struct Fields: Sendable {
        @usableFromInline var kind: String
        @usableFromInline var category: String
        @usableFromInline var app: String
        @usableFromInline var locale: String
        @usableFromInline var usedFallbackLocale: Bool
        @usableFromInline var title: String
        @usableFromInline var subtitle: String?
        @usableFromInline var body: String
        @usableFromInline var deepLink: DeepLink?
        @usableFromInline var data: [KeyValue]
        @usableFromInline var presentation: Presentation
        @usableFromInline var collapseKey: String?
        @usableFromInline var threadID: String?
        @usableFromInline var badge: Int?
        @usableFromInline var imageURL: String?
    }

    public init(
        kind: String,
        category: String,
        app: String,
        locale: String,
        usedFallbackLocale: Bool,
        title: String,
        subtitle: String?,
        body: String,
        deepLink: DeepLink?,
        data: [KeyValue],
        presentation: Presentation,
        collapseKey: String? = nil,
        threadID: String? = nil,
        badge: Int? = nil,
        imageURL: String? = nil
    ) {
        storage = SharedFields(
            Fields(
                kind: kind,
                category: category,
                app: app,
                locale: locale,
                usedFallbackLocale: usedFallbackLocale,
                title: title,
                subtitle: subtitle,
                body: body,
                deepLink: deepLink,
                data: data,
                presentation: presentation,
                collapseKey: collapseKey,
                threadID: threadID,
                badge: badge,
                imageURL: imageURL
            )
        )
    }

    /// A deep link in each of the app's forms (the URLs are built when asked for).
    public struct DeepLink: Sendable, Hashable {
        /// The encoded path, e.g. `/orders/ord-7`.
        public var path: String
        /// The app's custom URL scheme, e.g. `drop`.
        public var scheme: String?
        /// The app's universal/app link host, e.g. `getdrop.no`.
        public var universalLinkHost: String?

        /// The custom-scheme URL, e.g. `drop://orders/ord-7`.
        public var schemeURL: String? { scheme.map { String(joining: $0, ":/", path) } }
        /// The universal/app link, e.g. `https://getdrop.no/orders/ord-7`.
        public var universalURL: String? { universalLinkHost.map { String(joining: "https://", $0, path) } }

        /// The link to hand to the app: the universal link when there is one.
        public var preferred: String { universalURL ?? schemeURL ?? path }
    }

    public static func == (lhs: RenderedNotification, rhs: RenderedNotification) -> Bool {
        lhs.kind == rhs.kind && lhs.locale == rhs.locale && lhs.title == rhs.title && lhs.subtitle == rhs.subtitle
            && lhs.body == rhs.body && lhs.deepLink == rhs.deepLink
            && lhs.data == rhs.data && lhs.collapseKey == rhs.collapseKey && lhs.threadID == rhs.threadID
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(locale)
        hasher.combine(title)
        hasher.combine(body)
    }
}
