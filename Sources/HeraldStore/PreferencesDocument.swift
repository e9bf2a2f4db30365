import HeraldEvents
import HeraldPolicy

/// Preferences stored as one JSON document (the shape of `user.preferences.updated`).
public enum PreferencesDocument {
    static func encode(_ preferences: Preferences) -> String {
        value(preferences).serialized
    }

    /// The document as JSON.
    public static func value(_ preferences: Preferences) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [("pushEnabled", .bool(preferences.pushEnabled))]
        members.append(
            (
                "categories",
                .object(JSONObject(preferences.categories.sorted { $0.key < $1.key }.map { ($0.key, .bool($0.value)) }))
            )
        )
        if let quiet = preferences.quietHours {
            members.append(
                (
                    "quietHours",
                    .object(
                        JSONObject([
                            ("start", .string(quiet.startText)), ("end", .string(quiet.endText)),
                            ("timezone", .string(quiet.timeZone)),
                        ])
                    )
                )
            )
        }
        return JSONValue.object(JSONObject(members))
    }

    static func decode(_ text: String) -> Preferences {
        guard case .object(let object)? = try? JSONParser().parse(Array(text.utf8)) else { return Preferences() }
        var preferences = Preferences()
        if case .bool(let enabled)? = object["pushEnabled"] { preferences.pushEnabled = enabled }
        if case .object(let categories)? = object["categories"] {
            for (name, value) in categories {
                if case .bool(let enabled) = value { preferences.categories[name] = enabled }
            }
        }
        if case .object(let quiet)? = object["quietHours"], case .string(let start)? = quiet["start"],
            case .string(let end)? = quiet["end"], case .string(let zone)? = quiet["timezone"]
        {
            preferences.quietHours = QuietHours(start: start, end: end, timeZone: zone)
        }
        return preferences
    }
}
