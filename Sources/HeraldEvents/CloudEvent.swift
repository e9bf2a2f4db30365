/// A CloudEvents 1.0 event, whichever content mode it arrived in.
public struct CloudEvent: Sendable, Hashable {
    /// `specversion`: always `1.0`.
    @inlinable public var specVersion: String {
        _read { yield storage.fields.specVersion }
        _modify { yield &storage.fields.specVersion }
    }
    /// `id`: unique per `source`.
    @inlinable public var id: String {
        _read { yield storage.fields.id }
        _modify { yield &storage.fields.id }
    }
    /// `source`: a URI reference naming the producer.
    @inlinable public var source: String {
        _read { yield storage.fields.source }
        _modify { yield &storage.fields.source }
    }
    /// `type`: the event type, e.g. `order.confirmed`.
    @inlinable public var type: String {
        _read { yield storage.fields.type }
        _modify { yield &storage.fields.type }
    }
    /// `time`, if present.
    @inlinable public var time: Timestamp? {
        _read { yield storage.fields.time }
        _modify { yield &storage.fields.time }
    }
    /// `subject`, if present.
    @inlinable public var subject: String? {
        _read { yield storage.fields.subject }
        _modify { yield &storage.fields.subject }
    }
    /// `datacontenttype`, if present.
    @inlinable public var dataContentType: String? {
        _read { yield storage.fields.dataContentType }
        _modify { yield &storage.fields.dataContentType }
    }
    /// `dataschema`, if present.
    @inlinable public var dataSchema: String? {
        _read { yield storage.fields.dataSchema }
        _modify { yield &storage.fields.dataSchema }
    }
    /// The event's data (JSON), or `nil` if it has none.
    @inlinable public var data: JSONValue? {
        _read { yield storage.fields.data }
        _modify { yield &storage.fields.data }
    }
    /// Extension attributes (any other attribute), as strings.
    @inlinable public var extensions: [String: String] {
        _read { yield storage.fields.extensions }
        _modify { yield &storage.fields.extensions }
    }

    // The fields live in one shared object, copied on the first write to a shared one: an event is
    // decoded once and copied as it goes through a batch (routed, decided, built on another
    // thread), and a copy of its fields retained and released each of its strings every time.
    // Inlinable accessors (see `SharedFields`): a getter copied the event's data out, a retain, for
    // every field a template reads.
    @usableFromInline var storage: SharedFields<Fields>

    @usableFromInline struct Fields: Hashable, Sendable {
        @usableFromInline var specVersion: String
        @usableFromInline var id: String
        @usableFromInline var source: String
        @usableFromInline var type: String
        @usableFromInline var time: Timestamp?
        @usableFromInline var subject: String?
        @usableFromInline var dataContentType: String?
        @usableFromInline var dataSchema: String?
        @usableFromInline var data: JSONValue?
        @usableFromInline var extensions: [String: String]
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
