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

    /// Whether ids are hashed with a key.
    public static var isKeyed: Bool { key.withLock { $0 != nil } }

    public static func user(_ userID: String) -> String {
        guard let key = key.withLock({ $0 }) else {
            return "u:" + String(NotificationID.make(eventID: "", kind: "", recipient: userID, device: "").prefix(12))
        }
        let code = HMAC<SHA256>.authenticationCode(for: Array(userID.utf8), using: key)
        var text = "u:"
        for byte in code.prefix(6) {
            text.append(hexDigit(byte >> 4))
            text.append(hexDigit(byte & 0xF))
        }
        return text
    }

    private static func hexDigit(_ value: UInt8) -> Character {
        Character(Unicode.Scalar(value < 10 ? 0x30 + value : 0x37 + value))
    }
}
