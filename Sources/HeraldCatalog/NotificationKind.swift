import HeraldEvents

/// What a field of an event is, as the catalog declares it.
public enum FieldType: Sendable, Hashable, CustomStringConvertible {
    case string
    case int
    case decimal
    /// An object `{amount, currency}`: the amount a number or decimal string, the currency ISO 4217.
    case money
    /// An RFC 3339 date-time, formatted in the recipient's locale and time zone.
    case datetime
    case url
    case enumeration([String])
    case list

    /// Whether plural, selectordinal and number formatting apply.
    public var isNumeric: Bool {
        switch self {
        case .int, .decimal: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .string: "string"
        case .int: "int"
        case .decimal: "decimal"
        case .money: "money"
        case .datetime: "datetime"
        case .url: "url"
        case .enumeration: "enum"
        case .list: "list"
        }
    }
}

/// One field a notification kind reads from its events.
///
/// Its fields live in one shared object (read in place): every render goes through its kind's
/// fields, and a copy of a definition retained and released its name, path, type and style.
public struct FieldDefinition: Sendable, Hashable {
    @inlinable public var name: String {
        _read { yield storage.fields.name }
        _modify { yield &storage.fields.name }
    }
    @inlinable public var type: FieldType {
        _read { yield storage.fields.type }
        _modify { yield &storage.fields.type }
    }
    @inlinable public var path: FieldPath {
        _read { yield storage.fields.path }
        _modify { yield &storage.fields.path }
    }
    @inlinable public var required: Bool {
        _read { yield storage.fields.required }
        _modify { yield &storage.fields.required }
    }
    /// For datetimes: `short`, `medium`, `long`, `full` or an ICU skeleton. Default `medium`.
    @inlinable public var style: String {
        _read { yield storage.fields.style }
        _modify { yield &storage.fields.style }
    }

    @usableFromInline var storage: SharedFields<Fields>

    @usableFromInline struct Fields: Hashable, Sendable {
        @usableFromInline var name: String
        @usableFromInline var type: FieldType
        @usableFromInline var path: FieldPath
        @usableFromInline var required: Bool
        @usableFromInline var style: String
    }

    public init(name: String, type: FieldType, path: FieldPath, required: Bool, style: String) {
        storage = SharedFields(Fields(name: name, type: type, path: path, required: required, style: style))
    }
}

/// How a notification is presented on the phone (message keys and platform options).
///
/// Its fields live in one shared object: every rendering carries its kind's presentation, and a
/// copy of a dozen strings retained and released each of them.
public struct Presentation: Sendable, Hashable {
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
    /// iOS `thread-id` (notification grouping), as a template like ``collapseKey``: a rendering's
    /// ``RenderedNotification/threadID`` has it filled.
    @inlinable public var threadID: String? {
        _read { yield storage.fields.threadID }
        _modify { yield &storage.fields.threadID }
    }
    /// iOS notification category (action buttons).
    @inlinable public var iosCategory: String? {
        _read { yield storage.fields.iosCategory }
        _modify { yield &storage.fields.iosCategory }
    }
    @inlinable public var sound: String? {
        _read { yield storage.fields.sound }
        _modify { yield &storage.fields.sound }
    }
    /// iOS interruption level: `passive`, `active`, `time-sensitive`, `critical`.
    @inlinable public var interruptionLevel: String? {
        _read { yield storage.fields.interruptionLevel }
        _modify { yield &storage.fields.interruptionLevel }
    }
    /// The Android notification channel (one of the catalog's channels).
    @inlinable public var androidChannel: String? {
        _read { yield storage.fields.androidChannel }
        _modify { yield &storage.fields.androidChannel }
    }
    /// Collapse key / APNs collapse id, as a template with `{field}` placeholders: a rendering's
    /// ``RenderedNotification/collapseKey`` has them filled with the event's values.
    @inlinable public var collapseKey: String? {
        _read { yield storage.fields.collapseKey }
        _modify { yield &storage.fields.collapseKey }
    }
    /// Time to live in seconds.
    @inlinable public var timeToLive: Int? {
        _read { yield storage.fields.timeToLive }
        _modify { yield &storage.fields.timeToLive }
    }
    /// `high` or `normal`.
    @inlinable public var priority: String {
        _read { yield storage.fields.priority }
        _modify { yield &storage.fields.priority }
    }
    /// Fields copied into the payload's data, as strings.
    @inlinable public var dataFields: [String] {
        _read { yield storage.fields.dataFields }
        _modify { yield &storage.fields.dataFields }
    }
    /// The `url` field holding an image shown with the notification (its name and position in
    /// ``NotificationKind/fields``), if the kind has one.
    @inlinable public var image: (name: String, index: Int)? {
        storage.fields.image.map { ($0.name, $0.index) }
    }
    /// A background push: no text, sound or badge, the data woken app reads (iOS `content-available`,
    /// an FCM data message). Its `title` and `body` are empty.
    @inlinable public var silent: Bool {
        _read { yield storage.fields.silent }
        _modify { yield &storage.fields.silent }
    }
    /// Where the app icon's badge count comes from; `nil` leaves the badge as it is.
    @inlinable public var badge: BadgeSource? {
        _read { yield storage.fields.badge }
        _modify { yield &storage.fields.badge }
    }
    /// A push that only sets the app icon's badge: no text, no sound, nothing on the lock screen
    /// (an APNs alert push whose `aps` holds the badge alone, an FCM data message with the count).
    /// For a count the user checks when ready (unread messages, open tasks). Its `title` and `body`
    /// are empty and its ``badge`` is always set.
    @inlinable public var badgeOnly: Bool {
        _read { yield storage.fields.badgeOnly }
        _modify { yield &storage.fields.badgeOnly }
    }
    /// Whether a phone shows the notification's text: neither ``silent`` nor ``badgeOnly``.
    @inlinable public var showsText: Bool { !silent && !badgeOnly }

