import Foundation
import HeraldEvents

/// One change to the recipient directory, from a CloudEvent on `herald.directory` (key = user id).
public enum DirectoryEvent: Sendable, Hashable {
    /// A device registered (or registered again) for a user. A token registered by another user
    /// moves to this one.
    case deviceRegistered(DeviceRegistration)
    case deviceUnregistered(userID: String, deviceID: String, at: Timestamp)
    /// A provider said the token is dead (APNs 410, FCM UNREGISTERED): it stays invalid unless it is
    /// registered again after `at`.
    case tokenInvalidated(provider: PushProvider, token: String, at: Timestamp)
    case profileUpdated(userID: String, locale: String?, timeZone: String?, at: Timestamp)
    case preferencesUpdated(userID: String, preferences: Preferences, at: Timestamp)
    /// The user's account was deleted (erasure): their devices, profile and preferences as of `at`
    /// are removed, with the notifications waiting for them (deferred or in a digest). A change for
    /// the user dated no later than `at` that arrives afterwards (out of order, or redelivered) is
    /// ignored rather than bringing them back; one dated after it is a new start.
    case userDeleted(userID: String, at: Timestamp)

    /// The user the event is about, if it names one (token invalidations name only the token).
    public var userID: String? {
        switch self {
        case .deviceRegistered(let registration): registration.userID
        case .deviceUnregistered(let userID, _, _), .profileUpdated(let userID, _, _, _),
            .preferencesUpdated(let userID, _, _), .userDeleted(let userID, _):
            userID
        case .tokenInvalidated: nil
        }
    }

    /// The Kafka key the change should carry on `herald.directory`: one key per thing a change
    /// sets (a user's device, their profile, their preferences, a token's invalidation). The topic
    /// is compacted, and compaction keeps only the latest record of each key: keyed by the user
    /// alone, a user's profile update would erase their device registrations from it, and a
    /// directory rebuilt from the topic would have lost them. Changes apply by their time, so the
    /// partitions these keys spread a user's changes over can be read in any order.
    public var topicKey: String {
        switch self {
        case .deviceRegistered(let registration): "\(registration.userID)/device/\(registration.deviceID)"
        case .deviceUnregistered(let userID, let deviceID, _): "\(userID)/device/\(deviceID)"
        case .tokenInvalidated(let provider, let token, _): "token/\(provider.rawValue)/\(token)"
        case .profileUpdated(let userID, _, _, _): "\(userID)/profile"
        case .preferencesUpdated(let userID, _, _): "\(userID)/preferences"
        case .userDeleted(let userID, _): "\(userID)/deleted"
        }
    }

    /// When the change happened: the event's `time`.
    public var at: Timestamp {
        switch self {
        case .deviceRegistered(let registration): registration.at
        case .deviceUnregistered(_, _, let at), .tokenInvalidated(_, _, let at), .profileUpdated(_, _, _, let at),
            .preferencesUpdated(_, _, let at), .userDeleted(_, let at):
            at
        }
    }

    /// The same change dated `at`.
    public func dated(_ at: Timestamp) -> DirectoryEvent {
        switch self {
        case .deviceRegistered(var registration):
            registration.at = at
            return .deviceRegistered(registration)
        case .deviceUnregistered(let userID, let deviceID, _):
            return .deviceUnregistered(userID: userID, deviceID: deviceID, at: at)
        case .tokenInvalidated(let provider, let token, _):
            return .tokenInvalidated(provider: provider, token: token, at: at)
        case .profileUpdated(let userID, let locale, let timeZone, _):
            return .profileUpdated(userID: userID, locale: locale, timeZone: timeZone, at: at)
        case .preferencesUpdated(let userID, let preferences, _):
            return .preferencesUpdated(userID: userID, preferences: preferences, at: at)
        case .userDeleted(let userID, _):
            return .userDeleted(userID: userID, at: at)
        }
    }

    /// How far ahead of the applier's clock a change may be dated and be kept as dated: clocks of
    /// the services that publish directory events drift by seconds, not by this.
    public static let clockTolerance = Duration.seconds(300)

