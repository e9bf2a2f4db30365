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
public struct FieldDefinition: Sendable, Hashable {
    public var name: String
    public var type: FieldType
    public var path: FieldPath
    public var required: Bool
    /// For datetimes: `short`, `medium`, `long`, `full` or an ICU skeleton. Default `medium`.
    public var style: String
}

/// How a notification is presented on the phone (message keys and platform options).
public struct Presentation: Sendable, Hashable {
    public var title: String
    public var subtitle: String?
    public var body: String
    /// iOS `thread-id` (notification grouping).
    public var threadID: String?
    /// iOS notification category (action buttons).
    public var iosCategory: String?
    public var sound: String?
    /// iOS interruption level: `passive`, `active`, `time-sensitive`, `critical`.
    public var interruptionLevel: String?
    /// The Android notification channel (one of the catalog's channels).
    public var androidChannel: String?
    /// Collapse key / APNs collapse id; `{field}` placeholders are replaced by field values.
    public var collapseKey: String?
    /// Time to live in seconds.
    public var timeToLive: Int?
    /// `high` or `normal`.
    public var priority: String
    /// Fields copied into the payload's data, as strings.
    public var dataFields: [String]
}

/// One kind of notification: which events it handles and how it renders them.
public struct NotificationKind: Sendable, Hashable {
    public var name: String
    /// The file it was defined in, relative to the catalog.
    public var file: String
    public var eventTypes: [String]
    /// A condition that chooses this kind when several claim one event type: `path == value`.
    public var condition: (path: FieldPath, value: String)?
    public var category: String
    public var app: String
    /// Where the recipient user id(s) are: a string or a list of strings.
    public var recipients: FieldPath
    public var fields: [FieldDefinition]
    /// A deep-link path pattern such as `/orders/{orderId}`.
    public var deepLink: String?
    /// `deepLink`, `presentation.collapseKey` and `presentation.threadID`, parsed at load.
    var deepLinkPattern: DeepLinkPattern?
    var collapseKeyTemplate: TextTemplate?
    var threadIDTemplate: TextTemplate?
    public var presentation: Presentation
    /// The digest summary's message key, for kinds that are digested.
    public var digestSummary: String?

    public func field(named name: String) -> FieldDefinition? { fields.first { $0.name == name } }

    public static func == (lhs: NotificationKind, rhs: NotificationKind) -> Bool {
        lhs.name == rhs.name && lhs.file == rhs.file
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
    }
}
