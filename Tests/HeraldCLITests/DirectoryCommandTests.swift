import Foundation
import Testing

@Suite("herald directory import and show")
struct DirectoryCommandTests {
    @Test("import loads a JSON Lines snapshot; bad lines are named by number and skipped; show masks tokens")
    func importAndShow() async throws {
        let herald = try heraldExecutable().path
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-dir-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let snapshot = directory.appendingPathComponent("directory.jsonl")
        let store = "sqlite:" + directory.appendingPathComponent("state.sqlite").path
        func event(_ id: Int, _ type: String, _ time: String, _ data: String) -> String {
            #"{"specversion":"1.0","id":"d-\#(id)","source":"/accounts","type":"\#(type)","time":"\#(time)","data":\#(data)}"#
        }
        let lines = [
            event(
                1,
                "device.registered",
                "2026-11-01T10:00:00Z",
                #"{"userId":"u-1","deviceId":"phone","platform":"ios","provider":"apns","token":"abcdef0123456789","appId":"no.getdrop.app"}"#
            ),
            event(
                2,
                "device.registered",
                "2026-11-01T10:00:00Z",
                #"{"userId":"u-1","deviceId":"tablet","platform":"android","provider":"pager","token":"x","appId":"a"}"#
            ),
            "not json",
            "",
            event(
                3,
                "user.profile.updated",
                "2026-11-01T10:00:00Z",
                #"{"userId":"u-1","locale":"pl","timeZone":"Europe/Warsaw"}"#
            ),
            event(
                4,
                "user.preferences.updated",
                "2026-11-01T10:00:00Z",
                #"{"userId":"u-1","pushEnabled":true,"categories":{"marketing":true},"quietHours":{"start":"22:00","end":"07:00","timezone":"Europe/Warsaw"}}"#
            ),
        ]
        try lines.joined(separator: "\n").write(to: snapshot, atomically: true, encoding: .utf8)

        let imported = try await run(herald, ["directory", "import", snapshot.path, "--store", store])
        #expect(imported.status == 1, "rejected lines make the exit status 1")
        #expect(imported.output.contains("imported 3 change(s)"))
        #expect(imported.output.contains("rejected 2 line(s)"))
        #expect(imported.error.contains("line 2: directory.invalid_event: 'provider' must be apns, fcm or expo"))
        #expect(imported.error.contains("line 3:"))
        #expect(!imported.error.contains("abcdef0123456789"))

        let shown = try await run(herald, ["directory", "show", "u-1", "u-2", "--store", store])
        #expect(shown.status == 0)
        let objects = shown.output.split(separator: "\n").map {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(objects.count == 2)
        let user = try #require(objects.first ?? nil)
        let devices = user["devices"] as? [[String: Any]]
        #expect(devices?.count == 1)
        #expect(devices?.first?["token"] as? String == "abcdef01…", "a token is never shown whole")
        #expect(user["locale"] as? String == "pl")
        #expect((user["preferences"] as? [String: Any])?["categories"] as? [String: Bool] == ["marketing": true])
        #expect((objects.last ?? nil)?["known"] as? Bool == false)

        // Importing the same snapshot again changes nothing (changes apply by their time).
        _ = try await run(herald, ["directory", "import", snapshot.path, "--store", store])
        #expect(
            try await run(herald, ["directory", "show", "u-1", "--store", store]).output == shown.output.split(
                separator: "\n"
            )[0] + "\n"
        )

        // Past --max-devices-per-user, the oldest registration goes, and the import says so.
        let more = directory.appendingPathComponent("more.jsonl")
        try ["watch", "laptop"].enumerated().map { index, device in
            event(
                10 + index,
                "device.registered",
                "2026-11-01T1\(index + 1):00:00Z",
                #"{"userId":"u-1","deviceId":"\#(device)","platform":"ios","provider":"apns","token":"\#(device)-token","appId":"no.getdrop.app"}"#
            )
        }.joined(separator: "\n").write(to: more, atomically: true, encoding: .utf8)
        let capped = try await run(
            herald,
            ["directory", "import", more.path, "--store", store, "--max-devices-per-user", "2"]
        )
        #expect(capped.status == 0)
        #expect(capped.error.contains("1 device(s) removed, oldest first"), "\(capped.error)")
        // A limit from the environment that is not a number is refused, naming the variable.
        let badLimit = try await run(
            herald,
            ["directory", "import", more.path, "--store", store],
            environment: ["HERALD_STORE_MAX_DEVICES_PER_USER": "lots"]
        )
        #expect(badLimit.status != 0)
        #expect(badLimit.error.contains("HERALD_STORE_MAX_DEVICES_PER_USER: expected a number"), "\(badLimit.error)")
        let kept = try await run(herald, ["directory", "show", "u-1", "--store", store])
        let keptDevices = (try JSONSerialization.jsonObject(with: Data(kept.output.utf8)) as? [String: Any])?["devices"]
        #expect((keptDevices as? [[String: Any]])?.compactMap { $0["deviceId"] as? String } == ["watch", "laptop"])

        // Erased: show says when, and that nothing of the user is left.
        let deletion = directory.appendingPathComponent("deletion.jsonl")
        try event(5, "user.deleted", "2026-11-02T10:00:00Z", #"{"userId":"u-1"}"#)
            .write(to: deletion, atomically: true, encoding: .utf8)
        #expect(try await run(herald, ["directory", "import", deletion.path, "--store", store]).status == 0)
        let erased = try await run(herald, ["directory", "show", "u-1", "--store", store])
        let object = try JSONSerialization.jsonObject(with: Data(erased.output.utf8)) as? [String: Any]
        #expect(object?["known"] as? Bool == false, "\(erased.output)")
        #expect(object?["deletedAt"] as? String == "2026-11-02T10:00:00.000Z", "\(erased.output)")
    }

    @Test("the example snapshot in catalog/ imports cleanly")
    func exampleSnapshot() async throws {
        let herald = try heraldExecutable().path
        let result = try await run(
            herald,
            ["directory", "import", "\(repositoryRoot)/catalog/directory.jsonl", "--store", ":memory:"]
        )
        #expect(result.status == 0)
        #expect(result.output.contains("imported 6 change(s)"))
        #expect(result.output.contains("rejected 0 line(s)"))
    }

    @Test("a gzip-compressed snapshot imports; past 100 rejected lines the rest are counted, not listed")
    func compressedAndManyRejected() async throws {
        let herald = try heraldExecutable().path
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-dir-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let snapshot = directory.appendingPathComponent("directory.jsonl")
        let good = try String(contentsOfFile: "\(repositoryRoot)/catalog/directory.jsonl", encoding: .utf8)
        try (good + String(repeating: "not json\n", count: 150)).write(to: snapshot, atomically: true, encoding: .utf8)
        #expect(try await run("/bin/gzip", [snapshot.path]).status == 0)

        let result = try await run(herald, ["directory", "import", snapshot.path + ".gz", "--store", ":memory:"])
        #expect(result.status == 1)
        #expect(result.output.contains("imported 6 change(s)"), "\(result.output)\(result.error)")
        #expect(result.output.contains("rejected 150 line(s)"))
        let listed = result.error.split(separator: "\n").filter { $0.contains(": line ") }
        #expect(listed.count == 100)
        #expect(result.error.contains("and 50 more rejected line(s)"))
    }
}
