/// Why an event could not be decoded. `message` never contains the event's data.
public struct EventError: CodedError {
    public typealias Code = ErrorCode
    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }
}

extension ErrorCode {
    /// The value (or the data of a binary-mode event) is not valid JSON.
    public static let notJSON = ErrorCode("event.not_json")
    /// A required attribute (`specversion`, `id`, `source`, `type`) is missing or empty.
    public static let missingAttribute = ErrorCode("event.missing_attribute")
    /// An attribute has the wrong JSON type or an invalid value.
    public static let badAttribute = ErrorCode("event.bad_attribute")
    /// `specversion` is not `1.0`.
    public static let unsupportedSpecVersion = ErrorCode("event.unsupported_spec_version")
    /// `time` is not an RFC 3339 date-time.
    public static let badTime = ErrorCode("event.bad_time")
    /// The event is larger than the configured limit.
    public static let oversize = ErrorCode("event.oversize")
}
