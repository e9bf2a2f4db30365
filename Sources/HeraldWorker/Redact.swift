import Crypto
import HeraldProviders
import Synchronization

/// Personal data in logs: user ids appear only as a stable hash (`u:` and 12 upper-case hex digits), so a
/// person can follow one user through the logs without the logs holding the id.
///
/// With a key (`log.user_hash_key_file`) the hash is an HMAC-SHA256 of the id: without the key, a
/// hash cannot be turned back into an id by hashing guesses. User ids are often guessable
/// (sequential numbers, e-mail addresses), so an unkeyed hash of one hides little from whoever
/// reads the logs. Without a key, the unkeyed hash is used, as before keys existed.
/// `herald user-hash` prints an id's hash with the configured key, to find a user in the logs.
public enum Redact {
    private static let hash = Mutex(UserHash(key: nil))

    /// Sets the key user ids are hashed with, once at start-up, before anything logs.
    public static func setKey(_ bytes: [UInt8]?) {
        hash.withLock { $0 = UserHash(key: bytes) }
    }

    public static func user(_ userID: String) -> String {
        hash.withLock { $0 }(userID)
    }
}

/// The hash a user id is shown as where the id itself must not be (logs, `herald.decisions`,
/// `herald.deliveries`): `u:` and 12 upper-case hex digits, from an HMAC-SHA256 with a key, or from
/// the unkeyed hash of notification ids without one (see ``Redact``). A value: a worker's analytics
/// records carry the hash of the key it was started with, whatever else in the process changes
/// ``Redact``'s. About 0.7 µs per id with a key (release build).
public struct UserHash: Sendable {
    /// The HMAC with its key already hashed in: each id costs a copy of it and two SHA-256 blocks,
    /// not the key's preparation again.
    private let keyed: HMAC<SHA256>?

    public init(key: [UInt8]?) {
        keyed = key.map { HMAC<SHA256>(key: SymmetricKey(data: $0)) }
    }

    public func callAsFunction(_ userID: String) -> String {
        guard var code = keyed else {
            return "u:" + String(NotificationID.make(eventID: "", kind: "", recipient: userID, device: "").prefix(12))
        }
        var id = userID
        id.withUTF8 { code.update(data: UnsafeRawBufferPointer($0)) }
        // The first 6 bytes, as 12 upper-case hex digits: the unkeyed hash's form.
        let value = code.finalize().prefix(6).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let digits = String(value, radix: 16, uppercase: true)
        return "u:" + String(repeating: "0", count: 12 - digits.count) + digits
    }
}

/// How an analytics record (on `herald.decisions` and `herald.deliveries`: its `recipient` and its
/// Kafka key) names the user it is for (`analytics.recipient`). In analytics user ids are hashed:
/// the default.
public enum AnalyticsRecipients: Sendable {
    /// The user id as its ``UserHash``, the same as the logs give it when both are keyed alike:
    /// `herald user-hash` finds a user's decisions as it finds their log lines.
    case hashed(UserHash)
    /// The user id itself (`analytics.recipient: clear`), for topics whose readers may hold it.
    case clear

    /// The name `userID` goes by in an analytics record.
    public func name(_ userID: String) -> String {
        switch self {
        case .hashed(let hash): hash(userID)
        case .clear: userID
        }
    }
}
