import HeraldEvents
import Testing

@testable import HeraldPolicy

@Suite("Directory events")
struct DirectoryEventTests {
    func event(_ type: String, _ data: String, time: String? = "2026-11-21T12:00:00Z") throws -> CloudEvent {
        let timeMember = time.map { #","time":"\#($0)""# } ?? ""
        return try EventDecoder().decode(
            value: Array(
                #"{"specversion":"1.0","id":"d-1","source":"/devices","type":"\#(type)"\#(timeMember),"data":\#(data)}"#
                    .utf8
            )
        )
    }

    @Test("each directory event type decodes to its typed value")
    func decodes() throws {
        let registered = try DirectoryEvent(
            event(
                "device.registered",
                #"{"userId":"u-1","deviceId":"d-1","platform":"ios","provider":"apns","token":"ab01","appId":"no.getdrop.app","environment":"sandbox","locale":"nb-NO"}"#
            )
        )
        guard case .deviceRegistered(let device) = registered else {
            Issue.record("\(registered)")
            return
        }
        #expect(device.provider == .apns && device.sandbox && device.locale == "nb-NO" && device.userID == "u-1")
        #expect(try DirectoryEvent(event("device.unregistered", #"{"userId":"u-1","deviceId":"d-1"}"#)).userID == "u-1")
        let invalidated = try DirectoryEvent(event("device.token.invalidated", #"{"provider":"fcm","token":"t"}"#))
        #expect(
            invalidated
                == .tokenInvalidated(provider: .fcm, token: "t", at: Timestamp(rfc3339: "2026-11-21T12:00:00Z")!)
        )
        #expect(invalidated.userID == nil)
        let profile = try DirectoryEvent(
            event("user.profile.updated", #"{"userId":"u-1","locale":"pl","timeZone":"Europe/Warsaw"}"#)
        )
        #expect(
            profile
                == .profileUpdated(
                    userID: "u-1",
                    locale: "pl",
                    timeZone: "Europe/Warsaw",
                    at: Timestamp(rfc3339: "2026-11-21T12:00:00Z")!
                )
        )
        // Empty values leave the stored ones as they are, as absent ones do.
        let empty = try DirectoryEvent(event("user.profile.updated", #"{"userId":"u-1","locale":"","timeZone":""}"#))
        #expect(
            empty
                == .profileUpdated(
                    userID: "u-1",
                    locale: nil,
                    timeZone: nil,
                    at: Timestamp(rfc3339: "2026-11-21T12:00:00Z")!
                )
        )
        let preferences = try DirectoryEvent(
            event(
                "user.preferences.updated",
                #"{"userId":"u-1","pushEnabled":true,"categories":{"marketing":true,"messages":false},"quietHours":{"enabled":true,"start":"22:00","end":"08:00","timezone":"Europe/Oslo"}}"#
            )
        )
        guard case .preferencesUpdated(_, let parsed, _) = preferences else {
            Issue.record("\(preferences)")
            return
        }
        #expect(parsed.categories == ["marketing": true, "messages": false])
        #expect(parsed.quietHours == QuietHours(start: "22:00", end: "08:00", timeZone: "Europe/Oslo"))
        #expect(
            try DirectoryEvent(event("user.deleted", #"{"userId":"u-1"}"#))
                == .userDeleted(userID: "u-1", at: Timestamp(rfc3339: "2026-11-21T12:00:00Z")!)
        )
        #expect(throws: DirectoryEventError(message: "user.deleted needs a non-empty string 'userId'")) {
            try DirectoryEvent(event("user.deleted", #"{"userId":""}"#))
        }
        #expect(throws: DirectoryEventError(message: "user.deleted needs a time")) {
            try DirectoryEvent(event("user.deleted", #"{"userId":"u-1"}"#, time: nil))
        }
    }

    @Test(
        "bad directory events are rejected naming the field, never echoing tokens or ids",
        arguments: [
            (
                "device.registered",
                #"{"userId":"u-1","deviceId":"d-1","platform":"ios","provider":"pigeon","token":"SECRET","appId":"a"}"#,
                "'provider'"
            ),
            (
                "device.registered",
                #"{"userId":"u-1","deviceId":"d-1","platform":"ios","provider":"apns","appId":"a"}"#, "'token'"
            ),
            (
                "user.preferences.updated",
                #"{"userId":"u-1","quietHours":{"start":"22:00","end":"22:00","timezone":"Europe/Oslo"}}"#, "quietHours"
            ),
            ("user.preferences.updated", #"{"userId":"u-1","categories":{"marketing":"yes"}}"#, "categories.marketing"),
            ("user.profile.updated", #"{"userId":"u-1","locale":"nb","timeZone":"Mars/Olympus_Mons"}"#, "'timeZone'"),
            ("user.profile.updated", #"{"userId":"u-1","timeZone":"Local"}"#, "'timeZone'"),
            (
                "device.registered",
                #"{"userId":"u-1","deviceId":"d-1","platform":"ios","provider":"apns","appId":"a","token":""#
                    + String(repeating: "ab", count: 513) + #""}"#, "'token' is longer than 1024 bytes"
            ),
            (
                "user.profile.updated",
                #"{"userId":"u-1","locale":""# + String(repeating: "nb-", count: 342) + #""}"#,
                "'locale' is longer than 1024 bytes"
            ),
            ("user.profile.updated", #"{"userId":"u-\u00001","locale":"nb"}"#, "'userId' contains U+0000"),
            ("user.profile.updated", #"{"userId":"u-1","locale":"nb\u0000"}"#, "'locale' contains U+0000"),
            (
                "user.preferences.updated", #"{"userId":"u-1","channels":{"messages":{"push":"no"}}}"#,
                "channels.messages.push"
            ),
            ("user.preferences.updated", #"{"userId":"u-1","channels":[true]}"#, "channels must be an object"),
            ("user.renamed", #"{"userId":"u-1"}"#, "unknown directory event type"),
        ]
    )
    func rejects(type: String, data: String, names: String) throws {
        let error = #expect(throws: DirectoryEventError.self) { try DirectoryEvent(event(type, data)) }
        #expect(error?.message.contains(names) == true)
        #expect(error?.message.contains("SECRET") == false)
    }

    @Test("preferences per category and channel: seed 004's `channels`, and per-channel choices of which push counts")
    func channels() throws {
        let seedShape = try DirectoryEvent(
            event(
                "user.preferences.updated",
                #"{"userId":"u-1","pushEnabled":true,"channels":{"transactional":true,"messages":false,"marketing":true,"security":true}}"#
            )
        )
        guard case .preferencesUpdated(_, let fromSeed, _) = seedShape else {
            Issue.record("\(seedShape)")
            return
        }
        #expect(fromSeed.categories == ["transactional": true, "messages": false, "marketing": true, "security": true])

        let perChannel = try DirectoryEvent(
            event(
                "user.preferences.updated",
                #"{"userId":"u-1","categories":{"marketing":{"push":false,"email":true},"messages":{"email":false},"transactional":{"push":true}}}"#
            )
        )
        guard case .preferencesUpdated(_, let parsed, _) = perChannel else {
            Issue.record("\(perChannel)")
            return
        }
        // messages has no push choice: it keeps its default.
        #expect(parsed.categories == ["marketing": false, "transactional": true])
    }

    @Test(
        "topic keys: one per device, profile, preferences and token, so that compaction keeps each one's latest change"
    )
    func topicKeys() {
        let time = Timestamp(rfc3339: "2026-11-21T12:00:00Z")!
        func registration(_ device: String) -> DirectoryEvent {
            .deviceRegistered(
                DeviceRegistration(
                    userID: "u-1",
                    deviceID: device,
                    platform: "ios",
                    provider: .apns,
                    token: "ab01",
                    appID: "no.getdrop.app",
                    sandbox: false,
                    locale: nil,
                    at: time
                )
            )
        }
        let keys = [
            registration("phone"), registration("tablet"),
            .profileUpdated(userID: "u-1", locale: "nb", timeZone: nil, at: time),
            .preferencesUpdated(userID: "u-1", preferences: Preferences(), at: time),
            .tokenInvalidated(provider: .apns, token: "ab01", at: time),
            .userDeleted(userID: "u-1", at: time),
        ].map(\.topicKey)
        #expect(Set(keys).count == keys.count, "\(keys)")
        // An unregistration replaces the device's registration in the compacted topic.
        #expect(
            DirectoryEvent.deviceUnregistered(userID: "u-1", deviceID: "phone", at: time).topicKey
                == registration("phone").topicKey
        )
        #expect(keys[0] == "u-1/device/phone" && keys[4] == "token/apns/ab01")
    }

    @Test("a directory event type is told from a domain event's, near misses included")
    func eventTypes() {
        for type in DirectoryEvent.eventTypes { #expect(DirectoryEvent.isEventType(type), "\(type)") }
        for type in [
            "order.confirmed", "message.received", "", "user.", "device.", "user.signed_up", "users.deleted",
            "device.registered.v2", "Device.registered", "user.deleted ", "userdeleted",
        ] {
            #expect(!DirectoryEvent.isEventType(type), "\(type)")
        }
    }

    @Test("a directory event without a time is rejected: ordering depends on it")
    func needsTime() throws {
        #expect(throws: DirectoryEventError.self) {
            try DirectoryEvent(event("device.unregistered", #"{"userId":"u-1","deviceId":"d-1"}"#, time: nil))
        }
    }
}
