/// The names of Herald's own record headers, written on dead-letter and retry records as UTF-8
/// strings (documented in `docs/kafka.md`). The original record's key, value and headers are kept
/// unchanged beside them.
public enum HeraldHeader {
    /// The stable error code.
    public static let errorCode = "herald.error.code"
    /// The human message (never a token, user id or secret).
    public static let errorMessage = "herald.error.message"
    /// The topic the record was read from.
    public static let originalTopic = "herald.original.topic"
    /// Its partition, in decimal.
    public static let originalPartition = "herald.original.partition"
    /// Its offset, in decimal.
    public static let originalOffset = "herald.original.offset"
    /// Its timestamp, in milliseconds since the Unix epoch.
    public static let originalTimestamp = "herald.original.timestamp"
    /// Delivery attempts so far, in decimal.
    public static let attempts = "herald.attempts"
    /// The first failure time, RFC 3339 in UTC.
    public static let firstFailure = "herald.first.failure"
    /// The last failure time, RFC 3339 in UTC.
    public static let lastFailure = "herald.last.failure"
    /// On retry topics: the earliest time to try again, RFC 3339 in UTC.
    public static let notBefore = "herald.not.before"
    /// The Herald version that wrote the record.
    public static let version = "herald.version"
    /// On a dead letter whose original value was too large to carry whole: `true`; the value is
    /// then its first bytes only, and the original is at its original topic, partition and offset.
    public static let valueTruncated = "herald.value.truncated"
    /// On a dead letter whose original key was too large to carry whole: `true`; the key is then
    /// its first bytes only.
    public static let keyTruncated = "herald.key.truncated"
    /// On a dead letter whose original headers were too large to carry: how many were left out.
    public static let headersDropped = "herald.headers.dropped"
    /// With either: the original value's size in bytes, in decimal.
    public static let originalSize = "herald.original.size"
}
