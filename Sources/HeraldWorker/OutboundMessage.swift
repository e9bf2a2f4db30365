import HeraldEvents
import HeraldPolicy
import HeraldProviders

/// One provider call, as the worker hands it to the sender on `herald.outbound` (key: the
/// recipient). The JSON is versioned by its `schema` member and documented in `docs/outbound.md`;
/// a consumer rejects a schema it does not know instead of guessing.
public struct OutboundMessage: Sendable, Hashable {
    /// The current schema. A change that a version-1 reader would misread gets a new version.
    public static let schema = schemaLiteral.description
    static let schemaLiteral: StaticString = "herald.outbound.v1"
    /// What `attempt` may be: the worker writes 1 and each retry counts one more.
    public static let attempts = 1...1_000_000
    /// The longest `notificationId` a reader accepts, in bytes. The worker writes 32 hex digits; the
    /// sender keys its delivery ledger by the id, and PostgreSQL refuses an index entry over 2,704
    /// bytes: a longer id would have its delivery refused on every try and hold its partition.
    public static let maximumNotificationIDBytes = 128
    /// The longest `recipient` and `target.token` a reader accepts, in bytes: the directory's limit
    /// on its values, which the worker took them from.
    public static let maximumIdentityBytes = DirectoryEvent.maximumValueBytes
    /// The largest encoded message a reader accepts, in bytes. The worker writes a few KB (provider
    /// bodies are at most 4 KB); the sender copies a message whole to a retry topic, and one too
    /// large for it would hold its partition for ever.
    public static let maximumEncodedBytes = 256 * 1024
    /// The longest `request.path`, and header value, a reader accepts, in bytes: an APNs path holds
    /// a token of at most 200 hex digits.
    public static let maximumRequestLineBytes = 4096
    /// Headers the sender sets itself, or that HTTP/2 forbids, which a message may not carry.
    static let reservedHeaders: Set<String> = [
        "authorization", "connection", "host", "keep-alive", "proxy-connection", "te", "transfer-encoding",
        "upgrade",
    ]

