import HeraldEvents

/// What a phone shows for one provider request: read back from the request body the way each
/// provider lays it out, for the demo's display and replay diffs.
public struct DisplayedText: Sendable, Hashable {
    public var title: String?
    public var body: String?
    public var deepLink: String?

    public init(title: String?, body: String?, deepLink: String?) {
        self.title = title
        self.body = body
        self.deepLink = deepLink
    }

    /// - Parameters:
    ///   - provider: `apns`, `fcm` or `expo`.
    ///   - payload: the request body.
    public init(provider: String, payload: JSONValue) {
        switch provider {
        case "apns":
            let alert = payload["aps"]?["alert"]
            if let text = alert?.stringValue {
                self.init(title: nil, body: text, deepLink: payload["deepLink"]?.stringValue)
            } else {
                self.init(
                    title: alert?["title"]?.stringValue,
                    body: alert?["body"]?.stringValue,
                    deepLink: payload["deepLink"]?.stringValue
                )
            }
        case "fcm":
            let message = payload["message"]
            self.init(
                title: message?["notification"]?["title"]?.stringValue,
                body: message?["notification"]?["body"]?.stringValue,
                deepLink: message?["data"]?["deepLink"]?.stringValue
            )
        default:
            self.init(
                title: payload["title"]?.stringValue,
                body: payload["body"]?.stringValue,
                deepLink: payload["data"]?["deepLink"]?.stringValue
            )
        }
    }
}
