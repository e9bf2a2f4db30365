import HeraldEvents
import HeraldPolicy
import HeraldProviders

/// One provider call, as the worker hands it to the sender on `herald.outbound` (key: the
/// recipient). The JSON is versioned by its `schema` member and documented in `docs/outbound.md`;
/// a consumer rejects a schema it does not know instead of guessing.
public struct OutboundMessage: Sendable, Hashable {
    /// The current schema. A change that a version-1 reader would misread gets a new version.
    public static let schema = "herald.outbound.v1"

    /// `hash(eventId, kind, recipient, device token)`: the same on every worker and redelivery.
    public var notificationID: String
    /// The domain event's id; for a digest, `digest:` and the window's identity.
    public var eventID: String
    public var kind: String
    public var category: String
    /// The catalog locale the text was rendered in (after any fallback); informational.
    public var locale: String?
    public var recipient: String
    public var provider: PushProvider
    public var app: String
    public var environment: Device.Environment
    public var token: String
    public var request: Request
    public var createdAt: Timestamp
    /// After this the notification is not worth sending; the sender drops it as `expired`.
    public var expiresAt: Timestamp?
    /// 1 for the worker's message; the sender counts retries up from it.
    public var attempt: Int
    /// W3C trace context from the event's `traceparent` / `tracestate` extensions.
    public var traceParent: String?
    public var traceState: String?

    /// The HTTP request, relative to the provider's endpoint (the sender picks the host: APNs
    /// production or sandbox, the FCM project, Expo).
    public struct Request: Sendable, Hashable {
        public var method: String
        public var path: String
        public var headers: [Header]
        /// A JSON document.
        public var body: [UInt8]

        public init(method: String = "POST", path: String, headers: [Header] = [], body: [UInt8]) {
            self.method = method
            self.path = path
            self.headers = headers
            self.body = body
        }
    }

    public struct Header: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    public init(
        notificationID: String,
        eventID: String,
        kind: String,
        category: String,
        recipient: String,
        provider: PushProvider,
        app: String,
        environment: Device.Environment,
        token: String,
        request: Request,
        createdAt: Timestamp,
        expiresAt: Timestamp?,
        attempt: Int = 1,
        traceParent: String? = nil,
        traceState: String? = nil,
        locale: String? = nil
    ) {
        self.notificationID = notificationID
        self.eventID = eventID
        self.kind = kind
        self.category = category
        self.locale = locale
        self.recipient = recipient
        self.provider = provider
        self.app = app
        self.environment = environment
        self.token = token
        self.request = request
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.attempt = attempt
        self.traceParent = traceParent
        self.traceState = traceState
    }

    /// The message as JSON; the request body is embedded as JSON, not as a string.
    public func encoded() -> [UInt8] {
        var writer = JSONStreamWriter(capacity: 512 + request.body.count)
        encode(into: &writer) { $0.raw(request.body) }
        return writer.bytes
    }

    /// Writes the message as JSON after what `writer` holds, with `writeBody` writing the request
    /// body (JSON) where it goes instead of `request.body`: the worker builds the body in place.
    /// If `writeBody` throws, what was written is incomplete.
    func encode<Failure: Error>(
        into writer: inout JSONStreamWriter,
        body writeBody: (inout JSONStreamWriter) throws(Failure) -> Void
    ) throws(Failure) {
        writer.beginObject()
        writer.member("schema", Self.schema)
        writer.member("notificationId", notificationID)
        writer.member("eventId", eventID)
        writer.member("kind", kind)
        writer.member("category", category)
        if let locale { writer.member("locale", locale) }
        writer.member("recipient", recipient)
        writer.member("provider", provider.rawValue)
        writer.member("app", app)
        writer.member("environment", environment.rawValue)
        writer.key("target")
        writer.beginObject()
        writer.member("token", token)
        writer.endObject()
        writer.key("request")
        writer.beginObject()
        writer.member("method", request.method)
        writer.member("path", request.path)
        writer.key("headers")
        writer.beginObject()
        for header in request.headers { writer.member(header.name, header.value) }
        writer.endObject()
        writer.key("body")
        try writeBody(&writer)
        writer.endObject()
        writer.member("createdAt", timestamp: createdAt)
        if let expiresAt { writer.member("expiresAt", timestamp: expiresAt) }
        writer.member("attempt", integer: Int64(attempt))
        if traceParent != nil || traceState != nil {
            writer.key("trace")
            writer.beginObject()
            if let traceParent { writer.member("traceparent", traceParent) }
            if let traceState { writer.member("tracestate", traceState) }
            writer.endObject()
        }
        writer.endObject()
    }

