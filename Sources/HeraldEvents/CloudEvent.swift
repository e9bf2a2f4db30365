/// A CloudEvents 1.0 event, whichever content mode it arrived in.
public struct CloudEvent: Sendable, Hashable {
    /// `specversion`: always `1.0`.
    public var specVersion: String {
        get { storage.fields.specVersion }
        set { uniqueStorage().fields.specVersion = newValue }
    }
    /// `id`: unique per `source`.
    public var id: String {
        get { storage.fields.id }
        set { uniqueStorage().fields.id = newValue }
    }
    /// `source`: a URI reference naming the producer.
    public var source: String {
        get { storage.fields.source }
        set { uniqueStorage().fields.source = newValue }
    }
    /// `type`: the event type, e.g. `order.confirmed`.
    public var type: String {
        get { storage.fields.type }
        set { uniqueStorage().fields.type = newValue }
    }
    /// `time`, if present.
    public var time: Timestamp? {
        get { storage.fields.time }
        set { uniqueStorage().fields.time = newValue }
    }
    /// `subject`, if present.
    public var subject: String? {
        get { storage.fields.subject }
        set { uniqueStorage().fields.subject = newValue }
    }
    /// `datacontenttype`, if present.
    public var dataContentType: String? {
        get { storage.fields.dataContentType }
        set { uniqueStorage().fields.dataContentType = newValue }
    }
    /// `dataschema`, if present.
    public var dataSchema: String? {
        get { storage.fields.dataSchema }
        set { uniqueStorage().fields.dataSchema = newValue }
    }
    /// The event's data (JSON), or `nil` if it has none.
    public var data: JSONValue? {
        get { storage.fields.data }
        set { uniqueStorage().fields.data = newValue }
    }
    /// Extension attributes (any other attribute), as strings.
    public var extensions: [String: String] {
        get { storage.fields.extensions }
        set { uniqueStorage().fields.extensions = newValue }
    }

    // The fields live in one shared object, copied on the first write to a shared one: an event is
    // decoded once and copied as it goes through a batch (routed, decided, built on another
    // thread), and a copy of its fields retained and released each of its strings every time.
    private var storage: Storage

    private final class Storage: @unchecked Sendable {
        // Written only through `uniqueStorage()`, when no other event shares it.
        var fields: Fields

        init(_ fields: Fields) { self.fields = fields }
    }

    private struct Fields: Hashable {
        var specVersion: String
        var id: String
        var source: String
        var type: String
        var time: Timestamp?
        var subject: String?
        var dataContentType: String?
        var dataSchema: String?
        var data: JSONValue?
        var extensions: [String: String]
    }

    private mutating func uniqueStorage() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.fields) }
        return storage
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }

    public func hash(into hasher: inout Hasher) { storage.fields.hash(into: &hasher) }

    public init(
        id: String,
        source: String,
        type: String,
        time: Timestamp? = nil,
        subject: String? = nil,
        dataContentType: String? = "application/json",
        dataSchema: String? = nil,
        data: JSONValue? = nil,
        extensions: [String: String] = [:]
    ) {
        storage = Storage(
            Fields(
                specVersion: "1.0",
                id: id,
                source: source,
                type: type,
                time: time,
                subject: subject,
                dataContentType: dataContentType,
                dataSchema: dataSchema,
                data: data,
                extensions: extensions
            )
        )
    }
}
