/// Why an event could not be decoded. `code` is stable and bounded (metrics, dead-letter headers);
/// `message` is for people and never contains the event's data.
public struct EventError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error code.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The value (or the data of a binary-mode event) is not valid JSON.
        public static let notJSON = Code("event.not_json")
        /// A required attribute (`specversion`, `id`, `source`, `type`) is missing or empty.
        public static let missingAttribute = Code("event.missing_attribute")
        /// An attribute has the wrong JSON type or an invalid value.
        public static let badAttribute = Code("event.bad_attribute")
        /// `specversion` is not `1.0`.
        public static let unsupportedSpecVersion = Code("event.unsupported_spec_version")
        /// `time` is not an RFC 3339 date-time.
        public static let badTime = Code("event.bad_time")
        /// The event is larger than the configured limit.
        public static let oversize = Code("event.oversize")
    }

    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
