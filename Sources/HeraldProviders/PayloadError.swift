/// Why no request could be built for a notification. `code` is stable (metrics, dead-letter
/// headers); `message` never contains the device token or the notification's text.
public struct PayloadError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// Even with the body shortened and optional fields dropped, the request exceeds the
        /// provider's limit. The worker dead-letters it.
        public static let payloadTooLarge = Code("payload_too_large")
        /// The device token is malformed for the provider (APNs tokens are hex).
        public static let invalidToken = Code("payload.invalid_token")
        /// The notification or device lacks something the provider requires.
        public static let invalidInput = Code("payload.invalid_input")
    }

    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