    /// The change as it is applied at `now`: dated no later than `now` if it was dated more than
    /// ``clockTolerance`` ahead of it. Changes are ordered by their dates (a newer registration
    /// wins, an unregistration removes only what was registered before it, an invalidation kills
    /// only older registrations), so one dated years ahead — a producer's wrong clock or a bad
    /// conversion — would pin its device for those years: never unregistered when its user logs
    /// out, never invalidated when its token dies.
    public func applied(at now: Timestamp) -> (change: DirectoryEvent, redated: Bool) {
        guard at.epochMilliseconds > now.epochMilliseconds + Self.clockTolerance.milliseconds else {
            return (self, false)
        }
        return (dated(now), true)
    }
}

/// Which push service a token belongs to.
public enum PushProvider: String, Sendable, Hashable {
    case apns, fcm, expo
}

/// A device as registered.
public struct DeviceRegistration: Sendable, Hashable {
    public var userID: String
    public var deviceID: String
    public var platform: String
    public var provider: PushProvider
    public var token: String
    public var appID: String
    public var sandbox: Bool
    public var locale: String?
    public var at: Timestamp

    public init(
        userID: String,
        deviceID: String,
        platform: String,
        provider: PushProvider,
        token: String,
        appID: String,
        sandbox: Bool,
        locale: String?,
        at: Timestamp
    ) {
        self.userID = userID
        self.deviceID = deviceID
        self.platform = platform
        self.provider = provider
        self.token = token
        self.appID = appID
        self.sandbox = sandbox
        self.locale = locale
        self.at = at
    }
}

/// Why a directory event was rejected. `message` names the field, never its value (tokens and user
/// ids are personal data).
public struct DirectoryEventError: Error, Sendable, Hashable, CustomStringConvertible {
    public static let code = "directory.invalid_event"
    public var message: String
    public var description: String { "\(Self.code): \(message)" }
}

extension DirectoryEvent {
    /// The CloudEvents types of `herald.directory`, each read by ``init(_:)``.
    public static let eventTypes: Set<String> = [
        "device.registered", "device.unregistered", "device.token.invalidated", "user.profile.updated",
        "user.preferences.updated", "user.deleted",
    ]

    /// Whether `type` is one of ``eventTypes``. Every one starts `device.` or `user.`: most types
    /// (domain events, where replay asks for each line) are told apart by their first bytes,
    /// without hashing them for the set.
    public static func isEventType(_ type: String) -> Bool {
        (type.hasUTF8Prefix("device.") || type.hasUTF8Prefix("user.")) && eventTypes.contains(type)
    }

    /// The longest string value accepted: a user id, device id, platform, provider, token, app id,
    /// locale or time zone. Provider tokens are far shorter: APNs 64–200 hex digits, FCM about 160
    /// characters, Expo about 40.
    public static let maximumValueBytes = 1024

