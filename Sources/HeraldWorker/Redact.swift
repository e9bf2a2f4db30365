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
    private static let key = Mutex<SymmetricKey?>(nil)

    /// Sets the key user ids are hashed with, once at start-up, before anything logs.
    public static func setKey(_ bytes: [UInt8]?) {
        key.withLock { $0 = bytes.map { SymmetricKey(data: $0) } }
    }

    public static func user(_ userID: String) -> String {
        guard let key = key.withLock({ $0 }) else {
            return "u:" + String(NotificationID.make(eventID: "", kind: "", recipient: userID, device: "").prefix(12))
        }
        let code = HMAC<SHA256>.authenticationCode(for: Array(userID.utf8), using: key)
        // The first 6 bytes, as 12 upper-case hex digits: the unkeyed hash's form.
        let value = code.prefix(6).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let digits = String(value, radix: 16, uppercase: true)
        return "u:" + String(repeating: "0", count: 12 - digits.count) + digits
    }
}
