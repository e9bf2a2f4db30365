import Foundation
import HeraldEvents
import HeraldPolicy
import HeraldTestSupport
import Testing

@testable import HeraldStore

func at(_ text: String) -> Timestamp { Timestamp(rfc3339: text)! }

func registered(
    _ user: String,
    _ device: String,
    token: String,
    at time: String,
    provider: PushProvider = .apns
) -> DirectoryEvent {
    .deviceRegistered(
        DeviceRegistration(
            userID: user,
            deviceID: device,
            platform: "ios",
            provider: provider,
            token: token,
            appID: "no.getdrop.app",
            sandbox: false,
            locale: "nb-NO",
            at: at(time)
        )
    )
}

@Suite("Store contract: the directory")
struct DirectoryContractTests {
    @Test("a user may have several devices; profile and preferences come back with them", arguments: StoreKind.allCases)
    func devicesProfileAndPreferences(_ kind: StoreKind) async throws {
        try await withStore(kind) { directory in
            try await directory.apply([
                registered("ana", "phone", token: "t1", at: "2026-11-01T10:00:00Z"),
                registered("ana", "tablet", token: "t2", at: "2026-11-01T11:00:00Z", provider: .fcm),
                .profileUpdated(
                    userID: "ana",
                    locale: "nb-NO",
                    timeZone: "Europe/Oslo",
                    at: at("2026-11-01T10:00:00Z")
                ),
                .preferencesUpdated(
                    userID: "ana",
                    preferences: Preferences(
                        categories: ["marketing": true],
                        quietHours: QuietHours(start: "22:00", end: "07:00", timeZone: "Europe/Oslo")
                    ),
                    at: at("2026-11-01T10:00:00Z")
                ),
            ])
            let found = try await directory.recipients(["ana", "nobody"])
            #expect(found["nobody"] == nil)
            let ana = try #require(found["ana"])
            #expect(ana.devices.map(\.token) == ["t1", "t2"])
            #expect(ana.devices.map(\.provider) == [.apns, .fcm])
            #expect(ana.locale == "nb-NO" && ana.timeZone == "Europe/Oslo")
            #expect(ana.preferences.categories == ["marketing": true])
            #expect(ana.preferences.quietHours == QuietHours(start: "22:00", end: "07:00", timeZone: "Europe/Oslo"))
        }
    }

    @Test(
        "recipients in order: one answer per id in its place, repeated and unknown users included, as the dictionary answers",
        arguments: StoreKind.allCases
    )
    func recipientsInOrder(_ kind: StoreKind) async throws {
        try await withStore(kind) { directory in
            try await directory.apply([
                registered("ana", "phone", token: "t1", at: "2026-11-01T10:00:00Z"),
                registered("ben", "pixel", token: "t2", at: "2026-11-01T10:00:00Z", provider: .fcm),
            ])
            let ids = ["ben", "nobody", "ana", "ben", "nobody", "ana"]
            // Twice: SQLite reads the records the first time and answers from its cache the second.
            for _ in 0..<2 {
                let inOrder = try await directory.recipients(inOrder: ids)
                #expect(inOrder.map { $0?.userID } == ["ben", nil, "ana", "ben", nil, "ana"])
                #expect(inOrder.map { $0?.devices.map(\.token) } == [["t2"], nil, ["t1"], ["t2"], nil, ["t1"]])
                let found = try await directory.recipients(ids)
                #expect(zip(ids, inOrder).allSatisfy { found[OpaqueID($0.0)] == $0.1 })
            }
            #expect(try await directory.recipients(inOrder: []).isEmpty)
        }
    }

