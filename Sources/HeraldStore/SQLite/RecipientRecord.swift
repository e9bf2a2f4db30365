import HeraldEvents
import HeraldPolicy

/// A user's recipient record as `recipient_records` keeps it: everything ``Recipient`` holds, packed
/// into one blob (``PackedWriter``), with the devices already in lookup order.
///
/// The record is derived from `devices` and `users` and rewritten, in the same transaction, for
/// every user a directory change touches. A batch lookup then costs one B-tree search per user
/// instead of a search in each table and a row per device.
enum RecipientRecord {
    /// The first byte: the layout, so a later one can be told apart. Records are written in the
    /// latest; every layout here is read.
    static let layout: UInt8 = 2
    /// Layout 1 (until 2026-11-30) kept the preferences as their JSON document, parsed on every
    /// read: with the quiet hours' zone looked up by name, nearly half of reading a user who had
    /// any. Layout 2 packs them, and a device's provider as a byte instead of its name. A record
    /// is rewritten whenever its user changes; an older Herald, which knows only layout 1,
    /// rebuilds a layout 2 record it reads from `devices` and `users`.
    static let documentLayout: UInt8 = 1

    static func encode(_ recipient: Recipient) -> [UInt8] {
        var writer = PackedWriter()
        writer.append(layout)
        writer.append(recipient.locale)
        writer.append(recipient.timeZone)
        // Most users never set preferences: they get one byte.
        let preferences = recipient.preferences
        if preferences == Preferences() {
            writer.append(UInt8(0))
        } else {
            writer.append(UInt8(1))
            append(preferences, to: &writer)
        }
        writer.append(Int64(recipient.devices.count))
        for device in recipient.devices {
            writer.append(device.deviceID)
            writer.append(device.platform)
            writer.append(providerCodes[device.provider]!)
            writer.append(device.token)
            writer.append(device.appID)
            writer.append(UInt8(device.sandbox ? 1 : 0))
            writer.append(device.locale)
            writer.append(device.registeredAt.epochMilliseconds)
        }
        return writer.bytes
    }

    static func decode(userID: String, _ bytes: UnsafeRawBufferPointer) throws(StoreError) -> Recipient {
        var reader = PackedReader(bytes)
        guard let layout = reader.byte(), let locale = reader.optionalText(), let timeZone = reader.optionalText()
        else { throw malformed }
        let preferences: Preferences
        switch layout {
        case Self.layout:
            switch reader.byte() {
            case 0: preferences = Preferences()
            case 1: preferences = try readPreferences(&reader)
            default: throw malformed
            }
        case documentLayout:
            guard let document = reader.optionalText() else { throw malformed }
            preferences = document.map(PreferencesDocument.decode) ?? Preferences()
        default:
            throw malformed
        }
        guard let count = reader.integer(), count >= 0 else { throw malformed }
        var devices: [RegisteredDevice] = []
        devices.reserveCapacity(Int(min(count, 64)))
        for _ in 0..<count {
            guard let deviceID = reader.text(), let platform = reader.text(),
                let provider = layout == Self.layout
                    ? reader.byte().flatMap(provider(code:)) : reader.text().flatMap(PushProvider.init(rawValue:)),
                let token = reader.text(),
                let appID = reader.text(), let sandbox = reader.byte(), let deviceLocale = reader.optionalText(),
                let registeredAt = reader.integer()
            else { throw malformed }
            devices.append(
                RegisteredDevice(
                    deviceID: deviceID,
                    platform: platform,
                    provider: provider,
                    token: token,
                    appID: appID,
                    sandbox: sandbox != 0,
                    locale: deviceLocale,
                    registeredAt: Timestamp(epochMilliseconds: registeredAt)
                )
            )
        }
        guard reader.isAtEnd else { throw malformed }
        return Recipient(
            userID: userID,
            devices: devices,
            locale: locale,
            timeZone: timeZone,
            preferences: preferences
        )
    }

    /// A device's provider as layout 2 stores it (layout 1 stored its name, a string made and
    /// matched for every device read). Stored on disk: a code is never given another meaning.
    private static let providerCodes: [PushProvider: UInt8] = [.apns: 0, .fcm: 1, .expo: 2]

    private static func provider(code: UInt8) -> PushProvider? {
        switch code {
        case 0: .apns
        case 1: .fcm
        case 2: .expo
        default: nil
        }
    }

    /// Preferences packed: whether push is on, the categories (by name, so a record's bytes do not
    /// depend on a dictionary's order) and whether each is on, then the quiet hours if any, as
    /// minutes after midnight and the zone.
    private static func append(_ preferences: Preferences, to writer: inout PackedWriter) {
        writer.append(UInt8(preferences.pushEnabled ? 1 : 0))
        writer.append(Int64(preferences.categories.count))
        for (name, enabled) in preferences.categories.sorted(by: { $0.key < $1.key }) {
            writer.append(name)
            writer.append(UInt8(enabled ? 1 : 0))
        }
        if let quiet = preferences.quietHours {
            writer.append(UInt8(1))
            writer.append(Int64(quiet.start))
            writer.append(Int64(quiet.end))
            writer.append(quiet.timeZone)
        } else {
            writer.append(UInt8(0))
        }
    }

    private static func readPreferences(_ reader: inout PackedReader) throws(StoreError) -> Preferences {
        guard let pushEnabled = reader.flag(), let count = reader.integer(), count >= 0 else { throw malformed }
        var categories: [String: Bool] = [:]
        categories.reserveCapacity(Int(min(count, 64)))
        for _ in 0..<count {
            guard let name = reader.text(), let enabled = reader.flag() else { throw malformed }
            categories[name] = enabled
        }
        var quietHours: QuietHours?
        switch reader.byte() {
        case 0: break
        case 1:
            // Minutes the encoder cannot have written are damage: the record is rebuilt from the
            // tables rather than read without the user's quiet hours.
            guard let start = reader.integer(), let end = reader.integer(), let zone = reader.text(),
                (0..<1440).contains(start), (0..<1440).contains(end), start != end
            else { throw malformed }
            // As the document's reader does: a period whose zone is gone from the system's time
            // zone data is read as none.
            quietHours = QuietHours(startMinute: Int(start), endMinute: Int(end), timeZone: zone)
        default: throw malformed
        }
        return Preferences(pushEnabled: pushEnabled, categories: categories, quietHours: quietHours)
    }

    /// The record's key in `recipient_records`, before the user id: 64-bit FNV-1a of the id's UTF-8
    /// bytes. A lookup's `IN` list and its B-tree searches then compare integers, which cost about
    /// a microsecond less per user than comparing the ids (measured on a directory of 500,000 users).
    /// The id stays in the key, so users whose hashes collide still get a row each.
    ///
    /// Stored on disk: changing the function needs a migration that rewrites every record.
    static func key(_ userID: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in userID.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }

    private static var malformed: StoreError {
        StoreError(code: .storeQuery, message: "recipient_records: a malformed record")
    }
}
