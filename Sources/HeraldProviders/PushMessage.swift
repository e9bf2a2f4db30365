import HeraldEvents

/// One notification, ready for any provider: the rendered text and the presentation options.
/// Payload builders are pure functions of a `PushMessage` and a ``Device``.
public struct PushMessage: Sendable, Hashable {
    /// Deterministic: the same event, kind, recipient and device always give the same id, so a
    /// redelivered event produces requests the sender can recognise.
    ///
    /// Kept beside the shared fields, not among them: the worker sets it for each device of a
    /// message, which would copy shared fields.
    public var notificationID: String
    @inlinable public var kind: String {
        _read { yield storage.fields.kind }
        _modify { yield &storage.fields.kind }
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
    /// The deep link the app opens on tap.
    @inlinable public var deepLink: String? {
        _read { yield storage.fields.deepLink }
        _modify { yield &storage.fields.deepLink }
    }
    /// String data for the app, in order.
    @inlinable public var data: [KeyValue] {
        _read { yield storage.fields.data }
        _modify {
            defer { storage.fields.encodedData = EncodedData(storage.fields.data) }
            yield &storage.fields.data
        }
    }
    /// ``data`` as JSON members, with what each key is to the providers.
    var encodedData: EncodedData {
        _read { yield storage.fields.encodedData }
    }
    @inlinable public var threadID: String? {
        _read { yield storage.fields.threadID }
        _modify { yield &storage.fields.threadID }
    }
    /// iOS notification category (actions).
    @inlinable public var category: String? {
        _read { yield storage.fields.category }
        _modify { yield &storage.fields.category }
    }
    /// A sound name, or `nil` for silence.
    @inlinable public var sound: String? {
        _read { yield storage.fields.sound }
        _modify { yield &storage.fields.sound }
    }
    /// A critical alert's volume (0...1); makes `sound` a critical sound.
    @inlinable public var criticalSoundVolume: Double? {
        _read { yield storage.fields.criticalSoundVolume }
        _modify { yield &storage.fields.criticalSoundVolume }
    }
    /// `passive`, `active`, `time-sensitive` or `critical`.
    @inlinable public var interruptionLevel: String? {
        _read { yield storage.fields.interruptionLevel }
        _modify { yield &storage.fields.interruptionLevel }
    }
    /// iOS relevance score for the notification summary (0...1).
    @inlinable public var relevanceScore: Double? {
        _read { yield storage.fields.relevanceScore }
        _modify { yield &storage.fields.relevanceScore }
    }
    @inlinable public var badge: Int? {
        _read { yield storage.fields.badge }
        _modify { yield &storage.fields.badge }
    }
    @inlinable public var collapseKey: String? {
        _read { yield storage.fields.collapseKey }
        _modify { yield &storage.fields.collapseKey }
    }
    /// The Android notification channel.
    @inlinable public var androidChannel: String? {
        _read { yield storage.fields.androidChannel }
        _modify { yield &storage.fields.androidChannel }
    }
    /// Seconds the provider may keep trying; `nil` for the provider's default.
    @inlinable public var timeToLive: Int? {
        _read { yield storage.fields.timeToLive }
        _modify { yield &storage.fields.timeToLive }
    }
    /// `true` for high priority (shown at once), `false` for normal.
    @inlinable public var highPriority: Bool {
        _read { yield storage.fields.highPriority }
        _modify { yield &storage.fields.highPriority }
    }
    /// Ask iOS to run the notification service extension (rich content).
    /// An https URL of an image the phone downloads and shows with the notification (Android's
    /// big picture; on iOS the app's notification service extension attaches it, so its presence
    /// also sets `mutable-content`). Dropped by the size budget before the deep link.
    @inlinable public var imageURL: String? {
        _read { yield storage.fields.imageURL }
        _modify { yield &storage.fields.imageURL }
    }
    @inlinable public var mutableContent: Bool {
        _read { yield storage.fields.mutableContent }
        _modify { yield &storage.fields.mutableContent }
    }
    /// A silent, background push: no alert, no sound.
    @inlinable public var contentAvailable: Bool {
        _read { yield storage.fields.contentAvailable }
        _modify { yield &storage.fields.contentAvailable }
    }
    /// A push that only sets the app icon's ``badge``: no alert and no sound (the title, subtitle,
    /// body, sound and image are not sent), an alert push to APNs with `aps` holding the badge
    /// alone, a data message to FCM's Android devices, which carries the count for the app.
    @inlinable public var badgeOnly: Bool {
        _read { yield storage.fields.badgeOnly }
        _modify { yield &storage.fields.badgeOnly }
    }
    /// Whether the push shows an alert: neither ``contentAvailable`` (silent) nor ``badgeOnly``.
    @inlinable public var showsAlert: Bool { !contentAvailable && !badgeOnly }
    /// When the notification was created; expiries are counted from here.
    @inlinable public var createdAt: Timestamp {
        _read { yield storage.fields.createdAt }
        _modify { yield &storage.fields.createdAt }
    }
    /// Localized alert keys for the app to resolve on the device, instead of (APNs) or besides
    /// the rendered text: `title-loc-key`, `title-loc-args`, `loc-key`, `loc-args`.
    @inlinable public var alertLocalization: AlertLocalization? {
        _read { yield storage.fields.alertLocalization }
        _modify { yield &storage.fields.alertLocalization }
    }

    // The fields live in one shared object, copied on the first write to a shared one: a message is
    // made once per locale for a recipient's devices and handed to the payload builders for each,
    // and a copy of its twenty fields retained and released each of their strings.
    @usableFromInline var storage: SharedFields<Fields>

    @usableFromInline struct Fields: Hashable, Sendable {
        @usableFromInline var kind: String
        @usableFromInline var title: String
        @usableFromInline var subtitle: String?
        @usableFromInline var body: String
        @usableFromInline var deepLink: String?
        @usableFromInline var data: [KeyValue]
        /// `data` written as JSON members, for every device's payload to copy.
        @usableFromInline var encodedData: EncodedData
        @usableFromInline var threadID: String?
        @usableFromInline var category: String?
        @usableFromInline var sound: String?
        @usableFromInline var criticalSoundVolume: Double?
        @usableFromInline var interruptionLevel: String?
        @usableFromInline var relevanceScore: Double?
        @usableFromInline var badge: Int?
        @usableFromInline var collapseKey: String?
        @usableFromInline var androidChannel: String?
        @usableFromInline var timeToLive: Int?
        @usableFromInline var highPriority: Bool
        @usableFromInline var imageURL: String?
        @usableFromInline var mutableContent: Bool
        @usableFromInline var contentAvailable: Bool
        @usableFromInline var badgeOnly: Bool
        @usableFromInline var createdAt: Timestamp
        @usableFromInline var alertLocalization: AlertLocalization?
    }

    /// Keys into the app's own string tables, with their arguments.
    public struct AlertLocalization: Sendable, Hashable {
        public var titleKey: String?
        public var titleArguments: [String]
        public var bodyKey: String
        public var bodyArguments: [String]

        public init(
            titleKey: String? = nil,
            titleArguments: [String] = [],
            bodyKey: String,
            bodyArguments: [String] = []
        ) {
            self.titleKey = titleKey
            self.titleArguments = titleArguments
            self.bodyKey = bodyKey
            self.bodyArguments = bodyArguments
        }
    }

    /// One string data entry.
    public typealias KeyValue = HeraldEvents.KeyValue

    public init(
        notificationID: String,
        kind: String,
        title: String,
        subtitle: String? = nil,
        body: String,
        deepLink: String? = nil,
        data: [KeyValue] = [],
        threadID: String? = nil,
        category: String? = nil,
        sound: String? = nil,
        criticalSoundVolume: Double? = nil,
        interruptionLevel: String? = nil,
        relevanceScore: Double? = nil,
        badge: Int? = nil,
        collapseKey: String? = nil,
        androidChannel: String? = nil,
        timeToLive: Int? = nil,
        highPriority: Bool = true,
        imageURL: String? = nil,
        mutableContent: Bool = false,
        contentAvailable: Bool = false,
        badgeOnly: Bool = false,
        createdAt: Timestamp,
        alertLocalization: AlertLocalization? = nil
    ) {
        self.notificationID = notificationID
        storage = SharedFields(
            Fields(
                kind: kind,
                title: title,
                subtitle: subtitle,
                body: body,
                deepLink: deepLink,
                data: data,
                encodedData: EncodedData(data),
                threadID: threadID,
                category: category,
                sound: sound,
                criticalSoundVolume: criticalSoundVolume,
                interruptionLevel: interruptionLevel,
                relevanceScore: relevanceScore,
                badge: badge,
                collapseKey: collapseKey,
                androidChannel: androidChannel,
                timeToLive: timeToLive,
                highPriority: highPriority,
                imageURL: imageURL,
                mutableContent: mutableContent,
                contentAvailable: contentAvailable,
                badgeOnly: badgeOnly,
                createdAt: createdAt,
                alertLocalization: alertLocalization
            )
        )
    }
}

/// One registered device.
public struct Device: Sendable, Hashable {
    public enum Environment: String, Sendable {
        case sandbox
        case production
    }

    /// The provider's token for this device.
    public var token: String
    /// The app's bundle id (APNs topic) or package name.
    public var appID: String
    public var environment: Environment

    public init(token: String, appID: String, environment: Environment = .production) {
        self.token = token
        self.appID = appID
        self.environment = environment
    }
}
