import Foundation
import HeraldEvents
import HeraldPolicy
import HeraldTestSupport
import Testing

@testable import HeraldStore

/// SQLite answers lookups from `recipient_records`, which every directory change rewrites from
/// `devices` and `users`; these check that the two never disagree, whatever the changes.
@Suite("SQLite recipient records")
struct RecipientRecordTests {
    /// Seeded, so a failure can be replayed.
    typealias Generator = SeededRandom

    /// Any directory change over a few users, devices and tokens, so tokens move between users,
    /// invalidations meet re-registrations, and changes arrive out of order.
    func change(_ random: inout Generator) -> DirectoryEvent {
        let user = "user-\(random.next(below: 6))"
        let at = Timestamp(epochMilliseconds: 1_763_000_000_000 + Int64(random.next(below: 1_000)) * 1_000)
        let provider: PushProvider = [.apns, .fcm, .expo][random.next(below: 3)]
        switch random.next(below: 10) {
        case 0..<4:
            return .deviceRegistered(
                DeviceRegistration(
                    userID: user,
                    deviceID: "device-\(random.next(below: 3))",
                    platform: provider == .apns ? "ios" : "android",
                    provider: provider,
                    token: "token-\(random.next(below: 8))",
                    appID: "no.getdrop.app",
                    sandbox: random.next(below: 2) == 0,
                    locale: random.next(below: 2) == 0 ? nil : "pl-PL",
                    at: at
                )
            )
        case 4: return .deviceUnregistered(userID: user, deviceID: "device-\(random.next(below: 3))", at: at)
        case 5: return .tokenInvalidated(provider: provider, token: "token-\(random.next(below: 8))", at: at)
        case 6, 7:
            return .profileUpdated(
                userID: user,
                locale: random.next(below: 3) == 0 ? nil : "nb-NO",
                timeZone: random.next(below: 3) == 0 ? nil : "Europe/Oslo",
                at: at
            )
        default:
            return .preferencesUpdated(
                userID: user,
                preferences: Preferences(
                    pushEnabled: random.next(below: 4) != 0,
                    categories: ["marketing": random.next(below: 2) == 0],
                    quietHours: random.next(below: 2) == 0
                        ? nil : QuietHours(start: "22:00", end: "07:00", timeZone: "Europe/Oslo")
                ),
                at: at
            )
        }
    }

    @Test("after any sequence of directory changes, the records say what devices and users say", arguments: [1, 2, 3])
    func recordsFollowTheDirectory(seed: UInt64) async throws {
        let store = try SQLiteStore(path: ":memory:", directoryCache: 0)
        var random = Generator(seed: seed)
        let everyone = (0..<6).map { "user-\($0)" }
        var changed = 0
        for _ in 0..<60 {
            let batch = (0..<(1 + random.next(below: 5))).map { _ in change(&random) }
            try await store.apply(batch)
            let fromRecords = try await store.recipients(everyone)
            let fromTables = try await store.assembledRecipients(everyone)
            #expect(fromRecords == fromTables)
            changed += fromRecords.values.reduce(0) { $0 + $1.devices.count }
        }
        #expect(changed > 0, "the changes registered devices that stayed")
    }

    static func decode(_ bytes: [UInt8]) throws -> Recipient {
        var result: Result<Recipient, StoreError>?
        bytes.withUnsafeBytes { buffer in
            result = Result { () throws(StoreError) in try RecipientRecord.decode(userID: "ana", buffer) }
        }
        return try result!.get()
    }

