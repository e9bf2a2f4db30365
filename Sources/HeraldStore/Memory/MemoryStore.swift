import HeraldEvents
import HeraldPolicy
import Synchronization

/// Herald's state in this process's memory, for `herald replay --store memory` and tests: nothing
/// outlives the process, and no other process shares it.
///
/// It keeps the same state as ``SQLiteStore`` and passes the same contract suite, so a replay
/// decides exactly as a worker on SQLite or PostgreSQL would (the replay-equals-live-worker test
/// compares them). What it leaves out is what only a file or a server needs: a query per lookup,
/// transactions, a journal. Replay decides every event once, in one process, and spent an eighth
/// of its time in SQLite.
///
/// Each of the directory, the decisions and the deliveries is one ``Mutex``: a call is one critical
/// section, so a batch's changes are seen whole or not at all, and nothing in one can fail halfway.
/// The calls do no I/O and hold the lock only for the work itself.
public final class MemoryStore: StateStore {
    let directory = Mutex(DirectoryTables())
    let decisions: Mutex<DecisionTables>
    let deliveries = Mutex(DeliveryTables())

    /// The most devices kept for one user (``DirectoryLimits/maximumDevicesPerUser``).
    let maximumDevicesPerUser: Int

    public init(expectedDecisions: Int = 0, maximumDevicesPerUser: Int = DirectoryLimits.maximumDevicesPerUser) {
        decisions = Mutex(DecisionTables(expectedDecisions: expectedDecisions))
        self.maximumDevicesPerUser = max(maximumDevicesPerUser, 1)
    }

    @discardableResult
    public func apply(_ events: [DirectoryEvent]) async throws(StoreError) -> AppliedChanges {
        let applied = directory.withLock { tables in
            var touched = Set<OpaqueID>()
            for event in events { tables.apply(event) { touched.insert(OpaqueID($0)) } }
            var applied = AppliedChanges()
            for userID in DirectoryLimits.registeringUsers(events) {
                let evicted = tables.evictDevices(of: userID, beyond: maximumDevicesPerUser)
                if evicted > 0 { touched.insert(OpaqueID(userID)) }
                applied.evicted += repeatElement(userID, count: evicted)
            }
            for userID in touched { tables.assemble(userID.string) }
            return applied
        }
        // The notifications waiting for a deleted user go too. Not atomic with the directory's
        // change, as nothing in this store fails halfway: a decision between the two locks is one
        // the deletion would have removed anyway, or one made after it.
        for case .userDeleted(let userID, let at) in events {
            decisions.withLock { $0.forget(userID, asOf: at) }
        }
        return applied
    }

    public func recipients(_ userIDs: [String]) async throws(StoreError) -> [OpaqueID: Recipient] {
        directory.withLock { tables in
            var result: [OpaqueID: Recipient] = [:]
            result.reserveCapacity(userIDs.count)
            for userID in userIDs.lazy.map { OpaqueID($0) } {
                if let recipient = tables.recipients[userID] { result[userID] = recipient }
            }
            return result
        }
    }

    public func deletions(_ userIDs: [String]) async throws(StoreError) -> [OpaqueID: Timestamp] {
        directory.withLock { tables in
            var found: [OpaqueID: Timestamp] = [:]
            for userID in userIDs { found[OpaqueID(userID)] = tables.deletedAt(userID) }
            return found
        }
    }

    public func analyze() async throws(StoreError) {}
}

/// The directory as ``SQLiteStore``'s `devices`, `invalid_tokens` and `users` tables hold it, with
/// each user's ``Recipient`` assembled whenever a change touches them, so a lookup is one hash.
struct DirectoryTables: Sendable {
    /// A user's devices and profile.
    ///
    /// The devices a lookup returns are kept apart from invalidated ones, already in the order a
    /// lookup gives them, so the recipient shares their array instead of holding a copy.
    struct User: Sendable {
        /// Not invalidated: oldest registration first, then by device id.
        var devices: [RegisteredDevice] = []
        /// Invalidated at or after they were registered; kept because a later invalidation moves
        /// the time, and a registration of the same device replaces them.
        var invalidated: [(device: RegisteredDevice, at: Timestamp)] = []
        var profile: Profile?

        func find(_ deviceID: String) -> RegisteredDevice? {
            devices.first { $0.deviceID.hasSameBytes(as: deviceID) }
                ?? invalidated.first { $0.device.deviceID.hasSameBytes(as: deviceID) }?.device
        }

        mutating func remove(_ deviceID: String) {
            devices.removeAll { $0.deviceID.hasSameBytes(as: deviceID) }
            invalidated.removeAll { $0.device.deviceID.hasSameBytes(as: deviceID) }
        }

        mutating func insert(_ device: RegisteredDevice) {
            let index = devices.firstIndex {
                ($0.registeredAt, $0.deviceID) > (device.registeredAt, device.deviceID)
            }
            devices.insert(device, at: index ?? devices.endIndex)
        }

