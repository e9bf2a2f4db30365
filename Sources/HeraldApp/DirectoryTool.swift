import HeraldEvents
import HeraldPolicy
import HeraldStore

/// What `herald directory show` prints.
public enum DirectoryTool {
    /// One JSON line for a user. Tokens are shortened to their first 8 characters: enough to tell
    /// devices apart, not enough to send to one.
    /// - Parameter deletedAt: when the user was deleted (`user.deleted`), if the store remembers:
    ///   shown as `deletedAt`, beside whatever was registered for them after it.
    public static func describe(user: String, _ recipient: Recipient?, deletedAt: Timestamp? = nil) -> String {
        let deletion: [(String, JSONValue)] = deletedAt.map { [("deletedAt", .string($0.description))] } ?? []
        guard let recipient else {
            return JSONValue.object(JSONObject([("userId", .string(user)), ("known", .bool(false))] + deletion))
                .serialized
        }
        let devices = recipient.devices.map { device in
            JSONValue.object(
                JSONObject([
                    ("deviceId", .string(device.deviceID)), ("platform", .string(device.platform)),
                    ("provider", .string(device.provider.rawValue)), ("token", .string(shortened(device.token))),
                    ("appId", .string(device.appID)),
                    ("environment", .string(device.sandbox ? "sandbox" : "production")),
                    ("locale", device.locale.map(JSONValue.string) ?? .null),
                    ("registeredAt", .string(device.registeredAt.description)),
                ])
            )
        }
        return JSONValue.object(
            JSONObject(
                [
                    ("userId", .string(user)), ("known", .bool(true)), ("devices", .array(devices)),
                    ("locale", recipient.locale.map(JSONValue.string) ?? .null),
                    ("timeZone", recipient.timeZone.map(JSONValue.string) ?? .null),
                    ("preferences", PreferencesDocument.value(recipient.preferences)),
                ] + deletion
            )
        ).serialized
    }

    static func shortened(_ token: String) -> String {
        token.count <= 8 ? String(repeating: "*", count: token.count) : String(token.prefix(8)) + "…"
    }
}