    @Test("a record round-trips everything a recipient holds")
    func roundTrip() throws {
        let recipient = Recipient(
            userID: "ana",
            devices: [
                RegisteredDevice(
                    deviceID: "telefon-ø",
                    platform: "ios",
                    provider: .apns,
                    token: String(repeating: "ab", count: 32),
                    appID: "no.getdrop.app",
                    sandbox: true,
                    locale: nil,
                    registeredAt: Timestamp(epochMilliseconds: 1)
                ),
                RegisteredDevice(
                    deviceID: "",
                    platform: "android",
                    provider: .expo,
                    token: "ExponentPushToken[x]",
                    appID: "app",
                    sandbox: false,
                    locale: "nb-NO",
                    registeredAt: Timestamp(epochMilliseconds: -5)
                ),
            ],
            locale: "nb-NO",
            timeZone: nil,
            preferences: Preferences(
                pushEnabled: false,
                categories: ["marketing": true],
                quietHours: QuietHours(start: "22:00", end: "07:00", timeZone: "Europe/Oslo")
            )
        )
        let bytes = RecipientRecord.encode(recipient)
        let decoded = try Self.decode(bytes)
        #expect(decoded == recipient)
        // Every truncation is refused, none is read as a shorter record.
        for length in 0..<bytes.count {
            #expect(throws: StoreError.self) { try Self.decode(Array(bytes.prefix(length))) }
        }
    }

    @Test("a version 7 database gets a record for every user, and the lookup finds them")
    func migrationFromVersion7() async throws {
        let connection = try SQLiteConnection(path: ":memory:")
        try SQLiteStore.migrate(connection, to: 7)
        try connection.execute(
            """
            INSERT INTO devices VALUES ('ana', 'phone', 'ios', 'apns', 't1', 'app', 0, 'nb', 100, NULL);
            INSERT INTO devices VALUES ('ana', 'old', 'ios', 'apns', 't0', 'app', 0, NULL, 50, 60);
            INSERT INTO devices VALUES ('cy', 'old', 'ios', 'apns', 't2', 'app', 0, NULL, 50, 60);
            INSERT INTO users VALUES ('ben', 'pl', 'Europe/Warsaw', 100, '{"pushEnabled":false,"categories":{}}', 100);
            """
        )
        let store = try SQLiteStore(connection: connection, directoryCache: 0)
        var records = 0
        try connection.query("SELECT count(*) FROM recipient_records") { records = Int($0.integer(0)) }
        #expect(records == 2, "ana and ben; cy has only an invalidated device")
        let found = try await store.recipients(["ana", "ben", "cy"])
        #expect(found["ana"]?.devices.map(\.token) == ["t1"])
        #expect(found["ben"]?.locale == "pl" && found["ben"]?.preferences.pushEnabled == false)
        #expect(found["cy"] == nil)
    }

    /// A store at `path` (no directory cache) where each user has a phone, with tokens t1, t2, … in
    /// order.
    static func storeWithPhones(at path: String, _ users: [String]) async throws -> SQLiteStore {
        let store = try SQLiteStore(path: path, directoryCache: 0)
        try await store.apply(
            users.enumerated().map { registered($1, "phone", token: "t\($0 + 1)", at: "2026-11-01T10:00:00Z") }
        )
        return store
    }

    @Test("records are keyed by a stable hash of the user id, and users whose keys collide are told apart by id")
    func keyCollision() async throws {
        // FNV-1a's published test vectors: the key is stored, so it must never change.
        #expect(RecipientRecord.key("") == Int64(bitPattern: 0xcbf2_9ce4_8422_2325))
        #expect(RecipientRecord.key("a") == Int64(bitPattern: 0xaf63_dc4c_8601_ec8c))
        #expect(RecipientRecord.key("foobar") == Int64(bitPattern: 0x8594_4171_f739_67e8))

        let scratch = ScratchDirectory()
        let path = scratch.path + "/state.sqlite"
        let store = try await Self.storeWithPhones(at: path, ["ana", "ben"])
        // No two real ids are known to collide, so ben's record is moved under ana's key.
        let other = try SQLiteConnection(path: path)
        try other.query(
            "UPDATE recipient_records SET user_key = ? WHERE user_id = 'ben'",
            [.integer(RecipientRecord.key("ana"))]
        )
        let found = try await store.recipients(["ana"])
        #expect(found["ana"]?.devices.map(\.token) == ["t1"])
        #expect(found["ben"] == nil, "only the users asked for are answered")
        try await store.apply([registered("ana", "tablet", token: "t3", at: "2026-11-02T10:00:00Z")])
        var rows: [String: Int] = [:]
        try other.query("SELECT user_id, count(*) FROM recipient_records GROUP BY user_id") { row in
            rows[row.text(0) ?? ""] = Int(row.integer(1))
        }
        #expect(rows == ["ana": 1, "ben": 1], "ana's rewrite leaves the other user's row alone")
        #expect(try await store.recipients(["ana"])["ana"]?.devices.map(\.token).sorted() == ["t1", "t3"])
    }

