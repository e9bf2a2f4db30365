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

    public init(title: String?, body: String?, deepLink: String?, badge: Int? = nil, image: String? = nil) {
        self.title = title
        self.body = body
        self.deepLink = deepLink
        self.badge = badge
        self.image = image
    }

    /// - Parameters:
    ///   - provider: `apns`, `fcm` or `expo`.
    ///   - payload: the request body.
    public init(provider: String, payload: JSONValue) {
        switch provider {
        case "apns":
            let alert = payload["aps"]?["alert"]
            let badge = Self.count(payload["aps"]?["badge"])
            let image = payload["imageUrl"]?.stringValue
            if let text = alert?.stringValue {
                self.init(
                    title: nil,
                    body: text,
                    deepLink: payload["deepLink"]?.stringValue,
                    badge: badge,
                    image: image
                )
            } else {
                self.init(
                    title: alert?["title"]?.stringValue,
                    body: alert?["body"]?.stringValue,
                    deepLink: payload["deepLink"]?.stringValue,
                    badge: badge,
                    image: image
                )
            }
        case "fcm":
            let message = payload["message"]
            self.init(
                title: message?["notification"]?["title"]?.stringValue,
                body: message?["notification"]?["body"]?.stringValue,
                deepLink: message?["data"]?["deepLink"]?.stringValue,
                // What an Android phone shows; the iOS badge (apns.payload.aps.badge) is the same.
                badge: Self.count(message?["android"]?["notification"]?["notification_count"]),
                image: message?["notification"]?["image"]?.stringValue
            )
        default:
            self.init(
                title: payload["title"]?.stringValue,
                body: payload["body"]?.stringValue,
                deepLink: payload["data"]?["deepLink"]?.stringValue,
                badge: Self.count(payload["badge"]),
                image: payload["richContent"]?["image"]?.stringValue
            )
        }
    }

    private static func count(_ value: JSONValue?) -> Int? {
        guard case .number(let text)? = value else { return nil }
        return Int(text)
    }
}
