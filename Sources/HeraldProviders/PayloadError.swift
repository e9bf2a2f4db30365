import HeraldEvents

/// Why no request could be built for a notification. `message` never contains the device token or
/// the notification's text.
public struct PayloadError: CodedError {
    public typealias Code = ErrorCode
    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }
}

extension ErrorCode {
    /// Even with the body shortened and optional fields dropped, the request exceeds the
    /// provider's limit. The worker dead-letters it.
    public static let payloadTooLarge = ErrorCode("payload_too_large")
    /// The device token is malformed for the provider (APNs tokens are hex).
    public static let invalidToken = ErrorCode("payload.invalid_token")
    /// The notification or device lacks something the provider requires.
    public static let invalidInput = ErrorCode("payload.invalid_input")
}
