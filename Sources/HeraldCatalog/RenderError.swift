/// Why an event could not be rendered. `code` is stable (metrics, dead-letter headers); `message`
/// names the field but never contains the event's data.
public struct RenderError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The event names no recipient (the kind's `recipients` path is missing, empty, or not a
        /// string or list of strings).
        public static let missingRecipient = Code("render.missing_recipient")
        /// A required field is missing from the event.
        public static let missingField = Code("render.missing_field")
        /// A field has the wrong type (a string where an int was declared, an unknown enum value...).
        public static let fieldTypeMismatch = Code("render.field_type_mismatch")
        /// The recipient's time zone is unknown to ICU.
        public static let badTimeZone = Code("render.bad_time_zone")
        /// ICU could not format the message.
        public static let formatFailed = Code("render.failed")
    }

    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
