import HeraldEvents

/// What a phone shows for one provider request: read back from the request body the way each
/// provider lays it out, for the demo's display and replay diffs.
public struct DisplayedText: Sendable, Hashable {
    public var title: String?
    public var body: String?
    public var deepLink: String?
    /// The app icon's badge count the request sets, if it sets one.
    public var badge: Int?
    /// The URL of the image shown with the notification, if any.
    public var image: String?
    /// A silent (background) push: nothing is shown, the app gets the data.
    public var silent: Bool
    /// A push that only sets the app icon's badge: no text, no sound.
    public var badgeOnly: Bool { !silent && title == nil && body == nil && badge != nil }

    public init(
        title: String?,
        body: String?,
        deepLink: String?,
        badge: Int? = nil,
        image: String? = nil,
        silent: Bool = false
    ) {
        self.title = title
        self.body = body
        self.deepLink = deepLink
        self.badge = badge
        self.image = image
        self.silent = silent
    }

    /// - Parameters:
    ///   - provider: `apns`, `fcm` or `expo`.
    ///   - payload: the request body.
    public init(provider: String, payload: JSONValue) {
        switch provider {
        case "apns":
            let aps = payload["aps"]
            let alert = aps?["alert"]
            // An alert is a dictionary, or a string that is its body.
            self.init(
                title: alert?["title"]?.stringValue,
                body: alert?.stringValue ?? alert?["body"]?.stringValue,
                deepLink: payload["deepLink"]?.stringValue,
                badge: Self.count(aps?["badge"]),
                image: payload["imageUrl"]?.stringValue,
                silent: alert == nil && aps?["content-available"] == .number("1")
            )
        case "fcm":
            let message = payload["message"]
            let notification = message?["notification"]
            // What an Android phone shows; the iOS badge (apns.payload.aps.badge) is the same. A
            // badge-only push has no Android notification: its count is in the data, for the app.
            let badge =
                Self.count(message?["android"]?["notification"]?["notification_count"])
                ?? Self.count(message?["apns"]?["payload"]?["aps"]?["badge"])
            self.init(
                title: notification?["title"]?.stringValue,
                body: notification?["body"]?.stringValue,
                deepLink: message?["data"]?["deepLink"]?.stringValue,
                badge: badge,
                image: notification?["image"]?.stringValue,
                // A data message that sets no badge: the app gets it, nothing is shown.
                silent: message != nil && notification == nil && badge == nil
            )
        default:
            self.init(
                title: payload["title"]?.stringValue,
                body: payload["body"]?.stringValue,
                deepLink: payload["data"]?["deepLink"]?.stringValue,
                badge: Self.count(payload["badge"]),
                image: payload["richContent"]?["image"]?.stringValue,
                silent: payload["_contentAvailable"] == .bool(true) && payload["title"] == nil
                    && payload["body"] == nil
            )
        }
    }

    private static func count(_ value: JSONValue?) -> Int? {
        guard case .number(let text)? = value else { return nil }
        return Int(text)
    }
}
