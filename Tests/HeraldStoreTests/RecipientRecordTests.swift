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

    @Test("a record that cannot be read (damaged, or a later layout) is rebuilt from devices and users")
    func unreadableRecord() async throws {
        let scratch = ScratchDirectory()
        let path = scratch.path + "/state.sqlite"
        let store = try await Self.storeWithPhones(at: path, ["ana", "ben", "cy"])
        let other = try SQLiteConnection(path: path)
        try other.execute("UPDATE recipient_records SET record = x'01' WHERE user_id = 'ana'")
        try other.execute("UPDATE recipient_records SET record = x'02' WHERE user_id = 'ben'")
        let found = try await store.recipients(["ana", "ben", "cy"])
        #expect(found.mapValues { $0.devices.map(\.token) } == ["ana": ["t1"], "ben": ["t2"], "cy": ["t3"]])
        var rewritten = 0
        try other.query("SELECT count(*) FROM recipient_records WHERE length(record) > 1") {
            rewritten = Int($0.integer(0))
        }
        #expect(rewritten == 3, "the damaged records were written again")
        #expect(throws: StoreError.self) { try Self.decode([1]) }
    }
}
