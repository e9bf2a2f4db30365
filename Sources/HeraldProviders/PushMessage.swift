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
    public var kind: String {
        _read { yield storage.fields.kind }
        _modify { yield &storage.fields.kind }
    }
    public var title: String {
        _read { yield storage.fields.title }
        _modify { yield &storage.fields.title }
    }
    public var subtitle: String? {
        _read { yield storage.fields.subtitle }
        _modify { yield &storage.fields.subtitle }
    }
    public var body: String {
        _read { yield storage.fields.body }
        _modify { yield &storage.fields.body }
    }
    /// The deep link the app opens on tap.
    public var deepLink: String? {
        _read { yield storage.fields.deepLink }
        _modify { yield &storage.fields.deepLink }
    }
    /// String data for the app, in order.
    public var data: [KeyValue] {
        _read { yield storage.fields.data }
        _modify { yield &storage.fields.data }
    }
    public var threadID: String? {
        _read { yield storage.fields.threadID }
        _modify { yield &storage.fields.threadID }
    }
    /// iOS notification category (actions).
    public var category: String? {
        _read { yield storage.fields.category }
        _modify { yield &storage.fields.category }
    }
    /// A sound name, or `nil` for silence.
    public var sound: String? {
        _read { yield storage.fields.sound }
        _modify { yield &storage.fields.sound }
    }
    /// A critical alert's volume (0...1); makes `sound` a critical sound.
    public var criticalSoundVolume: Double? {
        _read { yield storage.fields.criticalSoundVolume }
        _modify { yield &storage.fields.criticalSoundVolume }
    }
    /// `passive`, `active`, `time-sensitive` or `critical`.
    public var interruptionLevel: String? {
        _read { yield storage.fields.interruptionLevel }
        _modify { yield &storage.fields.interruptionLevel }
    }
    /// iOS relevance score for the notification summary (0...1).
    public var relevanceScore: Double? {
        _read { yield storage.fields.relevanceScore }
        _modify { yield &storage.fields.relevanceScore }
    }
    public var badge: Int? {
        _read { yield storage.fields.badge }
        _modify { yield &storage.fields.badge }
    }
    public var collapseKey: String? {
        _read { yield storage.fields.collapseKey }
        _modify { yield &storage.fields.collapseKey }
    }
    /// The Android notification channel.
    public var androidChannel: String? {
        _read { yield storage.fields.androidChannel }
        _modify { yield &storage.fields.androidChannel }
    }
    /// Seconds the provider may keep trying; `nil` for the provider's default.
    public var timeToLive: Int? {
        _read { yield storage.fields.timeToLive }
        _modify { yield &storage.fields.timeToLive }
    }
    /// `true` for high priority (shown at once), `false` for normal.
    public var highPriority: Bool {
        _read { yield storage.fields.highPriority }
        _modify { yield &storage.fields.highPriority }
    }
    /// Ask iOS to run the notification service extension (rich content).
    public var mutableContent: Bool {
        _read { yield storage.fields.mutableContent }
        _modify { yield &storage.fields.mutableContent }
    }
    /// A silent, background push: no alert, no sound.
    public var contentAvailable: Bool {
        _read { yield storage.fields.contentAvailable }
        _modify { yield &storage.fields.contentAvailable }
    }
    /// When the notification was created; expiries are counted from here.
    public var createdAt: Timestamp {
        _read { yield storage.fields.createdAt }
        _modify { yield &storage.fields.createdAt }
    }
    /// Localized alert keys for the app to resolve on the device, instead of (APNs) or besides
    /// the rendered text: `title-loc-key`, `title-loc-args`, `loc-key`, `loc-args`.
    public var alertLocalization: AlertLocalization? {
        _read { yield storage.fields.alertLocalization }
        _modify { yield &storage.fields.alertLocalization }
    }

    // The fields live in one shared object, copied on the first write to a shared one: a message is
    // made once per locale for a recipient's devices and handed to the payload builders for each,
    // and a copy of its twenty fields retained and released each of their strings.
    private var storage: SharedFields<Fields>

    private struct Fields: Hashable, Sendable {
        var kind: String
        var title: String
        var subtitle: String?
        var body: String
        var deepLink: String?
        var data: [KeyValue]
        var threadID: String?
        var category: String?
        var sound: String?
        var criticalSoundVolume: Double?
        var interruptionLevel: String?
        var relevanceScore: Double?
        var badge: Int?
        var collapseKey: String?
        var androidChannel: String?
        var timeToLive: Int?
        var highPriority: Bool
        var mutableContent: Bool
        var contentAvailable: Bool
        var createdAt: Timestamp
        var alertLocalization: AlertLocalization?
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
        mutableContent: Bool = false,
        contentAvailable: Bool = false,
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
                mutableContent: mutableContent,
                contentAvailable: contentAvailable,
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