    @Test(
        "a token registered by another user moves to that user (a shared phone after logout/login)",
        arguments: StoreKind.allCases
    )
    func tokenMoves(_ kind: StoreKind) async throws {
        try await withStore(kind) { directory in
            try await directory.apply([registered("ana", "phone", token: "shared", at: "2026-11-01T10:00:00Z")])
            try await directory.apply([registered("ben", "phone", token: "shared", at: "2026-11-02T10:00:00Z")])
            let found = try await directory.recipients(["ana", "ben"])
            #expect(found["ana"]?.devices.isEmpty ?? true, "the previous user no longer receives on that phone")
            #expect(found["ben"]?.devices.map(\.token) == ["shared"])
            // An older registration arriving late does not take the token back.
            try await directory.apply([registered("ana", "phone", token: "shared", at: "2026-11-01T12:00:00Z")])
            let again = try await directory.recipients(["ana", "ben"])
            #expect(again["ana"]?.devices.isEmpty ?? true)
            #expect(again["ben"]?.devices.map(\.token) == ["shared"])
        }
    }

    @Test(
        "the purge forgets devices whose token died before its horizon, and those invalidations; later ones stay",
        arguments: StoreKind.allCases
    )
    func deadDevicesPurged(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            try await store.apply([
                registered("ana", "phone", token: "t1", at: "2026-11-01T10:00:00Z"),
                registered("ana", "tablet", token: "t2", at: "2026-11-01T10:00:00Z"),
                registered("ana", "watch", token: "t3", at: "2026-11-01T10:00:00Z"),
                .tokenInvalidated(provider: .apns, token: "t1", at: at("2026-11-01T11:00:00Z")),
                .tokenInvalidated(provider: .apns, token: "t2", at: at("2026-11-01T13:00:00Z")),
            ])
            try await store.purge(before: at("2026-11-01T12:00:00Z"))
            #expect(try await store.recipients(["ana"])["ana"]?.devices.map(\.token) == ["t3"])
            if let sqlite = store as? SQLiteStore {
                let left = try await sqlite.run { connection throws(StoreError) in
                    var devices: [String] = []
                    try connection.query("SELECT device_id FROM devices ORDER BY device_id") { row in
                        devices.append(row.text(0) ?? "")
                    }
                    return devices
                }
                #expect(left == ["tablet", "watch"], "the dead phone's row is gone; the tablet died after the horizon")
            }
            // Registrations older than each invalidation, arriving now: the forgotten one no longer
            // holds t1 back; t2's still holds.
            try await store.apply([
                registered("ben", "b1", token: "t1", at: "2026-11-01T10:30:00Z"),
                registered("ben", "b2", token: "t2", at: "2026-11-01T12:30:00Z"),
            ])
            #expect(try await store.recipients(["ben"])["ben"]?.devices.map(\.token) == ["t1"])
        }
    }

    @Test(
        "devices registered in the same millisecond are kept in Swift's order of their ids (Unicode scalars, after NFC), whatever the PostgreSQL database's collation",
        arguments: [nil, "en-US"] as [String?]
    )
    func deviceLimitOrderIsSwifts(_ icuLocale: String?) async throws {
        // Both in the same millisecond: the greater id is the newer. C and Swift put "Phone" (P is
        // 0x50) before "phone" (0x70), English rules the other way round. The two forms of "é"
        // are the same id to Swift but not to PostgreSQL's C collation: "é" (U+00E9) after "f",
        // and "e" followed by a combining accent before it, unless the ids are normalized first.
        let ties: [(devices: [String], kept: String)] = [
            (["phone", "Phone"], "phone"), (["f", "e\u{301}"], "e\u{301}"),
        ]
        try await withPostgresStore(maximumDevicesPerUser: 1, icuLocale: icuLocale) { store in
            for (user, tie) in ties.enumerated() {
                let applied = try await store.apply(
                    tie.devices.enumerated().map { index, device in
                        registered("u\(user)", device, token: "t\(user)-\(index)", at: "2026-11-01T10:00:00Z")
                    }
                )
                #expect(applied.evicted == ["u\(user)"])
                #expect(
                    try await store.recipients(["u\(user)"])[OpaqueID("u\(user)")]?.devices.map(\.deviceID) == [
                        tie.kept
                    ]
                )
                // The memory store and SQLite, which sort in Swift, keep the same one.
                let memory = MemoryStore(maximumDevicesPerUser: 1)
                let sqlite = try SQLiteStore(path: ":memory:", maximumDevicesPerUser: 1)
                for other in [memory, sqlite] as [any StateStore] {
                    try await other.apply(
                        tie.devices.enumerated().map { index, device in
                            registered("u", device, token: "t\(index)", at: "2026-11-01T10:00:00Z")
                        }
                    )
                    #expect(try await other.recipients(["u"])["u"]?.devices.map(\.deviceID) == [tie.kept])
                }
            }
        }
    }

    @Test("in a PostgreSQL database not encoded in UTF-8, which cannot normalize, ties are ranked by their bytes")
    func deviceLimitOrderWithoutUTF8() async throws {
        try await withPostgresStore(maximumDevicesPerUser: 1, encoding: "SQL_ASCII") { store in
            let applied = try await store.apply([
                registered("u", "phone", token: "t1", at: "2026-11-01T10:00:00Z"),
                registered("u", "Phone", token: "t2", at: "2026-11-01T10:00:00Z"),
            ])
            #expect(applied.evicted == ["u"])
            #expect(try await store.recipients(["u"])["u"]?.devices.map(\.deviceID) == ["phone"])
        }
    }

    @Test(
        "a user keeps their most recently registered devices up to the directory's limit: older ones are removed, reported, and their tokens freed",
        arguments: StoreKind.allCases
    )
    func deviceLimit(_ kind: StoreKind) async throws {
        try await withStore(kind, maximumDevicesPerUser: 3) { store in
            let first = try await store.apply([
                registered("ana", "d1", token: "t1", at: "2026-11-01T10:00:00Z"),
                registered("ana", "d2", token: "t2", at: "2026-11-01T11:00:00Z"),
                registered("ana", "d3", token: "t3", at: "2026-11-01T12:00:00Z"),
                registered("ben", "b1", token: "u1", at: "2026-11-01T10:00:00Z"),
            ])
            #expect(first.evicted.isEmpty)
            // Two more, one of them invalidated (it still counts: it is kept until the purge), and
            // two registered in the same millisecond, told apart by device id as the worker orders them.
            let second = try await store.apply([
                registered("ana", "d5", token: "t5", at: "2026-11-01T14:00:00Z"),
                registered("ana", "d4a", token: "t4", at: "2026-11-01T13:00:00Z"),
                registered("ana", "d4b", token: "t6", at: "2026-11-01T13:00:00Z"),
                .tokenInvalidated(provider: .apns, token: "t5", at: at("2026-11-01T15:00:00Z")),
            ])
            #expect(second.evicted == ["ana", "ana", "ana"])
            #expect(try await store.recipients(["ana"])["ana"]?.devices.map(\.deviceID) == ["d4a", "d4b"])
            // A registration older than those kept, arriving late, goes at once.
            let late = try await store.apply([registered("ana", "d0", token: "t0", at: "2026-11-01T09:00:00Z")])
            #expect(late.evicted == ["ana"])
            #expect(try await store.recipients(["ana"])["ana"]?.devices.map(\.deviceID) == ["d4a", "d4b"])
            // A removed device's token is free: another user registers it, older than ana's removal or not.
            try await store.apply([registered("ben", "b2", token: "t1", at: "2026-11-01T09:30:00Z")])
            #expect(try await store.recipients(["ben"])["ben"]?.devices.map(\.token) == ["t1", "u1"])
            // A removed device registered again, newest now, comes back; the oldest kept goes.
            let again = try await store.apply([registered("ana", "d1", token: "t7", at: "2026-11-01T16:00:00Z")])
            #expect(again.evicted == ["ana"])
            #expect(try await store.recipients(["ana"])["ana"]?.devices.map(\.deviceID) == ["d4b", "d1"])
            // Other users and other changes are left alone.
            let profile = try await store.apply([
                .profileUpdated(userID: "ana", locale: "nb", timeZone: nil, at: at("2026-11-01T17:00:00Z"))
            ])
            #expect(profile.evicted.isEmpty)
            #expect(try await store.recipients(["ben"])["ben"]?.devices.count == 2)
        }
    }

    @Test(
        "an invalidated token is ignored until it is registered again after the invalidation",
        arguments: StoreKind.allCases
    )
    func invalidation(_ kind: StoreKind) async throws {
        try await withStore(kind) { directory in
            try await directory.apply([
                registered("ana", "phone", token: "dead", at: "2026-11-01T10:00:00Z"),
                .tokenInvalidated(provider: .apns, token: "dead", at: at("2026-11-03T10:00:00Z")),
            ])
            #expect(try await directory.recipients(["ana"])["ana"]?.devices.isEmpty ?? true)
            // A registration from before the invalidation (a late redelivery) does not revive it.
            try await directory.apply([registered("ana", "phone", token: "dead", at: "2026-11-02T10:00:00Z")])
            #expect(try await directory.recipients(["ana"])["ana"]?.devices.isEmpty ?? true)
            // Registered again afterwards: it is live.
            try await directory.apply([registered("ana", "phone", token: "dead", at: "2026-11-04T10:00:00Z")])
            #expect(try await directory.recipients(["ana"])["ana"]?.devices.map(\.token) == ["dead"])
            // The same token string at another provider was never invalid.
            try await directory.apply([
                .tokenInvalidated(provider: .apns, token: "other", at: at("2026-11-05T10:00:00Z")),
                registered("ben", "pixel", token: "other", at: "2026-11-01T10:00:00Z", provider: .fcm),
            ])
            #expect(try await directory.recipients(["ben"])["ben"]?.devices.map(\.token) == ["other"])
        }
    }

    @Test(
        "unregistering removes a device unless it was registered again later; older profile updates lose",
        arguments: StoreKind.allCases
    )
    func unregisterAndOrdering(_ kind: StoreKind) async throws {
        try await withStore(kind) { directory in
            try await directory.apply([
                registered("ana", "phone", token: "t1", at: "2026-11-01T10:00:00Z"),
                .deviceUnregistered(userID: "ana", deviceID: "phone", at: at("2026-11-01T09:00:00Z")),
            ])
            #expect(try await directory.recipients(["ana"])["ana"]?.devices.count == 1)
            try await directory.apply([
                .deviceUnregistered(userID: "ana", deviceID: "phone", at: at("2026-11-01T11:00:00Z"))
            ])
            #expect(try await directory.recipients(["ana"])["ana"]?.devices.isEmpty ?? true)

            try await directory.apply([
                .profileUpdated(userID: "ana", locale: "pl", timeZone: "Europe/Warsaw", at: at("2026-11-05T00:00:00Z")),
                .profileUpdated(userID: "ana", locale: "en", timeZone: nil, at: at("2026-11-04T00:00:00Z")),
                .profileUpdated(userID: "ana", locale: nil, timeZone: "Europe/Oslo", at: at("2026-11-06T00:00:00Z")),
            ])
            let ana = try await directory.recipients(["ana"])["ana"]
            #expect(ana?.locale == "pl", "the older update lost; a later one without a locale kept it")
            #expect(ana?.timeZone == "Europe/Oslo")
        }
    }

    @Test("a file database survives reopening; migrations run once")
    func persistence() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID().uuidString).sqlite")
            .path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        do {
            let directory = try SQLiteStore(path: path)
            try await directory.apply([registered("ana", "phone", token: "t1", at: "2026-11-01T10:00:00Z")])
        }
        let reopened = try SQLiteStore(path: path)
        #expect(try await reopened.recipients(["ana"])["ana"]?.devices.map(\.token) == ["t1"])
    }

    @Test("SQLite: a version 2 database is migrated to the current schema without losing anything")
    func migrationFromVersion2() async throws {
        let connection = try SQLiteConnection(path: ":memory:")
        try SQLiteStore.migrate(connection, to: 2)
        try connection.execute(
            """
            INSERT INTO devices VALUES ('ana', 'phone', 'ios', 'apns', 't1', 'app', 0, 'nb', 100);
            INSERT INTO devices VALUES ('ana', 'old', 'ios', 'apns', 't0', 'app', 0, NULL, 50);
            INSERT INTO invalid_tokens VALUES ('apns', 't0', 60);
            INSERT INTO profiles VALUES ('ana', 'pl', 'Europe/Warsaw', 100);
            INSERT INTO preferences VALUES ('ben', '{"pushEnabled":false,"categories":{}}', 100);
            INSERT INTO throttle_windows VALUES ('ana', 'messages', 3600000, 7200000, 42);
            """
        )
        let store = try SQLiteStore(connection: connection)
        let found = try await store.recipients(["ana", "ben"])
        #expect(found["ana"]?.devices.map(\.token) == ["t1"], "the invalidated device stays invalid")
        #expect(found["ana"]?.locale == "pl" && found["ana"]?.timeZone == "Europe/Warsaw")
        #expect(found["ben"]?.preferences.pushEnabled == false)
        var window: [Int64] = []
        try connection.query("SELECT window_start, window_end, count FROM throttle_windows WHERE recipient = 'ana'") {
            window = [$0.integer(0), $0.integer(1), $0.integer(2)]
        }
        #expect(window == [3_600_000, 7_200_000, 42], "version 4 keeps the counted windows")
        // The invalidated token registered again later is live again.
        try await store.apply([registered("ana", "old", token: "t0", at: "2026-11-01T10:00:00Z")])
        #expect(try await store.recipients(["ana"])["ana"]?.devices.map(\.token) == ["t1", "t0"])
    }

    @Test("a batch lookup larger than one query's parameter chunk finds everyone", arguments: StoreKind.allCases)
    func largeBatch(_ kind: StoreKind) async throws {
        try await withStore(kind) { directory in
            let events = (0..<1_200).map {
                registered("user-\($0)", "d", token: "token-\($0)", at: "2026-11-01T10:00:00Z")
            }
            try await directory.apply(events)
            let found = try await directory.recipients((0..<1_200).map { "user-\($0)" } + ["user-0"])
            #expect(found.count == 1_200)
            #expect(found["user-1199"]?.devices.first?.token == "token-1199")
        }
    }
}

