import HeraldEvents

/// One notification, ready for any provider: the rendered text and the presentation options.
/// Payload builders are pure functions of a `PushMessage` and a ``Device``.
public struct PushMessage: Sendable, Hashable {
    /// Deterministic: the same event, kind, recipient and device always give the same id, so a
    /// redelivered event produces requests the sender can recognise.
    public var notificationID: String
    public var kind: String
    public var title: String
    public var subtitle: String?
    public var body: String
    /// The deep link the app opens on tap.
    public var deepLink: String?
    /// String data for the app, in order.
    public var data: [KeyValue]
    public var threadID: String?
    /// iOS notification category (actions).
    public var category: String?
    /// A sound name, or `nil` for silence.
    public var sound: String?
    /// A critical alert's volume (0...1); makes `sound` a critical sound.
    public var criticalSoundVolume: Double?
    /// `passive`, `active`, `time-sensitive` or `critical`.
    public var interruptionLevel: String?
    /// iOS relevance score for the notification summary (0...1).
    public var relevanceScore: Double?
    public var badge: Int?
    public var collapseKey: String?
    /// The Android notification channel.
    public var androidChannel: String?
    /// Seconds the provider may keep trying; `nil` for the provider's default.
    public var timeToLive: Int?
    /// `true` for high priority (shown at once), `false` for normal.
    public var highPriority: Bool
    /// Ask iOS to run the notification service extension (rich content).
    public var mutableContent: Bool
    /// A silent, background push: no alert, no sound.
    public var contentAvailable: Bool
    /// When the notification was created; expiries are counted from here.
    public var createdAt: Timestamp
    /// Localized alert keys for the app to resolve on the device, instead of (APNs) or besides
    /// the rendered text: `title-loc-key`, `title-loc-args`, `loc-key`, `loc-args`.
    public var alertLocalization: AlertLocalization?

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
    public struct KeyValue: Sendable, Hashable {
        public var key: String
        public var value: String

        public init(_ key: String, _ value: String) {
            self.key = key
            self.value = value
        }
    }

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
        self.kind = kind
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.deepLink = deepLink
        self.data = data
        self.threadID = threadID
        self.category = category
        self.sound = sound
        self.criticalSoundVolume = criticalSoundVolume
        self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore
        self.badge = badge
        self.collapseKey = collapseKey
        self.androidChannel = androidChannel
        self.timeToLive = timeToLive
        self.highPriority = highPriority
        self.mutableContent = mutableContent
        self.contentAvailable = contentAvailable
        self.createdAt = createdAt
        self.alertLocalization = alertLocalization
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
