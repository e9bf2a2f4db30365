import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldStore
import HeraldTestSupport
import HeraldWorker
import Testing

/// Directory changes are ordered by their dates; one dated far ahead of the worker's clock would
/// outrank every real change after it.
@Suite("Directory changes dated ahead of the clock")
struct DirectoryClockTests {
    static let user = "u-ahead"

    static func device(_ id: String, token: String) -> [(String, JSONValue)] {
        [
            ("deviceId", .string(id)), ("platform", .string("ios")), ("provider", .string("apns")),
            ("token", .string(token)), ("appId", .string("no.getdrop.app")),
        ]
    }

    @Test(
        "a registration dated ten years ahead is applied as of the worker's clock: the user's logout still removes the device, and a dead token is still invalidated"
    )
    func registrationDatedAhead() async throws {
        let store = try SQLiteStore(path: ":memory:")
        let pipeline = try Pipeline()
        let worker = try pipeline.worker(store: store, clock: TestClock("2026-11-21T08:00:00Z"))
        let (phone, tablet) = (String(repeating: "ab", count: 32), String(repeating: "cd", count: 32))
        try await withRunningServices([worker]) {
            let ahead = "2036-11-21T08:00:00Z"
            try await pipeline.produce([
                directoryRecord(Self.user, "r-1", "device.registered", Self.device("phone", token: phone), time: ahead),
                directoryRecord(
                    Self.user,
                    "r-2",
                    "device.registered",
                    Self.device("tablet", token: tablet),
                    time: ahead
                ),
                // A producer a few seconds ahead is within the tolerance, and kept as dated.
                directoryRecord(
                    Self.user,
                    "r-3",
                    "user.profile.updated",
                    [("locale", .string("nb"))],
                    time: "2026-11-21T08:00:30Z"
                ),
            ])
            try await eventually("both devices registered") {
                try await store.recipients([Self.user])[OpaqueID(Self.user)]?.devices.count == 2
            }
            // The user logs out of the phone, and APNs says the tablet's token is dead, both by
            // clocks that are right.
            let now = "2026-11-21T08:00:00Z"
            try await pipeline.produce([
                directoryRecord(Self.user, "u-1", "device.unregistered", [("deviceId", .string("phone"))], time: now),
                directoryRecord(
                    Self.user,
                    "i-1",
                    "device.token.invalidated",
                    [("provider", .string("apns")), ("token", .string(tablet))],
                    time: now
                ),
            ])
            try await eventually("the logout and the invalidation applied") {
                worker.statistics.snapshot.directoryChanges == 5
            }
        }
        // Dated 2036, neither device would have gone before 2036.
        #expect(try await store.recipients([Self.user])[OpaqueID(Self.user)]?.devices.isEmpty == true)
        #expect(worker.statistics.snapshot.directoryChangesRedated == 2)
    }

    @Test("a change dated beyond the tolerance is dated now; one within it keeps its date")
    func appliedAt() {
        let now = Timestamp(rfc3339: "2026-11-21T08:00:00Z")!
        let registration = DeviceRegistration(
            userID: "u",
            deviceID: "d",
            platform: "ios",
            provider: .apns,
            token: "t",
            appID: "a",
            sandbox: false,
            locale: nil,
            at: Timestamp(rfc3339: "2026-11-21T08:05:00Z")!
        )
        let changes: [DirectoryEvent] = [
            .deviceRegistered(registration),
            .deviceUnregistered(userID: "u", deviceID: "d", at: registration.at),
            .tokenInvalidated(provider: .fcm, token: "t", at: registration.at),
            .profileUpdated(userID: "u", locale: "nb", timeZone: nil, at: registration.at),
            .preferencesUpdated(userID: "u", preferences: Preferences(), at: registration.at),
        ]
        for change in changes {
            // Exactly the tolerance ahead: kept.
            #expect(change.applied(at: now) == (change, false) as (DirectoryEvent, Bool), "\(change)")
            // A millisecond more: dated now, nothing else changed.
            let later = change.dated(Timestamp(epochMilliseconds: registration.at.epochMilliseconds + 1))
            let (applied, redated) = later.applied(at: now)
            #expect(redated)
            #expect(applied == change.dated(now))
            #expect(applied.at == now)
            #expect(applied.userID == change.userID)
        }
    }
}