extension DirectoryContractTests {
    @Test(
        "the longest values a directory event may carry are stored, looked up and invalidated by every store",
        arguments: StoreKind.allCases
    )
    func longestValues(_ kind: StoreKind) async throws {
        let longest = DirectoryEvent.maximumValueBytes
        func value(_ seed: UInt64) -> String { DecisionContractTests.incompressible(longest, seed: seed) }
        let (user, device, token, app, locale) = (value(11), value(12), value(13), value(14), value(15))
        try await withStore(kind) { directory in
            try await directory.apply([
                .deviceRegistered(
                    DeviceRegistration(
                        userID: user,
                        deviceID: device,
                        platform: value(16),
                        provider: .fcm,
                        token: token,
                        appID: app,
                        sandbox: false,
                        locale: locale,
                        at: at("2026-11-01T10:00:00Z")
                    )
                ),
                .profileUpdated(userID: user, locale: locale, timeZone: "Europe/Oslo", at: at("2026-11-01T10:00:00Z")),
            ])
            let found = try #require(try await directory.recipients([user])[OpaqueID(user)])
            #expect(found.devices.map(\.token) == [token])
            #expect(found.devices.first?.appID == app)
            try await directory.apply([.tokenInvalidated(provider: .fcm, token: token, at: at("2026-11-02T10:00:00Z"))])
            #expect(try await directory.recipients([user])[OpaqueID(user)]?.devices.isEmpty ?? true)
        }
    }
}
