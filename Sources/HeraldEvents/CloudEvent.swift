/// A CloudEvents 1.0 event, whichever content mode it arrived in.
public struct CloudEvent: Sendable, Hashable {
    /// `specversion`: always `1.0`.
    public var specVersion: String
    /// `id`: unique per `source`.
    public var id: String
    /// `source`: a URI reference naming the producer.
    public var source: String
    /// `type`: the event type, e.g. `order.confirmed`.
    public var type: String
    /// `time`, if present.
    public var time: Timestamp?
    /// `subject`, if present.
    public var subject: String?
    /// `datacontenttype`, if present.
    public var dataContentType: String?
    /// `dataschema`, if present.
    public var dataSchema: String?
    /// The event's data (JSON), or `nil` if it has none.
    public var data: JSONValue?
    /// Extension attributes (any other attribute), as strings.
    public var extensions: [String: String]

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
        self.specVersion = "1.0"
        self.id = id
        self.source = source
        self.type = type
        self.time = time
        self.subject = subject
        self.dataContentType = dataContentType
        self.dataSchema = dataSchema
        self.data = data
        self.extensions = extensions
    }
}