        var isEmpty: Bool { devices.isEmpty && invalidated.isEmpty && profile == nil }
    }

    /// A user's profile and preferences, each with the time of the change that set it.
    struct Profile: Sendable {
        var locale: String?
        var timeZone: String?
        var profileAt: Timestamp?
        var preferences: Preferences?
        var preferencesAt: Timestamp?
    }

    // Ids and tokens by their bytes, as the databases key them (``OpaqueID``).
    struct DeviceKey: Hashable, Sendable {
        var userID: String
        var deviceID: String

        static func == (lhs: DeviceKey, rhs: DeviceKey) -> Bool {
            lhs.userID.hasSameBytes(as: rhs.userID) && lhs.deviceID.hasSameBytes(as: rhs.deviceID)
        }

        func hash(into hasher: inout Hasher) {
            userID.hashBytes(into: &hasher)
            deviceID.hashBytes(into: &hasher)
        }
    }

    struct TokenKey: Hashable, Sendable {
        var provider: PushProvider
        var token: String

        static func == (lhs: TokenKey, rhs: TokenKey) -> Bool {
            lhs.provider == rhs.provider && lhs.token.hasSameBytes(as: rhs.token)
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(provider)
            token.hashBytes(into: &hasher)
        }
    }

    private var users: [OpaqueID: User] = [:]
    /// Which device holds each token: a token belongs to one device at a time.
    private var holders: [TokenKey: DeviceKey] = [:]
    /// The latest invalidation of each token: it applies to a registration no later than it.
    private var invalidations: [TokenKey: Timestamp] = [:]
    /// When each deleted user was deleted, and when that was applied (the wall clock, as the
    /// other stores take their database's): a change dated no later than the deletion is ignored
    /// until the purge forgets it, a retention after it was applied.
    private var deletions: [OpaqueID: (at: Timestamp, appliedAt: Timestamp)] = [:]
    /// What a lookup answers, kept by ``assemble(_:)``.
    private(set) var recipients: [OpaqueID: Recipient] = [:]

    /// Applies one change the way ``SQLiteStore`` does: by the change's time, so that order of
    /// arrival does not matter. `touched` is told of every user whose recipient it may change.
    mutating func apply(_ event: DirectoryEvent, touched: (String) -> Void) {
        if let userID = event.userID, let deletedAt = deletions[OpaqueID(userID)]?.at, event.at <= deletedAt {
            switch event {
            case .deviceRegistered, .profileUpdated, .preferencesUpdated: return
            case .deviceUnregistered, .tokenInvalidated, .userDeleted: break
            }
        }
        switch event {
        case .deviceRegistered(let registration):
            let token = TokenKey(provider: registration.provider, token: registration.token)
            let own = DeviceKey(userID: registration.userID, deviceID: registration.deviceID)
            let holder = holders[token].flatMap { $0 == own ? nil : $0 }
            // A newer registration of the same token elsewhere wins over this one.
            if let holder, let device = users[OpaqueID(holder.userID)]?.find(holder.deviceID),
                device.registeredAt > registration.at
            {
                return
            }
            touched(own.userID)
            // The token moves: it leaves whatever user or device had it before.
            if let holder {
                remove(holder)
                touched(holder.userID)
            }
            if let existing = users[OpaqueID(own.userID)]?.find(own.deviceID) {
                guard registration.at >= existing.registeredAt else { return }
                remove(own)
            }
            let device = RegisteredDevice(
                deviceID: registration.deviceID,
                platform: registration.platform,
                provider: registration.provider,
                token: registration.token,
                appID: registration.appID,
                sandbox: registration.sandbox,
                locale: registration.locale,
                registeredAt: registration.at
            )
            // An invalidation at or after this registration still applies to it.
            if let invalidatedAt = invalidations[token], invalidatedAt >= registration.at {
                users[OpaqueID(own.userID), default: User()].invalidated.append((device, invalidatedAt))
            } else {
                users[OpaqueID(own.userID), default: User()].insert(device)
            }
            holders[token] = own
        case .deviceUnregistered(let userID, let deviceID, let at):
            touched(userID)
            if let device = users[OpaqueID(userID)]?.find(deviceID), device.registeredAt <= at {
                remove(DeviceKey(userID: userID, deviceID: deviceID))
            }
        case .tokenInvalidated(let provider, let token, let at):
            let key = TokenKey(provider: provider, token: token)
            invalidations[key] = max(invalidations[key] ?? at, at)
            guard let holder = holders[key], var user = users[OpaqueID(holder.userID)] else { return }
            if let index = user.devices.firstIndex(where: { $0.deviceID.hasSameBytes(as: holder.deviceID) }),
                user.devices[index].registeredAt <= at
            {
                user.invalidated.append((user.devices.remove(at: index), at))
            } else if let index = user.invalidated.firstIndex(where: {
                $0.device.deviceID.hasSameBytes(as: holder.deviceID)
            }),
                user.invalidated[index].device.registeredAt <= at
            {
                user.invalidated[index].at = max(user.invalidated[index].at, at)
            } else {
                return
            }
            users[OpaqueID(holder.userID)] = user
            touched(holder.userID)
        case .profileUpdated(let userID, let locale, let timeZone, let at):
            touched(userID)
            var profile = users[OpaqueID(userID)]?.profile ?? Profile()
            if let profileAt = profile.profileAt, at < profileAt { return }
            profile.locale = locale ?? profile.locale
            profile.timeZone = timeZone ?? profile.timeZone
            profile.profileAt = at
            users[OpaqueID(userID), default: User()].profile = profile
        case .preferencesUpdated(let userID, let preferences, let at):
            touched(userID)
            var profile = users[OpaqueID(userID)]?.profile ?? Profile()
            if let preferencesAt = profile.preferencesAt, at < preferencesAt { return }
            // Through the stored document, as the other stores keep them: a replay with this store
            // sees exactly the preferences a worker reads back.
            profile.preferences = PreferencesDocument.decode(PreferencesDocument.encode(preferences))
            profile.preferencesAt = at
            users[OpaqueID(userID), default: User()].profile = profile
        case .userDeleted(let userID, let at):
            touched(userID)
            deletions[OpaqueID(userID)] = (max(deletions[OpaqueID(userID)]?.at ?? at, at), WallClock().now())
            guard var user = users[OpaqueID(userID)] else { return }
            let gone = (user.devices + user.invalidated.map(\.device)).filter { $0.registeredAt <= at }
            for device in gone { remove(DeviceKey(userID: userID, deviceID: device.deviceID)) }
            user = users[OpaqueID(userID)] ?? User()
            if var profile = user.profile {
                if let profileAt = profile.profileAt, profileAt <= at {
                    profile.locale = nil
                    profile.timeZone = nil
                    profile.profileAt = nil
                }
                if let preferencesAt = profile.preferencesAt, preferencesAt <= at {
                    profile.preferences = nil
                    profile.preferencesAt = nil
                }
                user.profile = profile.profileAt == nil && profile.preferencesAt == nil ? nil : profile
            }
            users[OpaqueID(userID)] = user.isEmpty ? nil : user
        }
    }

