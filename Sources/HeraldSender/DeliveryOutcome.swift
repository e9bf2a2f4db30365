import HeraldEvents

/// What one provider answer means for a notification.
public enum DeliveryOutcome: Sendable, Equatable {
    /// The provider took it. Expo's `receipt` is the ticket id whose receipt is fetched later.
    case delivered(receipt: String? = nil)
    /// Try again later; `after` is the provider's `Retry-After`, if it sent one.
    case retry(Reason, after: Duration? = nil)
    /// The device token is dead: tell the directory (`at`: when the provider says it died).
    case invalidToken(Reason, at: Timestamp? = nil)
    /// Herald is set up wrong (key, project, topic): no retry can succeed until someone fixes it.
    case configuration(Reason)
    /// This request can never succeed (malformed, too large).
    case permanent(Reason)

    /// `provider.code` and a human message without personal data.
    public struct Reason: Sendable, Hashable, CustomStringConvertible {
        /// `apns.Unregistered`, `fcm.UNREGISTERED`, `expo.DeviceNotRegistered`, `transport.timeout`.
        public var code: String
        public var message: String

        public init(_ code: String, _ message: String) {
            self.code = code
            self.message = message
        }

        public var description: String { "\(code): \(message)" }
    }

    /// The classes of the table in `docs/providers.md`.
    public enum Class: String, Sendable, CaseIterable {
        case delivered
        case retry
        case invalidToken = "invalidate-token"
        case configuration
        case permanent
    }

    public var `class`: Class {
        switch self {
        case .delivered: .delivered
        case .retry: .retry
        case .invalidToken: .invalidToken
        case .configuration: .configuration
        case .permanent: .permanent
        }
    }

    public var reason: Reason? {
        switch self {
        case .delivered: nil
        case .retry(let reason, _), .invalidToken(let reason, _), .configuration(let reason), .permanent(let reason):
            reason
        }
    }
}

/// Every provider answer Herald knows, and what it means. `docs/providers.md` prints these tables.
public enum Classification {
    /// APNs `reason` values (HTTP status in the comment) and their class.
    public static let apnsReasons: [(reason: String, status: Int, class: DeliveryOutcome.Class)] = [
        ("BadCollapseId", 400, .permanent),
        // The token is not a token of this environment or app: it can never be delivered to.
        ("BadDeviceToken", 400, .invalidToken),
        ("BadExpirationDate", 400, .permanent),
        ("BadMessageId", 400, .permanent),
        ("BadPriority", 400, .permanent),
        ("BadTopic", 400, .configuration),
        ("DeviceTokenNotForTopic", 400, .invalidToken),
        ("DuplicateHeaders", 400, .permanent),
        ("IdleTimeout", 400, .retry),
        ("InvalidPushType", 400, .permanent),
        ("MissingDeviceToken", 400, .permanent),
        ("MissingTopic", 400, .configuration),
        ("PayloadEmpty", 400, .permanent),
        ("TopicDisallowed", 400, .configuration),
        ("BadCertificate", 403, .configuration),
        ("BadCertificateEnvironment", 403, .configuration),
        // A fresh provider token is signed before the retry.
        ("ExpiredProviderToken", 403, .retry),
        ("Forbidden", 403, .configuration),
        ("InvalidProviderToken", 403, .configuration),
        ("MissingProviderToken", 403, .configuration),
        ("UnrelatedKeyIdInToken", 403, .configuration),
        ("BadEnvironmentKeyIdInToken", 403, .configuration),
        ("BadPath", 404, .configuration),
        ("MethodNotAllowed", 405, .configuration),
        ("ExpiredToken", 410, .invalidToken),
        ("Unregistered", 410, .invalidToken),
        ("PayloadTooLarge", 413, .permanent),
        ("TooManyProviderTokenUpdates", 429, .retry),
        ("TooManyRequests", 429, .retry),
        ("InternalServerError", 500, .retry),
        ("ServiceUnavailable", 503, .retry),
        ("Shutdown", 503, .retry),
    ]

    /// FCM HTTP v1 `details[].errorCode` values and their class.
    public static let fcmErrorCodes: [(code: String, status: Int, class: DeliveryOutcome.Class)] = [
        // No detail: the status decides (5xx retry, 4xx permanent).
        ("UNSPECIFIED_ERROR", 500, .retry),
        ("INVALID_ARGUMENT", 400, .permanent),
        ("UNREGISTERED", 404, .invalidToken),
        // The token belongs to another sender (Firebase project): it is not ours to use.
        ("SENDER_ID_MISMATCH", 403, .invalidToken),
        ("QUOTA_EXCEEDED", 429, .retry),
        ("UNAVAILABLE", 503, .retry),
        ("INTERNAL", 500, .retry),
        // The APNs credentials uploaded to Firebase are missing or wrong.
        ("THIRD_PARTY_AUTH_ERROR", 401, .configuration),
    ]

    /// Expo ticket and receipt `details.error` values and their class.
    public static let expoErrors: [(code: String, class: DeliveryOutcome.Class)] = [
        ("DeviceNotRegistered", .invalidToken),
        ("MessageTooBig", .permanent),
        ("MessageRateExceeded", .retry),
        ("MismatchSenderId", .configuration),
        ("InvalidCredentials", .configuration),
        ("ExpoError", .retry),
        ("ProviderError", .retry),
        ("DeveloperError", .permanent),
    ]