    /// Whether `name` is an HTTP field name as HTTP/2 carries it (RFC 9110 token characters, lower
    /// case) and not one of ``reservedHeaders``.
    static func isHeaderName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 256, !reservedHeaders.contains(name) else { return false }
        return name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
            case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
                UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
                true
            default: false
            }
        }
    }

    /// `hash(eventId, kind, recipient, device token)`: the same on every worker and redelivery.
    public var notificationID: String {
        get { storage.fields.notificationID }
        _modify { yield &storage.fields.notificationID }
    }
    /// The domain event's id; for a digest, `digest:` and the window's identity.
    public var eventID: String {
        get { storage.fields.eventID }
        _modify { yield &storage.fields.eventID }
    }
    public var kind: String {
        get { storage.fields.kind }
        _modify { yield &storage.fields.kind }
    }
    public var category: String {
        get { storage.fields.category }
        _modify { yield &storage.fields.category }
    }
    /// The catalog locale the text was rendered in (after any fallback); informational.
    public var locale: String? {
        get { storage.fields.locale }
        _modify { yield &storage.fields.locale }
    }
    public var recipient: String {
        get { storage.fields.recipient }
        _modify { yield &storage.fields.recipient }
    }
    public var provider: PushProvider {
        get { storage.fields.provider }
        _modify { yield &storage.fields.provider }
    }
    public var app: String {
        get { storage.fields.app }
        _modify { yield &storage.fields.app }
    }
    public var environment: Device.Environment {
        get { storage.fields.environment }
        _modify { yield &storage.fields.environment }
    }
    public var token: String {
        get { storage.fields.token }
        _modify { yield &storage.fields.token }
    }
    public var request: Request {
        get { storage.fields.request }
        _modify { yield &storage.fields.request }
    }
    public var createdAt: Timestamp {
        get { storage.fields.createdAt }
        _modify { yield &storage.fields.createdAt }
    }
    /// After this the notification is not worth sending; the sender drops it as `expired`.
    public var expiresAt: Timestamp? {
        get { storage.fields.expiresAt }
        _modify { yield &storage.fields.expiresAt }
    }
    /// 1 for the worker's message; the sender counts retries up from it.
    public var attempt: Int {
        get { storage.fields.attempt }
        _modify { yield &storage.fields.attempt }
    }
    /// W3C trace context from the event's `traceparent` / `tracestate` extensions.
    public var traceParent: String? {
        get { storage.fields.traceParent }
        _modify { yield &storage.fields.traceParent }
    }
    public var traceState: String? {
        get { storage.fields.traceState }
        _modify { yield &storage.fields.traceState }
    }

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

    // The fields live in one shared object, copied on the first write to a shared one: the sender
    // hands a message from its batch to the provider's client, to the call's outcome and on to the
    // ledger, and a copy of sixteen fields retained and released each of their strings every time.
    private var storage: SharedFields<Fields>

    private struct Fields: Hashable, Sendable {
        var notificationID: String
        var eventID: String
        var kind: String
        var category: String
        var locale: String?
        var recipient: String
        var provider: PushProvider
        var app: String
        var environment: Device.Environment
        var token: String
        var request: Request
        var createdAt: Timestamp
        var expiresAt: Timestamp?
        var attempt: Int
        var traceParent: String?
        var traceState: String?
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
        storage = SharedFields(
            Fields(
                notificationID: notificationID,
                eventID: eventID,
                kind: kind,
                category: category,
                locale: locale,
                recipient: recipient,
                provider: provider,
                app: app,
                environment: environment,
                token: token,
                request: request,
                createdAt: createdAt,
                expiresAt: expiresAt,
                attempt: attempt,
                traceParent: traceParent,
                traceState: traceState
            )
        )
    }

    /// The message as JSON; the request body is embedded as JSON, not as a string.
    public func encoded() -> [UInt8] {
        var writer = JSONStreamWriter(capacity: 512 + request.body.count)
        encode(into: &writer) { $0.raw(request.body) }
        return writer.bytes
    }

    /// Writes the message as JSON after what `writer` holds, with `writeBody` writing the request
    /// body (JSON) where it goes instead of `request.body`. If `writeBody` throws, what was
    /// written is incomplete.
    func encode<Failure: Error>(
        into writer: inout JSONStreamWriter,
        body writeBody: (inout JSONStreamWriter) throws(Failure) -> Void
    ) throws(Failure) {
        let fields = storage.fields
        try Self.encode(
            notificationID: fields.notificationID,
            eventID: fields.eventID,
            kind: fields.kind,
            category: fields.category,
            locale: fields.locale,
            recipient: fields.recipient,
            provider: fields.provider,
            app: fields.app,
            environment: fields.environment,
            token: fields.token,
            createdAt: fields.createdAt,
            expiresAt: fields.expiresAt,
            attempt: fields.attempt,
            trace: (fields.traceParent, fields.traceState),
            into: &writer
        ) { writer throws(Failure) in
            writer.member("method", fields.request.method)
            writer.member("path", fields.request.path)
            writer.key("headers")
            writer.beginObject()
            for header in fields.request.headers { writer.member(header.name, header.value) }
            writer.endObject()
            writer.key("body")
            try writeBody(&writer)
        }
    }

    /// Writes a message as JSON from its fields, borrowed where they are, with `writeRequest`
    /// writing the request object's members (`method`, `path`, `headers`, `body`): the worker writes
    /// its messages this way, without making an ``OutboundMessage`` (and retaining its strings) for
    /// each. The one layout of the schema: ``encoded()`` writes through it too.
    static func encode<Failure: Error>(
        notificationID: String,
        eventID: String,
        kind: String,
        category: String,
        locale: String?,
        recipient: String,
        provider: PushProvider,
        app: String,
        environment: Device.Environment,
        token: String,
        createdAt: Timestamp,
        expiresAt: Timestamp?,
        attempt: Int,
        trace: (parent: String?, state: String?),
        into writer: inout JSONStreamWriter,
        request writeRequest: (inout JSONStreamWriter) throws(Failure) -> Void
    ) throws(Failure) {
        writer.beginObject()
        writer.member("schema", literal: Self.schemaLiteral)
        writer.member("notificationId", notificationID)
        writer.member("eventId", eventID)
        writer.member("kind", kind)
        writer.member("category", category)
        if let locale { writer.member("locale", locale) }
        writer.member("recipient", recipient)
        // The names of the provider and the environment as literals: written without the escape
        // check their raw values (strings) would get.
        switch provider {
        case .apns: writer.member("provider", literal: "apns")
        case .fcm: writer.member("provider", literal: "fcm")
        case .expo: writer.member("provider", literal: "expo")
        }
        writer.member("app", app)
        switch environment {
        case .production: writer.member("environment", literal: "production")
        case .sandbox: writer.member("environment", literal: "sandbox")
        }
        writer.key("target")
        writer.beginObject()
        writer.member("token", token)
        writer.endObject()
        writer.key("request")
        writer.beginObject()
        try writeRequest(&writer)
        writer.endObject()
        writer.member("createdAt", timestamp: createdAt)
        if let expiresAt { writer.member("expiresAt", timestamp: expiresAt) }
        writer.member("attempt", integer: Int64(attempt))
        if trace.parent != nil || trace.state != nil {
            writer.key("trace")
            writer.beginObject()
            if let parent = trace.parent { writer.member("traceparent", parent) }
            if let state = trace.state { writer.member("tracestate", state) }
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
        // Read member by member, not as a tree: the sender reads every message, and building the
        // tree and releasing it cost more than the reading. The body is the provider's request body
        // exactly as the worker wrote it: checked, not built and written again.
        guard bytes.count <= Self.maximumEncodedBytes else {
            throw OutboundMessageError(message: "larger than \(Self.maximumEncodedBytes) bytes")
        }
        guard let read = try? Members(bytes) else { throw OutboundMessageError(message: "not a JSON object") }
        func string(_ value: Members.Value, _ name: String) throws(OutboundMessageError) -> String {
            guard case .string(let text) = value else {
                throw OutboundMessageError(message: "'\(name)' must be a string")
            }
            return text
        }
        func timestamp(_ value: Members.Value, _ name: String) throws(OutboundMessageError) -> Timestamp {
            guard let time = Timestamp(rfc3339: try string(value, name)) else {
                throw OutboundMessageError(message: "'\(name)' must be an RFC 3339 time")
            }
            return time
        }
        // Checked in the order a tree was once read in, so a message keeps its first complaint.
        let schema = try string(read.schema, "schema")
        guard schema == Self.schema else { throw OutboundMessageError(message: "unknown schema '\(schema)'") }
        guard let provider = PushProvider(rawValue: try string(read.provider, "provider")) else {
            throw OutboundMessageError(message: "'provider' must be apns, fcm or expo")
        }
        guard let environment = Device.Environment(rawValue: try string(read.environment, "environment")) else {
            throw OutboundMessageError(message: "'environment' must be sandbox or production")
        }
        guard let body = read.body else {
            throw OutboundMessageError(message: "'request' must be an object with a 'body'")
        }
        var headers: [Header] = []
        headers.reserveCapacity(read.headers.count)
        for (name, value) in read.headers {
            let text = try string(value, "request.headers.\(name)")
            // What goes on the wire as HTTP/2 header fields: a name HTTP/2 refuses (upper case, a
            // pseudo-header) or a value holding a line break would fail the call on every try, and
            // the sender sets authentication itself.
            guard Self.isHeaderName(name) else {
                throw OutboundMessageError(
                    message: "'request.headers' names must be lower-case HTTP field names other than "
                        + Self.reservedHeaders.sorted().joined(separator: ", ")
                )
            }
            guard text.utf8.count <= Self.maximumRequestLineBytes,
                !text.utf8.contains(where: { $0 == 0 || $0 == 0x0A || $0 == 0x0D })
            else {
                throw OutboundMessageError(
                    message:
                        "'request.headers.\(name)' must be at most \(Self.maximumRequestLineBytes) bytes without CR, LF or U+0000"
                )
            }
            headers.append(Header(name, text))
        }
        let method = try string(read.method, "request.method")
        guard method == "POST" else { throw OutboundMessageError(message: "'request.method' must be POST") }
        let path = try string(read.path, "request.path")
        guard !path.isEmpty, path.utf8.count <= Self.maximumRequestLineBytes,
            path.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
        else {
            throw OutboundMessageError(
                message: "'request.path' must be 1 to \(Self.maximumRequestLineBytes) printable ASCII characters"
            )
        }
        // Bounded: the sender counts a retry as `attempt + 1`, which trapped for Int.max (a record on
        // the outbound topic could crash every sender that read it).
        guard case .number(let attempt) = read.attempt, let attemptNumber = Int(attempt),
            Self.attempts.contains(attemptNumber)
        else {
            throw OutboundMessageError(message: "'attempt' must be an integer from 1 to \(Self.attempts.upperBound)")
        }
        // What the sender's ledger keeps (the id; the recipient and token of an Expo ticket) must be
        // something every store can keep: refused by PostgreSQL (U+0000, an over-long key), the
        // message's group would be retried for ever. The values are personal data: not quoted.
        let notificationID = try string(read.notificationID, "notificationId")
        guard notificationID.utf8.count <= Self.maximumNotificationIDBytes,
            !notificationID.isEmpty, notificationID.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
        else {
            throw OutboundMessageError(
                message: "'notificationId' must be 1 to \(Self.maximumNotificationIDBytes) printable ASCII characters"
            )
        }
        func identity(_ value: Members.Value, _ name: String) throws(OutboundMessageError) -> String {
            let text = try string(value, name)
            guard !text.isEmpty, text.utf8.count <= Self.maximumIdentityBytes, !text.utf8.contains(0) else {
                throw OutboundMessageError(
                    message: "'\(name)' must be 1 to \(Self.maximumIdentityBytes) bytes without U+0000"
                )
            }
            return text
        }
        let recipient = try identity(read.recipient, "recipient")
        let token = try identity(read.token, "target.token")
        self.init(
            notificationID: notificationID,
            eventID: try string(read.eventID, "eventId"),
            kind: try string(read.kind, "kind"),
            category: try string(read.category, "category"),
            recipient: recipient,
            provider: provider,
            app: try string(read.app, "app"),
            environment: environment,
            token: token,
            request: Request(
                method: method,
                path: path,
                headers: headers,
                body: Array(UnsafeRawBufferPointer(rebasing: bytes[body]))
            ),
            createdAt: try timestamp(read.createdAt, "createdAt"),
            expiresAt: read.expiresAt == .absent ? nil : try timestamp(read.expiresAt, "expiresAt"),
            attempt: attemptNumber,
            traceParent: read.traceParent.string,
            traceState: read.traceState.string,
            locale: read.locale.string
        )
    }

    /// The members of an encoded message, as read and before they are checked. Where a name
    /// appears twice in an object, its first member counts (as a lookup in a tree would find).
    private struct Members {
        enum Value: Equatable {
            case absent
            case string(String)
            case number(String)
            /// Any other JSON value.
            case other

            var string: String? {
                if case .string(let text) = self { text } else { nil }
            }
        }

        var schema = Value.absent
        var notificationID = Value.absent
        var eventID = Value.absent
        var kind = Value.absent
        var category = Value.absent
        var locale = Value.absent
        var recipient = Value.absent
        var provider = Value.absent
        var app = Value.absent
        var environment = Value.absent
        var token = Value.absent
        var method = Value.absent
        var path = Value.absent
        var headers: [(name: String, value: Value)] = []
        /// Where the request body's bytes are.
        var body: Range<Int>?
        var createdAt = Value.absent
        var expiresAt = Value.absent
        var attempt = Value.absent
        var traceParent = Value.absent
        var traceState = Value.absent

        /// Nil when `bytes` hold JSON but not an object.
        ///
        /// - Throws: `JSONParser.Failure` when `bytes` are not JSON.
        init?(_ bytes: UnsafeRawBufferPointer) throws(JSONParser.Failure) {
            var reader = JSONReader(bytes)
            guard try reader.beginObject() else { return nil }
            var seen = Seen()
            while let name = try reader.nextMember() {
                switch name {
                case "schema" where seen.first(0): schema = try Self.value(&reader)
                case "notificationId" where seen.first(1): notificationID = try Self.value(&reader)
                case "eventId" where seen.first(2): eventID = try Self.value(&reader)
                case "kind" where seen.first(3): kind = try Self.value(&reader)
                case "category" where seen.first(4): category = try Self.value(&reader)
                case "locale" where seen.first(5): locale = try Self.value(&reader)
                case "recipient" where seen.first(6): recipient = try Self.value(&reader)
                case "provider" where seen.first(7): provider = try Self.value(&reader)
                case "app" where seen.first(8): app = try Self.value(&reader)
                case "environment" where seen.first(9): environment = try Self.value(&reader)
                case "createdAt" where seen.first(10): createdAt = try Self.value(&reader)
                case "expiresAt" where seen.first(11): expiresAt = try Self.value(&reader)
                case "attempt" where seen.first(12): attempt = try Self.value(&reader)
                case "target" where seen.first(13):
                    guard try reader.beginObject() else { break }
                    var inner = Seen()
                    while let name = try reader.nextMember() {
                        if name == "token" && inner.first(0) {
                            token = try Self.value(&reader)
                        } else {
                            try reader.skipValue()
                        }
                    }
                case "request" where seen.first(14): try readRequest(&reader)
                case "trace" where seen.first(15):
                    guard try reader.beginObject() else { break }
                    var inner = Seen()
                    while let name = try reader.nextMember() {
                        switch name {
                        case "traceparent" where inner.first(0): traceParent = try Self.value(&reader)
                        case "tracestate" where inner.first(1): traceState = try Self.value(&reader)
                        default: try reader.skipValue()
                        }
                    }
                default: try reader.skipValue()
                }
            }
            try reader.end()
        }

        private mutating func readRequest(_ reader: inout JSONReader) throws(JSONParser.Failure) {
            guard try reader.beginObject() else { return }
            var seen = Seen()
            while let name = try reader.nextMember() {
                switch name {
                case "method" where seen.first(0): method = try Self.value(&reader)
                case "path" where seen.first(1): path = try Self.value(&reader)
                case "body" where seen.first(2): body = try reader.skipValue()
                case "headers" where seen.first(3):
                    guard try reader.beginObject() else { break }
                    // Every member, repeated names too: a header may be sent twice.
                    while let header = try reader.nextMember() { headers.append((header, try Self.value(&reader))) }
                default: try reader.skipValue()
                }
            }
        }

        /// Which of an object's known member names have been read: a name's first member counts.
        private struct Seen {
            private var bits: UInt32 = 0

            /// Whether this is the first member named by `bit`, marking it read.
            mutating func first(_ bit: Int) -> Bool {
                defer { bits |= 1 << bit }
                return bits & (1 << bit) == 0
            }
        }

        private static func value(_ reader: inout JSONReader) throws(JSONParser.Failure) -> Value {
            switch reader.peek() {
            case .string?: return try reader.string().map(Value.string) ?? .other
            case .number?: return try reader.number().map(Value.number) ?? .other
            default:
                try reader.skipValue()
                return .other
            }
        }
    }
}

/// An `herald.outbound` message that cannot be read.
public struct OutboundMessageError: Error, Sendable, CustomStringConvertible {
    public static let code = "outbound.invalid_message"
    public var message: String
    public var description: String { "\(Self.code): \(message)" }
}