    /// Removes `userID`'s devices beyond the `limit` most recently registered (by registration,
    /// then device id), invalidated ones included, as ``SQLiteStore`` does; returns how many.
    mutating func evictDevices(of userID: String, beyond limit: Int) -> Int {
        guard let user = users[OpaqueID(userID)], user.devices.count + user.invalidated.count > limit else { return 0 }
        let newestFirst = (user.devices + user.invalidated.map(\.device)).sorted {
            ($0.registeredAt, $0.deviceID) > ($1.registeredAt, $1.deviceID)
        }
        for device in newestFirst.dropFirst(limit) { remove(DeviceKey(userID: userID, deviceID: device.deviceID)) }
        return newestFirst.count - limit
    }

    /// When `userID` was deleted, while the deletion is remembered.
    func deletedAt(_ userID: String) -> Timestamp? { deletions[OpaqueID(userID)]?.at }

    /// Forgets users deleted (applied) before `before`, and devices whose token was invalidated
    /// before it with the invalidations, as ``SQLiteStore/purgeDeadDevices(before:)`` does.
    mutating func purge(before: Timestamp) {
        deletions = deletions.filter { $0.value.appliedAt >= before }
        // An invalidated device still holds its token: found through the token, not by reading
        // every user.
        for (token, at) in invalidations where at < before {
            guard let holder = holders[token],
                let dead = users[OpaqueID(holder.userID)]?.invalidated.first(where: {
                    $0.device.deviceID.hasSameBytes(as: holder.deviceID)
                }),
                dead.at < before
            else { continue }
            remove(holder)
        }
        invalidations = invalidations.filter { $0.value >= before }
    }

    private mutating func remove(_ key: DeviceKey) {
        guard let device = users[OpaqueID(key.userID)]?.find(key.deviceID) else { return }
        users[OpaqueID(key.userID)]?.remove(key.deviceID)
        if users[OpaqueID(key.userID)]?.isEmpty == true { users[OpaqueID(key.userID)] = nil }
        let token = TokenKey(provider: device.provider, token: device.token)
        if holders[token] == key { holders[token] = nil }
    }

    /// Rebuilds `userID`'s recipient from their devices and profile, as ``SQLiteStore`` assembles
    /// it: devices not invalidated, oldest registration first; absent if neither is left.
    mutating func assemble(_ userID: String) {
        guard let user = users[OpaqueID(userID)], !user.devices.isEmpty || user.profile != nil else {
            recipients[OpaqueID(userID)] = nil
            return
        }
        recipients[OpaqueID(userID)] = Recipient(
            userID: userID,
            devices: user.devices,
            locale: user.profile?.locale,
            timeZone: user.profile?.timeZone,
            preferences: user.profile?.preferences ?? Preferences()
        )
    }
}