    @Test(
        "the file is read through a memory map of the configured size; 0 reads it without one",
        arguments: [0, 64, Int.max]
    )
    func memoryMap(megabytes: Int) async throws {
        let scratch = ScratchDirectory()
        let store = try SQLiteStore(
            path: scratch.path + "/state.sqlite",
            directoryCache: 0,
            memoryMapMegabytes: megabytes
        )
        let mapped = try await store.run { connection throws(StoreError) in
            var size: Int64 = -1
            try connection.query("PRAGMA mmap_size") { size = $0.integer(0) }
            return size
        }
        if megabytes == Int.max {
            // A setting past SQLite's limit is capped there, never wrapped into a negative size.
            #expect(mapped >= Int64(SQLiteStore.maximumMemoryMapMegabytes) << 20)
        } else {
            #expect(mapped == Int64(megabytes) << 20)
        }
        try await store.apply([registered("ana", "phone", token: "t1", at: "2026-11-01T10:00:00Z")])
        #expect(try await store.recipients(["ana"])["ana"]?.devices.map(\.token) == ["t1"])
    }

    @Test(
        "SQLite's page cache holds what is configured: 16 MiB by default, at least 1 MiB, at most the maximum",
        arguments: [nil, 1, 64, 0, Int.max]
    )
    func pageCache(megabytes: Int?) async throws {
        let scratch = ScratchDirectory()
        let path = scratch.path + "/state.sqlite"
        let store =
            if let megabytes {
                try SQLiteStore(path: path, directoryCache: 0, pageCacheMegabytes: megabytes)
            } else {
                try SQLiteStore(path: path, directoryCache: 0)
            }
        let kibibytes = try await store.run { connection throws(StoreError) in
            var size: Int64 = 0
            try connection.query("PRAGMA cache_size") { size = $0.integer(0) }
            // Negative: a size in KiB, not in pages.
            return -size
        }
        let expected =
            switch megabytes {
            case nil: 16
            case .some(let megabytes): min(max(megabytes, 1), SQLiteStore.maximumPageCacheMegabytes)
            }
        #expect(kibibytes == Int64(expected) * 1024)
        #expect(SQLiteStore.defaultPageCacheMegabytes == 16)
    }

    @Test("a record that cannot be read (damaged, or a later layout) is rebuilt from devices and users")
    func unreadableRecord() async throws {
        let scratch = ScratchDirectory()
        let path = scratch.path + "/state.sqlite"
        let store = try await Self.storeWithPhones(at: path, ["ana", "ben", "cy"])
        let other = try SQLiteConnection(path: path)
        try other.execute("UPDATE recipient_records SET record = x'01' WHERE user_id = 'ana'")
        // A layout after the latest, its other bytes valid.
        try other.execute("UPDATE recipient_records SET record = x'03' || substr(record, 2) WHERE user_id = 'ben'")
        let found = try await store.recipients(["ana", "ben", "cy"])
        #expect(found.mapValues { $0.devices.map(\.token) } == ["ana": ["t1"], "ben": ["t2"], "cy": ["t3"]])
        var rewritten = 0
        try other.query("SELECT count(*) FROM recipient_records WHERE length(record) > 1") {
            rewritten = Int($0.integer(0))
        }
        #expect(rewritten == 3, "the damaged records were written again")
        #expect(throws: StoreError.self) { try Self.decode([1]) }
    }