    /// Reads a directory event. The time of the change is the event's `time` (required: ordering
    /// registrations against invalidations depends on it).
    public init(_ event: CloudEvent) throws(DirectoryEventError) {
        guard let time = event.time else { throw DirectoryEventError(message: "\(event.type) needs a time") }
        guard case .object(let data)? = event.data else {
            throw DirectoryEventError(message: "\(event.type) needs an object as data")
        }
        func string(_ key: String) throws(DirectoryEventError) -> String {
            guard case .string(let value)? = data[key], !value.isEmpty else {
                throw DirectoryEventError(message: "\(event.type) needs a non-empty string '\(key)'")
            }
            // Tokens and ids are copied into every outbound record of the device (an APNs token
            // twice, in its target and its path), and the path goes in an HTTP/2 header: one
            // absurdly long value would make every notification to the user oversize.
            try bounded(value, key)
            return value
        }
        /// PostgreSQL's text holds no U+0000, and refuses the whole batch of changes with it.
        func bounded(_ value: String, _ key: String) throws(DirectoryEventError) {
            guard value.utf8.count <= Self.maximumValueBytes else {
                throw DirectoryEventError(message: "'\(key)' is longer than \(Self.maximumValueBytes) bytes")
            }
            guard !value.utf8Contains(0) else {
                throw DirectoryEventError(message: "'\(key)' contains U+0000")
            }
        }
        func optionalString(_ key: String) throws(DirectoryEventError) -> String? {
            switch data[key] {
            case nil, .null?: return nil
            case .string(let value)?:
                // A locale is kept with the device or the profile and read for every notification.
                try bounded(value, key)
                return value
            default: throw DirectoryEventError(message: "'\(key)' must be a string")
            }
        }
        func provider() throws(DirectoryEventError) -> PushProvider {
            guard let provider = PushProvider(rawValue: try string("provider")) else {
                throw DirectoryEventError(message: "'provider' must be apns, fcm or expo")
            }
            return provider
        }
        switch event.type {
        case "device.registered":
            let environment = try optionalString("environment") ?? "production"
            guard environment == "production" || environment == "sandbox" else {
                throw DirectoryEventError(message: "'environment' must be production or sandbox")
            }
            self = .deviceRegistered(
                DeviceRegistration(
                    userID: try string("userId"),
                    deviceID: try string("deviceId"),
                    platform: try string("platform"),
                    provider: try provider(),
                    token: try string("token"),
                    appID: try string("appId"),
                    sandbox: environment == "sandbox",
                    locale: try optionalString("locale"),
                    at: time
                )
            )
        case "device.unregistered":
            self = .deviceUnregistered(userID: try string("userId"), deviceID: try string("deviceId"), at: time)
        case "device.token.invalidated":
            self = .tokenInvalidated(provider: try provider(), token: try string("token"), at: time)
        case "user.profile.updated":
            // An empty value says nothing, like an absent one: the stored value stays.
            let timeZone = try optionalString("timeZone").flatMap { $0.isEmpty ? nil : $0 }
            // Checked here, not first when a notification is rendered: an unknown zone stored with
            // the profile dead-lettered every later notification with a date for the user as
            // render.bad_time_zone, where this dead-letters the one bad update.
            if let timeZone, TimeZone(identifier: timeZone) == nil {
                throw DirectoryEventError(message: "'timeZone' must be an IANA time zone such as Europe/Oslo")
            }
            self = .profileUpdated(
                userID: try string("userId"),
                locale: try optionalString("locale").flatMap { $0.isEmpty ? nil : $0 },
                timeZone: timeZone,
                at: time
            )
        case "user.preferences.updated":
            var preferences = Preferences()
            if case .bool(let enabled)? = data["pushEnabled"] { preferences.pushEnabled = enabled }
            // `categories`, or `channels` as seed 004's NotificationPreferences names them. A choice
            // is either one switch for the category, or one per delivery channel
            // (`{"push": false, "email": true}`), of which Herald, which sends push, reads `push`;
            // a category without a push choice keeps its default.
            for member in ["categories", "channels"] {
                guard let value = data[member] else { continue }
                guard case .object(let categories) = value else {
                    throw DirectoryEventError(message: "\(member) must be an object")
                }
                for (name, choice) in categories {
                    switch choice {
                    case .bool(let enabled):
                        preferences.categories[name] = enabled
                    case .object(let perChannel):
                        switch perChannel["push"] {
                        case .bool(let enabled)?: preferences.categories[name] = enabled
                        case nil, .null?: break
                        default:
                            throw DirectoryEventError(message: "\(member).\(name).push must be true or false")
                        }
                    default:
                        throw DirectoryEventError(
                            message: "\(member).\(name) must be true or false, or an object of channels"
                        )
                    }
                }
            }
            if case .object(let quiet)? = data["quietHours"], quiet["enabled"] != .bool(false) {
                guard case .string(let start)? = quiet["start"], case .string(let end)? = quiet["end"],
                    case .string(let zone)? = quiet["timezone"] ?? quiet["timeZone"],
                    let hours = QuietHours(start: start, end: end, timeZone: zone)
                else {
                    throw DirectoryEventError(
                        message: "quietHours needs start and end (HH:mm, different) and a known timezone"
                    )
                }
                preferences.quietHours = hours
            }
            self = .preferencesUpdated(userID: try string("userId"), preferences: preferences, at: time)
        case "user.deleted":
            self = .userDeleted(userID: try string("userId"), at: time)
        default:
            throw DirectoryEventError(message: "unknown directory event type '\(event.type)'")
        }
    }
}
