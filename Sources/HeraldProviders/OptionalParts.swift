import HeraldEvents

/// What is left of a message's optional parts after the size budget dropped the first `dropped`
/// of them, in the documented order: data entries (last first), the subtitle (where the provider
/// shows one), the image, then the deep link.
struct OptionalParts {
    /// How many of the message's data entries are kept: the first this many of those not of the
    /// classes the builder filters out (``EncodedData/write(kept:filtered:skipping:into:)``).
    var keptData: Int
    var subtitle: String?
    var imageURL: String?
    var deepLink: String?

    /// How many parts of `message` the size budget may drop.
    static func count(in message: PushMessage, subtitleIsDroppable: Bool) -> Int {
        message.data.count + (subtitleIsDroppable && message.subtitle != nil ? 1 : 0)
            + (message.imageURL == nil ? 0 : 1) + (message.deepLink == nil ? 0 : 1)
    }

    /// Whether the phone's notification service extension must run: asked for, or an image kept
    /// for it to attach.
    func mutableContent(_ message: PushMessage) -> Bool { message.mutableContent || imageURL != nil }

    /// Writes `"key": {"image": url}` for the image kept, unless the push shows no alert (silent,
    /// or badge-only); returns whether it did.
    func writeImage(_ key: StaticString, of message: PushMessage, into writer: inout JSONStreamWriter) -> Bool {
        guard message.showsAlert, let imageURL else { return false }
        writer.key(key)
        writer.beginObject()
        writer.member("image", imageURL)
        writer.endObject()
        return true
    }

    /// - Parameter filtered: data entries the provider never sends (FCM's reserved keys), which
    ///   the size budget does not count as dropped.
    init(_ message: PushMessage, dropped: Int, subtitleIsDroppable: Bool, filtered: EncodedData.KeyClass = []) {
        var remaining = dropped
        let sendable = message.encodedData.count(excluding: filtered)
        let removedData = min(remaining, sendable)
        keptData = sendable - removedData
        remaining -= removedData
        subtitle = message.subtitle
        if subtitleIsDroppable, remaining > 0, subtitle != nil {
            subtitle = nil
            remaining -= 1
        }
        imageURL = message.imageURL
        if remaining > 0, imageURL != nil {
            imageURL = nil
            remaining -= 1
        }
        deepLink = remaining > 0 ? nil : message.deepLink
    }
}