    /// A record in layout 1, as Herald wrote them before 2026-11-30: the preferences as their
    /// JSON document (or none), a device's provider by name.
    static func documentRecord(_ recipient: Recipient) -> [UInt8] {
        var writer = PackedWriter()
        writer.append(RecipientRecord.documentLayout)
        writer.append(recipient.locale)
        writer.append(recipient.timeZone)
        let preferences = recipient.preferences
        writer.append(preferences == Preferences() ? nil : PreferencesDocument.encode(preferences))
        writer.append(Int64(recipient.devices.count))
        for device in recipient.devices {
            writer.append(device.deviceID)
            writer.append(device.platform)
            writer.append(device.provider.rawValue)
            writer.append(device.token)
            writer.append(device.appID)
            writer.append(UInt8(device.sandbox ? 1 : 0))
            writer.append(device.locale)
            writer.append(device.registeredAt.epochMilliseconds)
        }
        return writer.bytes
    }

    static let withPreferences = Recipient(
        userID: "ana",
        devices: [
            RegisteredDevice(
                deviceID: "phone",
                platform: "ios",
                provider: .apns,
                token: String(repeating: "cd", count: 32),
                appID: "no.getdrop.app",
                sandbox: false,
                locale: "pl-PL",
                registeredAt: Timestamp(epochMilliseconds: 1_764_000_000_000)
            ),
            RegisteredDevice(
                deviceID: "tablet",
                platform: "android",
                provider: .fcm,
                token: "fcm:" + String(repeating: "x", count: 150),
                appID: "no.getdrop.app",
                sandbox: false,
                locale: nil,
                registeredAt: Timestamp(epochMilliseconds: 1_764_000_000_001)
            ),
            RegisteredDevice(
                deviceID: "old",
                platform: "android",
                provider: .expo,
                token: "ExponentPushToken[y]",
                appID: "no.getdrop.app",
                sandbox: true,
                locale: "en",
                registeredAt: Timestamp(epochMilliseconds: 1_764_000_000_002)
            ),
        ],
        locale: "nb-NO",
        timeZone: "Europe/Oslo",
        preferences: Preferences(
            pushEnabled: true,
            categories: ["marketing": false, "messages": true, "security": true],
            quietHours: QuietHours(start: "23:30", end: "06:15", timeZone: "America/New_York")
        )
    )

