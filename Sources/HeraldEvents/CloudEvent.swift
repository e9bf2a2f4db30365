/// A CloudEvents 1.0 event, whichever content mode it arrived in.
public struct CloudEvent: Sendable, Hashable {
    /// `specversion`: always `1.0`.
    public var specVersion: String {
        get { storage.fields.specVersion }
        _modify { yield &storage.fields.specVersion }
    }
    /// `id`: unique per `source`.
    public var id: String {
        get { storage.fields.id }
        _modify { yield &storage.fields.id }
    }
    /// `source`: a URI reference naming the producer.
    public var source: String {
        get { storage.fields.source }
        _modify { yield &storage.fields.source }
    }
    /// `type`: the event type, e.g. `order.confirmed`.
    public var type: String {
        get { storage.fields.type }
        _modify { yield &storage.fields.type }
    }
    /// `time`, if present.
    public var time: Timestamp? {
        get { storage.fields.time }
        _modify { yield &storage.fields.time }
    }
    /// `subject`, if present.
    public var subject: String? {
        get { storage.fields.subject }
        _modify { yield &storage.fields.subject }
    }
    /// `datacontenttype`, if present.
    public var dataContentType: String? {
        get { storage.fields.dataContentType }
        _modify { yield &storage.fields.dataContentType }
    }
    /// `dataschema`, if present.
    public var dataSchema: String? {
        get { storage.fields.dataSchema }
        _modify { yield &storage.fields.dataSchema }
    }
    /// The event's data (JSON), or `nil` if it has none.
    public var data: JSONValue? {
        get { storage.fields.data }
        _modify { yield &storage.fields.data }
    }
    /// Extension attributes (any other attribute), as strings.
    public var extensions: [String: String] {
        get { storage.fields.extensions }
        _modify { yield &storage.fields.extensions }
    }

    // The fields live in one shared object, copied on the first write to a shared one: an event is
    // decoded once and copied as it goes through a batch (routed, decided, built on another
    // thread), and a copy of its fields retained and released each of its strings every time.
    private var storage: SharedFields<Fields>

    private struct Fields: Hashable, Sendable {
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
        storage = SharedFields(
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
