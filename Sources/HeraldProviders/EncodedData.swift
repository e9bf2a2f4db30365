import HeraldEvents

/// A push message's data entries written once as JSON members (`"key":"value"`, comma-separated),
/// each with what its key means to the providers, so that every device's payload copies them in
/// one piece instead of writing and escaping each entry again.
///
/// A message is made once per rendering and built for each of a recipient's devices; its data is
/// the largest part of a payload, and all three providers write it as string members (APNs at the
/// top of the body, FCM and Expo in `data`). Made from ``PushMessage/data`` whenever that is set,
/// so the two never disagree.
@usableFromInline
struct EncodedData: Sendable, Hashable {
    /// What a data entry's key is to a provider: a key that one leaves out or writes itself.
    struct KeyClass: OptionSet, Sendable, Hashable {
        let rawValue: UInt8

        /// `deepLink`: every builder writes the message's own deep link under this key.
        static let deepLink = KeyClass(rawValue: 1 << 0)
        /// `aps`: APNs' own dictionary.
        static let aps = KeyClass(rawValue: 1 << 1)
        /// `imageUrl`: APNs' body carries the message's image under this key.
        static let imageURL = KeyClass(rawValue: 1 << 2)
        /// A key FCM reserves (``FCMPayloadBuilder/isReserved(_:)``).
        static let fcmReserved = KeyClass(rawValue: 1 << 3)
        /// `herald_notification_id`, written by FCM's and Expo's builders.
        static let notificationID = KeyClass(rawValue: 1 << 4)
        /// FCM's badge key, written by its builder for a badge-only push.
        static let badge = KeyClass(rawValue: 1 << 5)

        init(rawValue: UInt8) { self.rawValue = rawValue }

        init(key: String) {
            var classes: KeyClass = []
            // By length first: every key of a rendering is classified, and most are none of these.
            switch key.utf8.count {
            case 3: if key.hasUTF8("aps") { classes.insert(.aps) }
            case 8:
                if key.hasUTF8("deepLink") { classes.insert(.deepLink) }
                if key.hasUTF8("imageUrl") { classes.insert(.imageURL) }
            case FCMPayloadBuilder.notificationIDLiteral.utf8CodeUnitCount:
                if key.hasUTF8(FCMPayloadBuilder.notificationIDLiteral) { classes.insert(.notificationID) }
            case FCMPayloadBuilder.badgeLiteral.utf8CodeUnitCount:
                if key.hasUTF8(FCMPayloadBuilder.badgeLiteral) { classes.insert(.badge) }
            default: break
            }
            if FCMPayloadBuilder.isReserved(key) { classes.insert(.fcmReserved) }
            self = classes
        }
    }

    /// One entry: where its member ends in `members` (before the comma that follows it) and its
    /// key's classes.
    struct Entry: Sendable, Hashable {
        var end: Int
        var classes: KeyClass
    }

    /// The members, comma-separated, without braces.
    private(set) var members: [UInt8] = []
    private(set) var entries: [Entry] = []
    /// Every entry's classes together: when none of a builder's is among them, the members are
    /// copied whole.
    private(set) var classes: KeyClass = []

    @usableFromInline
    init(_ data: [KeyValue]) {
        guard !data.isEmpty else { return }
        var entries: [Entry] = []
        entries.reserveCapacity(data.count)
        var classes: KeyClass = []
        members = JSONStreamWriter.bytes(capacity: 64 * data.count) { writer in
            data.forEachEntry { key, value in
                writer.member(key, value)
                let keyClasses = KeyClass(key: key)
                classes.formUnion(keyClasses)
                entries.append(Entry(end: writer.count, classes: keyClasses))
            }
        }
        self.entries = entries
        self.classes = classes
    }

    var count: Int { entries.count }

    /// How many entries are not of `classes`.
    func count(excluding classes: KeyClass) -> Int {
        if self.classes.isDisjoint(with: classes) { return entries.count }
        var count = 0
        for entry in entries where entry.classes.isDisjoint(with: classes) { count += 1 }
        return count
    }

    /// Writes, as members of the object being written, the first `kept` entries of those not
    /// `filtered`, less those `skipped`, in order.
    func write(kept: Int, filtered: KeyClass = [], skipping skipped: KeyClass, into writer: inout JSONStreamWriter) {
        guard kept > 0 else { return }
        members.withUnsafeBytes { members in
            if kept == entries.count && classes.isDisjoint(with: filtered.union(skipped)) {
                writer.encodedMembers(members)
                return
            }
            // Runs of consecutive entries written, each copied in one piece.
            var run: Int? = nil
            var taken = 0
            func flush(before index: Int) {
                guard let first = run else { return }
                let start = first == 0 ? 0 : entries[first - 1].end + 1
                writer.encodedMembers(UnsafeRawBufferPointer(rebasing: members[start..<entries[index - 1].end]))
                run = nil
            }
            var index = 0
            while index < entries.count && taken < kept {
                let classes = entries[index].classes
                if classes.isDisjoint(with: filtered) {
                    taken += 1
                    if classes.isDisjoint(with: skipped) {
                        if run == nil { run = index }
                    } else {
                        flush(before: index)
                    }
                } else {
                    flush(before: index)
                }
                index += 1
            }
            flush(before: index)
        }
    }
}