    @Test("records pack the preferences (layout 2), and records written with their JSON document (layout 1) still read")
    func layouts() throws {
        let packed = RecipientRecord.encode(Self.withPreferences)
        #expect(packed.first == 2)
        #expect(try Self.decode(packed) == Self.withPreferences)
        let document = Self.documentRecord(Self.withPreferences)
        #expect(document.first == 1)
        #expect(try Self.decode(document) == Self.withPreferences)
        // The JSON is not in the packed record: its member names are not.
        #expect(!String(decoding: packed, as: UTF8.self).contains("quietHours"))
        #expect(String(decoding: document, as: UTF8.self).contains("quietHours"))
        // Nor are the providers' names.
        #expect(!String(decoding: packed, as: UTF8.self).contains("expo"))

        var plain = Self.withPreferences
        plain.preferences = Preferences()
        #expect(try Self.decode(RecipientRecord.encode(plain)) == plain)
        #expect(try Self.decode(Self.documentRecord(plain)) == plain)
        #expect(RecipientRecord.encode(plain).count < packed.count, "default preferences take one byte")

        // A flag that is neither 0 nor 1 is damage, not a preference. Without a locale and a zone
        // the record starts with the layout, their two absent flags, then the preferences flag.
        var bare = plain
        bare.locale = nil
        bare.timeZone = nil
        var damaged = RecipientRecord.encode(bare)
        #expect(damaged[3] == 0, "the preferences flag")
        damaged[3] = 2
        #expect(throws: StoreError.self) { try Self.decode(damaged) }
        // So is a provider code no provider has: the first device's follows the device count and
        // its id and platform ("phone", "ios"), each a length and its bytes.
        var unknownProvider = RecipientRecord.encode(bare)
        #expect(unknownProvider[28] == 0, "apns")
        unknownProvider[28] = 3
        #expect(throws: StoreError.self) { try Self.decode(unknownProvider) }
        unknownProvider[28] = 1
        #expect(try Self.decode(unknownProvider).devices.first?.provider == .fcm)
        // Quiet hours' minutes the encoder cannot write are damage too (the record is rebuilt),
        // not quiet hours silently dropped. 23:30 to 06:15: 1,410 then 375, eight bytes each.
        let minutes =
            withUnsafeBytes(of: Int64(1_410).littleEndian, Array.init)
            + withUnsafeBytes(of: Int64(375).littleEndian, Array.init)
        let start = try #require(
            packed.indices.first { packed[$0...].starts(with: minutes) },
            "the quiet hours' minutes, as packed"
        )
        for bad: Int64 in [1_440, -1, 375] {
            var damagedHours = packed
            damagedHours.replaceSubrange(start..<(start + 8), with: withUnsafeBytes(of: bad.littleEndian, Array.init))
            #expect(throws: StoreError.self, "start \(bad)") { try Self.decode(damagedHours) }
        }
    }

    @Test("a layout 1 record in the store is read as it is, not rebuilt; the user's next change writes layout 2")
    func documentRecordInStore() async throws {
        let scratch = ScratchDirectory()
        let path = scratch.path + "/state.sqlite"
        let store = try await Self.storeWithPhones(at: path, ["ana"])
        try await store.apply([
            .preferencesUpdated(
                userID: "ana",
                preferences: Self.withPreferences.preferences,
                at: try #require(Timestamp(rfc3339: "2026-11-01T11:00:00Z"))
            )
        ])
        let expected = try #require(try await store.recipients(["ana"])["ana"])
        #expect(expected.preferences == Self.withPreferences.preferences)
        let other = try SQLiteConnection(path: path)
        try other.query(
            "UPDATE recipient_records SET record = ? WHERE user_id = 'ana'",
            [.blob(Self.documentRecord(expected))]
        )
        func layout() throws -> UInt8? {
            var first: UInt8?
            try other.query("SELECT record FROM recipient_records WHERE user_id = 'ana'") { first = $0.blob(0).first }
            return first
        }
        #expect(try layout() == 1)
        #expect(try await store.recipients(["ana"])["ana"] == expected)
        #expect(try layout() == 1, "a record in an older layout is read, not rebuilt")
        try await store.apply([registered("ana", "tablet", token: "t9", at: "2026-11-02T10:00:00Z")])
        #expect(try layout() == 2)
        let changed = try #require(try await store.recipients(["ana"])["ana"])
        #expect(changed.preferences == expected.preferences)
        #expect(changed.devices.map(\.token).sorted() == ["t1", "t9"])
    }

    @Test("look-ups of any number of users find exactly those the directory has, at sizes on both sides of a chunk")
    func lookupSizes() async throws {
        let store = try SQLiteStore(path: ":memory:", directoryCache: 0)
        let users = (0..<700).map { "user-\($0)" }
        try await store.apply(
            users.enumerated().map { registered($1, "phone", token: "t\($0)", at: "2026-11-01T10:00:00Z") }
        )
        var random = Generator(seed: 7)
        for count in [1, 2, 3, 7, 8, 9, 255, 256, 257, 499, 500, 501, 1_000] {
            // Some users twice and some the directory does not know, in no order.
            let asked = (0..<count).map { _ in
                random.next(below: 10) == 0 ? "stranger-\(random.next(below: 50))" : users[random.next(below: 700)]
            }
            let found = try await store.recipients(inOrder: asked)
            #expect(found.count == asked.count)
            for (userID, recipient) in zip(asked, found) {
                if userID.hasPrefix("stranger") {
                    #expect(recipient == nil)
                } else {
                    #expect(recipient?.userID == userID)
                    #expect(recipient?.devices.map(\.token) == ["t\(userID.dropFirst(5))"])
                }
            }
        }
    }
}