    private static let apnsTable = Dictionary(uniqueKeysWithValues: apnsReasons.map { ($0.reason, $0.class) })
    private static let fcmTable = Dictionary(uniqueKeysWithValues: fcmErrorCodes.map { ($0.code, $0.class) })
    private static let expoTable = Dictionary(uniqueKeysWithValues: expoErrors.map { ($0.code, $0.class) })

    /// An APNs answer: status, `reason` and `timestamp` from the body, `Retry-After` if any.
    public static func apns(status: Int, reason: String?, timestamp: Int64?, retryAfter: Duration?) -> DeliveryOutcome {
        if status == 200 { return .delivered() }
        let name = reason.map(answerName) ?? "HTTP\(status)"
        let why = DeliveryOutcome.Reason("apns.\(name)", "APNs answered \(status) \(name)")
        let known = reason.flatMap { apnsTable[$0] }
        return outcome(
            known ?? fallback(status),
            why,
            at: timestamp.map { Timestamp(epochMilliseconds: $0) },
            retryAfter
        )
    }

    /// An FCM answer: status, the `FcmError` detail's `errorCode` (if any), `Retry-After` if any. A
    /// 429 waits at least a minute, as FCM asks.
    public static func fcm(
        status: Int,
        errorCode: String?,
        rpcStatus: String?,
        retryAfter: Duration?
    ) -> DeliveryOutcome {
        if status == 200 { return .delivered() }
        let name = (errorCode ?? rpcStatus).map(answerName) ?? "HTTP\(status)"
        let why = DeliveryOutcome.Reason("fcm.\(name)", "FCM answered \(status) \(name)")
        var wait = retryAfter
        if status == 429 { wait = max(wait ?? .zero, .seconds(60)) }
        if let errorCode, let known = fcmTable[errorCode] { return outcome(known, why, at: nil, wait) }
        // Without an FcmError detail, a 401 or 403 is Herald's OAuth or project set-up, and a 404 the project.
        switch status {
        case 401, 403, 404: return .configuration(why)
        default: return outcome(fallback(status), why, at: nil, wait)
        }
    }

    /// An Expo ticket or receipt error (`details.error`).
    public static func expo(error code: String?, message: String?) -> DeliveryOutcome {
        let name = code.map(answerName) ?? "ExpoError"
        let why = DeliveryOutcome.Reason("expo.\(name)", "Expo: \(name)")
        return outcome(expoTable[name] ?? .permanent, why, at: nil, nil)
    }

    /// An Expo request-level error (`errors[].code`), which applies to every message of the request.
    public static func expoRequest(status: Int, code: String?, retryAfter: Duration?) -> DeliveryOutcome {
        let name = code.map(answerName) ?? "HTTP\(status)"
        let why = DeliveryOutcome.Reason("expo.\(name)", "Expo answered \(status) \(name)")
        switch status {
        case 401, 403: return .configuration(why)
        case 429: return .retry(why, after: retryAfter)
        default: return outcome(fallback(status), why, at: nil, retryAfter)
        }
    }

    /// No answer at all: a refused or dropped connection, a TLS failure, a deadline.
    public static func transport(_ code: String, _ message: String) -> DeliveryOutcome {
        .retry(DeliveryOutcome.Reason("transport.\(code)", message))
    }

    /// The longest answer name (an APNs reason, an FCM or Expo error code) kept, in bytes.
    public static let maximumAnswerNameBytes = 64

    /// A provider's name for its answer as Herald writes it into error codes, dead-letter headers,
    /// logs and metric labels: printable ASCII, other bytes as `_`, at most 64 bytes (the
    /// providers' own names are short words). The name comes from whatever answered — a proxy, a
    /// test double — and a long one would go into every dead letter's headers, where a record over
    /// the broker's size limit would stop the sender.
    static func answerName(_ name: String) -> String {
        var bytes = name.utf8.prefix(maximumAnswerNameBytes).map { (0x21...0x7E).contains($0) ? $0 : UInt8(ascii: "_") }
        if bytes.isEmpty { bytes = Array("empty".utf8) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// An unknown answer: 5xx and 429 may pass, other 4xx will not.
    static func fallback(_ status: Int) -> DeliveryOutcome.Class {
        status >= 500 || status == 429 || status == 408 ? .retry : .permanent
    }

    static func outcome(
        _ kind: DeliveryOutcome.Class,
        _ reason: DeliveryOutcome.Reason,
        at: Timestamp?,
        _ retryAfter: Duration?
    ) -> DeliveryOutcome {
        switch kind {
        case .delivered: .delivered()
        case .retry: .retry(reason, after: retryAfter)
        case .invalidToken: .invalidToken(reason, at: at)
        case .configuration: .configuration(reason)
        case .permanent: .permanent(reason)
        }
    }
}

// A call that got no usable answer ends with the outcome that stands for it, carried as the error
// of a `Result`.
extension DeliveryOutcome: Error {}