    @usableFromInline var storage: SharedFields<Fields>

    @usableFromInline struct Fields: Hashable, Sendable {
        @usableFromInline var title: String
        @usableFromInline var subtitle: String?
        @usableFromInline var body: String
        @usableFromInline var threadID: String?
        @usableFromInline var iosCategory: String?
        @usableFromInline var sound: String?
        @usableFromInline var interruptionLevel: String?
        @usableFromInline var androidChannel: String?
        @usableFromInline var collapseKey: String?
        @usableFromInline var timeToLive: Int?
        @usableFromInline var priority: String
        @usableFromInline var dataFields: [String]
        @usableFromInline var badge: BadgeSource?
        @usableFromInline var image: FieldReference?
        @usableFromInline var silent: Bool
        @usableFromInline var badgeOnly: Bool
    }

    /// One of the kind's fields, by name and position.
    @usableFromInline struct FieldReference: Sendable, Hashable {
        @usableFromInline var name: String
        @usableFromInline var index: Int
    }

    public init(
        title: String,
        subtitle: String?,
        body: String,
        threadID: String?,
        iosCategory: String?,
        sound: String?,
        interruptionLevel: String?,
        androidChannel: String?,
        collapseKey: String?,
        timeToLive: Int?,
        priority: String,
        dataFields: [String],
        badge: BadgeSource? = nil,
        image: (name: String, index: Int)? = nil,
        silent: Bool = false,
        badgeOnly: Bool = false
    ) {
        storage = SharedFields(
            Fields(
                title: title,
                subtitle: subtitle,
                body: body,
                threadID: threadID,
                iosCategory: iosCategory,
                sound: sound,
                interruptionLevel: interruptionLevel,
                androidChannel: androidChannel,
                collapseKey: collapseKey,
                timeToLive: timeToLive,
                priority: priority,
                dataFields: dataFields,
                badge: badge,
                image: image.map { FieldReference(name: $0.name, index: $0.index) },
                silent: silent,
                badgeOnly: badgeOnly
            )
        )
    }
}

/// Where a notification's app-icon badge count comes from (`push.badge` in a kind's file).
///
/// Herald does not count a user's unread notifications itself: the service that knows what is
/// unread (the chat service, the order service) puts the count in its event, and every provider
/// is given that number (APNs and Expo set the badge to it; Android launchers that show counts
/// read FCM's `notification_count`). A redelivered event therefore carries the same badge.
public enum BadgeSource: Sendable, Hashable {
    /// The same count on every notification of the kind; 0 clears the badge.
    case constant(Int)
    /// The value of one of the kind's `int` fields (its position in ``NotificationKind/fields``);
    /// an event without the (optional) field leaves the badge as it is.
    case field(name: String, index: Int)

