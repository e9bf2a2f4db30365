import HeraldEvents
import HeraldPolicy

/// The recipients Herald knows: devices, profiles and preferences, maintained from
/// `herald.directory` events and read in batches by the worker.
///
/// Every change carries its time, and the directory applies changes by that time, so a replay or an
/// out-of-order redelivery ends in the same state: an older registration never overrides a newer
/// one, a token registered by another user moves to that user, and a token a provider invalidated
/// stays invalid unless it is registered again after the invalidation.
public protocol Directory: Sendable {
    /// Applies changes, in order, in one transaction, then keeps each user who registered a device
    /// within ``DirectoryLimits/maximumDevicesPerUser`` (the most recently registered).
    @discardableResult
    func apply(_ events: [DirectoryEvent]) async throws(StoreError) -> AppliedChanges
    /// The recipients among `userIDs` (one round trip for the whole batch). Users the directory
    /// does not know are absent; devices whose token is invalid are left out. Keyed by the ids'
    /// bytes (``OpaqueID``): ids that differ only in their Unicode normalization are other users.
    func recipients(_ userIDs: [String]) async throws(StoreError) -> [OpaqueID: Recipient]
    /// ``recipients(_:)`` answered in the order of `userIDs`, one element each (`nil`: a user the
    /// directory does not know), repeated users answered each time. For a caller that walks its
    /// users in order anyway (the worker's batch), this spares hashing each id into a dictionary
    /// and again out of it.
    func recipients(inOrder userIDs: [String]) async throws(StoreError) -> [Recipient?]
    /// When each of `userIDs` that was deleted (`user.deleted`) was deleted, for those the store
    /// still remembers (until the purge, ``StateStore/purge(before:)``): what `herald directory
    /// show` tells an operator checking an erasure.
    func deletions(_ userIDs: [String]) async throws(StoreError) -> [OpaqueID: Timestamp]
}

/// What applying a batch of directory changes did beyond the changes themselves.
public struct AppliedChanges: Sendable, Equatable {
    /// Devices removed because their user had more than the directory keeps, with their users
    /// (a user once per device).
    public var evicted: [String] = []

    public init(evicted: [String] = []) { self.evicted = evicted }
}

/// How much of one user the directory keeps.
public enum DirectoryLimits {
    /// The most devices the directory keeps for one user by default (`store.max_devices_per_user`):
    /// far more than a person uses, so the worker's own limit (`worker.max_devices_per_recipient`)
    /// decides where a notification goes. Without one, a client that registers a new device at
    /// every start, or a buggy or hostile one, would grow a user without end, and every look-up of
    /// them would read it all.
    public static let maximumDevicesPerUser = 1000
    /// The users whose devices a batch may have pushed over the limit: those with a registration,
    /// each once, in the order of their first registration in the batch.
    static func registeringUsers(_ events: [DirectoryEvent]) -> [String] {
        var seen = Set<OpaqueID>()
        var users: [String] = []
        for case .deviceRegistered(let device) in events where seen.insert(OpaqueID(device.userID)).inserted {
            users.append(device.userID)
        }
        return users
    }
}

extension Directory {
    public func recipients(inOrder userIDs: [String]) async throws(StoreError) -> [Recipient?] {
        let found = try await recipients(userIDs)
        return userIDs.map { found[OpaqueID($0)] }
    }
}

/// A user as the worker needs them.
public struct Recipient: Sendable, Hashable {
    @inlinable public var userID: String {
        _read { yield storage.fields.userID }
        _modify { yield &storage.fields.userID }
    }
    @inlinable public var devices: [RegisteredDevice] {
        _read { yield storage.fields.devices }
        _modify { yield &storage.fields.devices }
    }
    @inlinable public var locale: String? {
        _read { yield storage.fields.locale }
        _modify { yield &storage.fields.locale }
    }
    @inlinable public var timeZone: String? {
        _read { yield storage.fields.timeZone }
        _modify { yield &storage.fields.timeZone }
    }
    @inlinable public var preferences: Preferences {
        _read { yield storage.fields.preferences }
        _modify { yield &storage.fields.preferences }
    }

    // Read in place (`_read`): counting a recipient's devices, or passing on their preferences,
    // retains nothing.
    // The fields live in one shared object, copied on the first write to a shared one: a recipient
    // is made once when the directory cache fills and copied for every event sent to them (into the
    // batch's directory, out of it, into each build), and a copy of the fields retained and released
    // each of their strings and arrays every time.
    @usableFromInline var storage: SharedFields<Fields>

    @usableFromInline struct Fields: Hashable, Sendable {
        @usableFromInline var userID: String
        @usableFromInline var devices: [RegisteredDevice]
        @usableFromInline var locale: String?
        @usableFromInline var timeZone: String?
        @usableFromInline var preferences: Preferences
    }

    public init(
        userID: String,
        devices: [RegisteredDevice] = [],
        locale: String? = nil,
        timeZone: String? = nil,
        preferences: Preferences = Preferences()
    ) {
        storage = SharedFields(
            Fields(userID: userID, devices: devices, locale: locale, timeZone: timeZone, preferences: preferences)
        )
    }
}

extension Recipient {
    /// Puts every recipient's devices in the order both stores return them: oldest registration
    /// first, then by device id. Keys are collected first so the dictionary is not copied by being
    /// mutated while it is iterated.
    static func sortDevices(in recipients: inout [OpaqueID: Recipient]) {
        let several = recipients.compactMap { $0.value.devices.count > 1 ? $0.key : nil }
        for userID in several {
            recipients[userID]?.devices.sort { ($0.registeredAt, $0.deviceID) < ($1.registeredAt, $1.deviceID) }
        }
    }
}

/// One device of a user.
public struct RegisteredDevice: Sendable, Hashable {
    public var deviceID: String
    public var platform: String
    public var provider: PushProvider
    public var token: String
    public var appID: String
    public var sandbox: Bool
    public var locale: String?
    public var registeredAt: Timestamp
}
