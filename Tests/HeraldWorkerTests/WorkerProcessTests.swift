import Foundation
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldStore
import HeraldTestSupport
import HeraldWorker
import Testing

/// The `herald` executable, built beside this test bundle.
func heraldExecutable() throws -> URL {
    let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for candidate in [directory, directory.deletingLastPathComponent()] {
        let url = candidate.appendingPathComponent("herald")
        if FileManager.default.isExecutableFile(atPath: url.path) { return url }
    }
    throw TestFailure("the herald executable was not built next to the tests (run `swift build --build-tests`)")
}

@Suite("herald run --role worker", .serialized)
struct WorkerProcessTests {
    @Test("SIGTERM while busy: exit 0 within the deadline, offsets committed for all finished work, nothing lost")
    func sigtermWhileBusy() async throws {
        let pipeline = try Pipeline()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("state.sqlite").path
        let registered = Timestamp(rfc3339: "2026-11-01T00:00:00Z")!
        try await SQLiteStore(path: database).apply(
            exampleUsers.map {
                .deviceRegistered(
                    DeviceRegistration(
                        userID: $0.user,
                        deviceID: "phone",
                        platform: "ios",
                        provider: PushProvider(rawValue: $0.provider)!,
                        token: $0.token,
                        appID: "no.getdrop.app",
                        sandbox: false,
                        locale: $0.locale,
                        at: registered
                    )
                )
            }
        )
        let configuration = directory.appendingPathComponent("herald.yaml")
        try """
        kafka:
          bootstrap_servers: \(pipeline.environment.cluster.bootstrapServers)
          # The embedded cluster makes the next member wait a session timeout even after a clean leave.
          session_timeout: 6s
        worker:
          topics: [\(domainTopics.values.sorted().joined(separator: ", "))]
          batch_size: 20
          shutdown_deadline: 20s
        store:
          url: sqlite:\(database)
        catalog:
          directory: \(repositoryRoot.appendingPathComponent("catalog").path)
        http:
          listen: 127.0.0.1:0
        log:
          level: info
          format: json
        """.write(to: configuration, atomically: true, encoding: .utf8)

        let logPath = directory.appendingPathComponent("stderr.log")
        _ = FileManager.default.createFile(atPath: logPath.path, contents: nil)
        let process = Process()
        process.executableURL = try heraldExecutable()
        process.arguments = ["run", "--role", "worker", "--config", configuration.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: logPath)
        process.environment = ProcessInfo.processInfo.environment.merging(["HERALD_WORKER_GROUP_ID": "sigterm-group"]) {
            _,
            new in new
        }
        try process.run()
        defer { if process.isRunning { process.interrupt() } }

        let total = 4000
        try await pipeline.withCollector(["herald.outbound"]) { received in
            let deliveries = try await pipeline.produce(orderEvents(0..<total, time: WallClock().now().description))
            do {
                try await eventually("the worker is busy") { received.count >= 200 }
            } catch {
                let log = (try? String(contentsOf: logPath, encoding: .utf8)) ?? ""
                Issue.record("the worker's log: \(log.suffix(4000))")
                throw error
            }
            // The process's own /metrics, on the port it logged: on SQLite, with its directory
            // cache's families (each example user read once, then found in it).
            let started = (try? String(contentsOf: logPath, encoding: .utf8)) ?? ""
            let address = try #require(started.firstMatch(of: /"address":"([0-9.]+:[0-9]+)"/)?.output.1)
            let metrics = try await httpGet("http://\(address)/metrics").body
            #expect(metrics.contains(#"herald_directory_cache_lookups_total{result="hit"} "#), "\(metrics)")
            #expect(metrics.contains("herald_directory_cache_capacity \(SQLiteStore.defaultDirectoryCacheCapacity)\n"))
            process.terminate()  // SIGTERM
            let stopped = ContinuousClock.now
            while process.isRunning && ContinuousClock.now - stopped < .seconds(25) {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(!process.isRunning, "exited within the deadline")
            #expect(process.terminationReason == .exit && process.terminationStatus == 0)

            // Every event below a committed offset has its outbound message.
            let partitions = (0..<3).map { TopicPartition("orders.events", Int32($0)) }
            let committed = try await pipeline.environment.makeConsumer(
                group: "sigterm-group",
                topics: ["orders.events"]
            )
            .committedOffsets(for: partitions)
            #expect(committed.values.reduce(0, +) > 0, "offsets were committed: \(committed)")
            try await Task.sleep(for: .milliseconds(500))
            let sent = Set(received.all.compactMap(\.outbound).map(\.eventID))
            for (number, delivery) in deliveries.enumerated() {
                let partition = TopicPartition("orders.events", delivery.partition)
                guard let offset = delivery.offset, let limit = committed[partition], offset < limit else { continue }
                #expect(sent.contains("order-\(number)"), "order-\(number) at \(partition)@\(offset) is committed")
            }

            // A new worker finishes the rest: nothing was lost.
            let clock = TestClock("2026-11-21T08:00:00Z")
            let next = try pipeline.worker(store: try SQLiteStore(path: database), clock: clock, group: "sigterm-group")
            try await withRunningServices([next]) {
                try await eventually(within: .seconds(60), "every event's outbound message") {
                    Set(received.all.compactMap(\.outbound).map(\.eventID)).count >= total
                }
            }
            _ = checkOutbound(received.all, expected: total)
        }
        let log = try String(contentsOf: logPath, encoding: .utf8)
        #expect(log.contains(#""msg":"worker stopped""#), "JSON logs: \(log.prefix(2000))")
        for user in exampleUsers {
            #expect(!log.contains(user.user) && !log.contains(user.token), "no user id or token in the logs")
        }
    }

    @Test("a bad configuration fails at start-up naming the key, with exit status 78")
    func badConfiguration() throws {
        let process = Process()
        process.executableURL = try heraldExecutable()
        process.arguments = ["run", "--role", "worker"]
        process.environment = ["HERALD_WORKER_BATCH_SIZE": "lots", "PATH": "/usr/bin:/bin"]
        let error = Pipe()
        process.standardError = error
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 78)
        #expect(text.contains("HERALD_WORKER_BATCH_SIZE: expected a non-negative integer, got 'lots'"), "\(text)")
    }
}