    /// Reads a message written by ``encoded()``.
    ///
    /// - Throws: ``OutboundMessageError`` naming the member that is missing or wrong.
    public init(decoding bytes: some Collection<UInt8>) throws(OutboundMessageError) {
        // Read where the bytes are when they are in one piece (a consumed Kafka value).
        if let result = bytes.withContiguousStorageIfAvailable({ buffer in
            Result { () throws(OutboundMessageError) in try Self(decoding: UnsafeRawBufferPointer(buffer)) }
        }) {
            self = try result.get()
        } else {
            self = try Array(bytes).withUnsafeBytes { buffer in
                Result { () throws(OutboundMessageError) in try Self(decoding: buffer) }
            }.get()
        }
    }

    private init(decoding bytes: UnsafeRawBufferPointer) throws(OutboundMessageError) {
        // The body is the provider's request body exactly as the worker wrote it: checked, not
        // built and written again (the sender's costliest step per call otherwise).
        guard let (value, rawBody) = try? JSONParser().parse(bytes, keepingRawAt: ["request", "body"]),
            case .object(let object) = value
        else {
            throw OutboundMessageError(message: "not a JSON object")
        }
        func string(_ value: JSONValue?, _ name: String) throws(OutboundMessageError) -> String {
            guard case .string(let text)? = value else {
                throw OutboundMessageError(message: "'\(name)' must be a string")
            }
            return text
        }
        func timestamp(_ value: JSONValue?, _ name: String) throws(OutboundMessageError) -> Timestamp {
            guard let time = Timestamp(rfc3339: try string(value, name)) else {
                throw OutboundMessageError(message: "'\(name)' must be an RFC 3339 time")
            }
            return time
        }
        let schema = try string(object["schema"], "schema")
        guard schema == Self.schema else { throw OutboundMessageError(message: "unknown schema '\(schema)'") }
        guard let provider = PushProvider(rawValue: try string(object["provider"], "provider")) else {
            throw OutboundMessageError(message: "'provider' must be apns, fcm or expo")
        }
        guard let environment = Device.Environment(rawValue: try string(object["environment"], "environment")) else {
            throw OutboundMessageError(message: "'environment' must be sandbox or production")
        }
        guard case .object(let request)? = object["request"], let rawBody else {
            throw OutboundMessageError(message: "'request' must be an object with a 'body'")
        }
        var headers: [Header] = []
        if case .object(let members)? = request["headers"] {
            for (name, value) in members { headers.append(Header(name, try string(value, "request.headers.\(name)"))) }
        }
        guard case .number(let attempt)? = object["attempt"], let attemptNumber = Int(attempt) else {
            throw OutboundMessageError(message: "'attempt' must be an integer")
        }
        let trace = object["trace"]
        self.init(
            notificationID: try string(object["notificationId"], "notificationId"),
            eventID: try string(object["eventId"], "eventId"),
            kind: try string(object["kind"], "kind"),
            category: try string(object["category"], "category"),
            recipient: try string(object["recipient"], "recipient"),
            provider: provider,
            app: try string(object["app"], "app"),
            environment: environment,
            token: try string(object["target"]?["token"], "target.token"),
            request: Request(
                method: try string(request["method"], "request.method"),
                path: try string(request["path"], "request.path"),
                headers: headers,
                body: Array(UnsafeRawBufferPointer(rebasing: bytes[rawBody]))
            ),
            createdAt: try timestamp(object["createdAt"], "createdAt"),
            expiresAt: object["expiresAt"] == nil ? nil : try timestamp(object["expiresAt"], "expiresAt"),
            attempt: attemptNumber,
            traceParent: trace?["traceparent"]?.stringValue,
            traceState: trace?["tracestate"]?.stringValue,
            locale: object["locale"]?.stringValue
        )
    }
}

/// An `herald.outbound` message that cannot be read.
public struct OutboundMessageError: Error, Sendable, CustomStringConvertible {
    public static let code = "outbound.invalid_message"
    public var message: String
    public var description: String { "\(Self.code): \(message)" }
}