    /// The largest badge count: APNs and Android take a 32-bit number.
    public static let maximumCount = Int(Int32.max)
}

/// One kind of notification: which events it handles and how it renders them.
///
/// A kind is loaded once and read-only after: its fields live in one shared object, so a copy
/// (one for each event the kind handles, on every thread that builds) retains that object
/// rather than each of its twenty-odd strings and arrays. The accessors are inlinable so that
/// `kind.presentation.title`, say, reads the one field instead of copying the presentation.
public struct NotificationKind: Sendable, Hashable {
    @usableFromInline
    final class Storage: Sendable {
        @usableFromInline let name: String
        @usableFromInline let file: String
        @usableFromInline let eventTypes: [String]
        @usableFromInline let condition: (path: FieldPath, value: String)?
        @usableFromInline let category: String
        @usableFromInline let app: String
        @usableFromInline let recipients: FieldPath
        @usableFromInline let fields: [FieldDefinition]
        @usableFromInline let deepLink: String?
        let deepLinkPattern: DeepLinkPattern?
        let collapseKeyTemplate: TextTemplate?
        let threadIDTemplate: TextTemplate?
        @usableFromInline let presentation: Presentation
        @usableFromInline let digestSummary: String?

        init(
            name: String,
            file: String,
            eventTypes: [String],
            condition: (path: FieldPath, value: String)?,
            category: String,
            app: String,
            recipients: FieldPath,
            fields: [FieldDefinition],
            deepLink: String?,
            deepLinkPattern: DeepLinkPattern?,
            collapseKeyTemplate: TextTemplate?,
            threadIDTemplate: TextTemplate?,
            presentation: Presentation,
            digestSummary: String?
        ) {
            self.name = name
            self.file = file
            self.eventTypes = eventTypes
            self.condition = condition
            self.category = category
            self.app = app
            self.recipients = recipients
            self.fields = fields
            self.deepLink = deepLink
            self.deepLinkPattern = deepLinkPattern
            self.collapseKeyTemplate = collapseKeyTemplate
            self.threadIDTemplate = threadIDTemplate
            self.presentation = presentation
            self.digestSummary = digestSummary
        }
    }

    @usableFromInline let storage: Storage

    init(_ storage: Storage) {
        self.storage = storage
    }

    @inlinable public var name: String { storage.name }
    /// The file it was defined in, relative to the catalog.
    @inlinable public var file: String { storage.file }
    @inlinable public var eventTypes: [String] { storage.eventTypes }
    /// A condition that chooses this kind when several claim one event type: `path == value`.
    @inlinable public var condition: (path: FieldPath, value: String)? { storage.condition }
    @inlinable public var category: String { storage.category }
    @inlinable public var app: String { storage.app }
    /// Where the recipient user id(s) are: a string or a list of strings.
    @inlinable public var recipients: FieldPath { storage.recipients }
    @inlinable public var fields: [FieldDefinition] { storage.fields }
    /// A deep-link path pattern such as `/orders/{orderId}`.
    @inlinable public var deepLink: String? { storage.deepLink }
    /// `deepLink`, `presentation.collapseKey` and `presentation.threadID`, parsed at load.
    var deepLinkPattern: DeepLinkPattern? { storage.deepLinkPattern }
    var collapseKeyTemplate: TextTemplate? { storage.collapseKeyTemplate }
    var threadIDTemplate: TextTemplate? { storage.threadIDTemplate }
    @inlinable public var presentation: Presentation { storage.presentation }
    /// The digest summary's message key, for kinds that are digested.
    @inlinable public var digestSummary: String? { storage.digestSummary }

    public func field(named name: String) -> FieldDefinition? { fields.first { $0.name == name } }

    public static func == (lhs: NotificationKind, rhs: NotificationKind) -> Bool {
        lhs.storage === rhs.storage || (lhs.name == rhs.name && lhs.file == rhs.file)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
    }
}
