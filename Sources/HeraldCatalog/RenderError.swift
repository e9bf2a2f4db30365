import HeraldEvents

/// Why an event could not be rendered. `message` names the field but never contains the event's
/// data.
public struct RenderError: CodedError {
    public typealias Code = ErrorCode
    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }
}

extension ErrorCode {
    /// The event names no recipient (the kind's `recipients` path is missing, empty, or not a
    /// string or list of strings).
    public static let missingRecipient = ErrorCode("render.missing_recipient")
    /// A required field is missing from the event.
    public static let missingField = ErrorCode("render.missing_field")
    /// A field has the wrong type (a string where an int was declared, an unknown enum value...).
    public static let fieldTypeMismatch = ErrorCode("render.field_type_mismatch")
    /// The recipient's time zone is unknown to ICU.
    public static let badTimeZone = ErrorCode("render.bad_time_zone")
    /// ICU could not format the message.
    public static let formatFailed = ErrorCode("render.failed")
}
