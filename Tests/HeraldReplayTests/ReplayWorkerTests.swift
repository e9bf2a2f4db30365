import Foundation
import HeraldApp
import HeraldCatalog
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldReplay
import HeraldStore
import HeraldTestSupport
import HeraldWorker
import Testing

@Suite("Replay against the live worker, diffs and publishing")
struct ReplayWorkerTests {
    let devEvents = path("samples/dev/events.jsonl")
    let devDirectory = path("samples/dev/directory.jsonl")

    func lines(_ file: String) throws -> [String] {
        try String(contentsOfFile: file, encoding: .utf8).split(whereSeparator: \.isNewline).map(String.init)
    }

    @Test("replaying a log gives the decisions and outbound payloads the live worker gives for it")
    func replayEqualsLiveWorker() async throws {
        let scratch = try Scratch()
        // Event time and the live clock fall in the same quiet hours and throttle windows, and nothing
        // expires: the only difference left would be the code, and replay runs the worker's.
        let replayed = try await replay(
            [RecordedLogFile(path: devEvents)],
            in: scratch,
            name: "replay",
            directory: devDirectory,
            drain: false
        )
        #expect(replayed.outbound.count == 18)

        let environment = try KafkaTestEnvironment(topics: [
            "recorded.events": 3, "herald.directory": 3, "herald.outbound": 3, "herald.events.dlq": 1,
            "herald.decisions": 1,
        ])
        var configuration = HeraldConfiguration()
        configuration.worker.domainTopics = ["recorded.events"]
        configuration.worker.topics.decisions = "herald.decisions"
        let store = try SQLiteStore(path: ":memory:")
        let worker = try WorkerApp.makeWorker(
            configuration: configuration,
            bootstrapServers: [environment.cluster.bootstrapServers],
            catalog: try CatalogLoader.load(directory: path("catalog")).catalog,
            store: store,
            clock: TestClock("2026-11-21T12:00:00Z"),
            logger: environment.logger
        ) { worker in
            var consumer = environment.consumerConfiguration(group: "live", topics: worker.consumer.topics)
            consumer.fetchMaxWait = .milliseconds(50)
            worker.consumer = consumer
            worker.producer = environment.producerConfiguration()
        }
        let directory = try lines(devDirectory).map { line in
            let event = try? JSONParser().parse(Array(line.utf8))
            return KafkaProducerRecord(
                topic: "herald.directory",
                key: ReplayRecord.key(ofData: event?["data"]).map { KafkaBytes($0) },
                value: KafkaBytes(line)
            )
        }
        let events = try lines(devEvents).map { line in
            let event = try? JSONParser().parse(Array(line.utf8))
            return KafkaProducerRecord(
                topic: "recorded.events",
                key: ReplayRecord.key(ofData: event?["data"]).map { KafkaBytes($0) } ?? KafkaBytes("poison"),
                value: KafkaBytes(line)
            )
        }
        try await environment.withCollector(["herald.outbound", "herald.decisions", "herald.events.dlq"]) { received in
            try await withRunningServices([worker]) {
                try await environment.produce(directory)
                try await waitUntil("the directory is applied") {
                    worker.statistics.snapshot.directoryChanges == directory.count
                }
                try await environment.produce(events)
                try await waitUntil("every event is handled") {
                    worker.statistics.snapshot.handledEvents == directory.count + events.count
                        && received.all.filter { $0.topic == "herald.outbound" }.count >= replayed.outbound.count
                        && received.all.filter { $0.topic == "herald.events.dlq" }.count >= replayed.deadLetters.count
                }
            }
            let all = received.all
            let text = { (message: KafkaMessage) in
                message.value.map { String(decoding: Array($0), as: UTF8.self) } ?? ""
            }
            let liveOutbound = all.filter { $0.topic == "herald.outbound" }.map(text).sorted()
            #expect(liveOutbound == replayed.outbound.sorted())
            let liveDecisions = decisionKeys(all.filter { $0.topic == "herald.decisions" }.map(text))
            #expect(liveDecisions == decisionKeys(replayed.decisions))
            let liveCodes = all.filter { $0.topic == "herald.events.dlq" }.compactMap {
                $0.header(HeraldHeader.errorCode)?.string
            }.sorted()
            #expect(
                liveCodes
                    == replayed.report.deadLettersByCode.flatMap { Array(repeating: $0.key, count: $0.value) }.sorted()
            )
        }
    }

    @Test("diff shows a changed translation, a removed kind and a new throttle limit's effect")
    func diff() async throws {
        let scratch = try Scratch()
        let log = RecordedLogFile(path: path("samples/replay/events.jsonl"))
        let snapshot = path("samples/replay/directory.jsonl")
        let before = try await replay([log], in: scratch, name: "before", directory: snapshot)

        // The changed catalog: a German title reworded, security.login removed, messages limited to 20 an hour.
        let changed = scratch.file("catalog")
        try FileManager.default.copyItem(atPath: path("catalog"), toPath: changed)
        let german = changed + "/messages/de.json"
        var bundle = try String(contentsOfFile: german, encoding: .utf8)
        let title = try #require(Self.message("order.confirmed.title", in: bundle))
        bundle = bundle.replacingOccurrences(of: title, with: "Bestellung angenommen")
        try bundle.write(toFile: german, atomically: true, encoding: .utf8)
        try FileManager.default.removeItem(atPath: changed + "/kinds/security.login.yaml")
        var settings = try String(contentsOfFile: changed + "/catalog.yaml", encoding: .utf8)
        settings = settings.replacingOccurrences(
            of: "{ limit: 100, window: 1h, overLimit: digest }",
            with: "{ limit: 20, window: 1h, overLimit: digest }"
        )
        try settings.write(toFile: changed + "/catalog.yaml", atomically: true, encoding: .utf8)
        let after = try await replay([log], in: scratch, name: "after", catalog: changed, directory: snapshot)

        let diff = try ReplayDiff(scratch.file("before.out.jsonl"), scratch.file("after.out.jsonl"))
        #expect(diff.countA == before.outbound.count && diff.countB == after.outbound.count)
        let byKind = Dictionary(uniqueKeysWithValues: diff.byKind.map { ($0.kind, $0) })
        // The translation: German order confirmations changed, nothing else about orders.
        let orders = try #require(byKind["order.confirmed"])
        #expect(orders.changed > 0 && orders.added == 0 && orders.removed == 0)
        #expect(diff.changed.keys.allSatisfy { $0.kind == "order.confirmed" && $0.locale == "de" })
        #expect(diff.changed.keys.allSatisfy { $0.after.hasPrefix("Bestellung angenommen") })
        // The removed kind: every security alert is gone.
        #expect(byKind["security.login"]?.removed == before.report.outboundByKind["security.login"])
        #expect(
            after.report.deadLettersByCode["event.unknown_type"]! > before.report.deadLettersByCode[
                "event.unknown_type"
            ]!
        )
        // The throttle: a burst user's messages beyond 20 an hour are removed, replaced by digests.
        let messages = try #require(byKind["message.received"])
        #expect(messages.removed >= 2 * 80)
        #expect(messages.added >= 2)
        #expect(diff.added.keys.allSatisfy { $0.kind == "message.received" })
        let text = diff.markdown()
        #expect(text.contains("| security.login | 0 | \(byKind["security.login"]!.removed) | 0 |"))
        #expect(text.contains("after:  Bestellung angenommen"))

        // The same replay twice: no differences.
        let same = try ReplayDiff(scratch.file("before.out.jsonl"), scratch.file("before.out.jsonl"))
        #expect(same.isEmpty && same.unchanged == before.outbound.count)
    }

    @Test("diff shows a badge a catalog change adds, on the phone's text")
    func diffShowsBadges() async throws {
        let scratch = try Scratch()
        let log = RecordedLogFile(path: devEvents)
        let before = try await replay([log], in: scratch, name: "before", directory: devDirectory)
        let changed = scratch.file("catalog")
        try FileManager.default.copyItem(atPath: path("catalog"), toPath: changed)
        let kind = changed + "/kinds/order.confirmed.yaml"
        let definition = try String(contentsOfFile: kind, encoding: .utf8)
        #expect(definition.contains("  priority: high\n"))
        try definition.replacingOccurrences(of: "  priority: high\n", with: "  priority: high\n  badge: 1\n")
            .write(toFile: kind, atomically: true, encoding: .utf8)
        let after = try await replay([log], in: scratch, name: "after", catalog: changed, directory: devDirectory)

        let diff = try ReplayDiff(scratch.file("before.out.jsonl"), scratch.file("after.out.jsonl"))
        #expect(diff.countA == before.outbound.count && diff.countB == after.outbound.count)
        // Every order confirmation (a redelivered one's calls, written twice, are compared once by id)
        // changed, and nothing else: the sample's chat messages carry their unread count either way.
        let orders = Set(
            before.outbound.compactMap { line -> String? in
                guard case .object(let message) = try? JSONParser().parse(Array(line.utf8)),
                    message["kind"]?.stringValue == "order.confirmed"
                else { return nil }
                return message["notificationId"]?.stringValue
            }
        )
        #expect(orders.count == 3, "the sample's three order calls: \(orders)")
        #expect(diff.byKind.map(\.kind) == ["order.confirmed"])
        #expect(diff.byKind.first?.changed == orders.count)
        #expect(diff.changed.keys.allSatisfy { $0.after.hasSuffix(" [badge 1]") && !$0.before.contains("[badge") })
        #expect(diff.unchanged == Set(after.outbound).count - orders.count)
    }

    /// The pattern of message `key` in a bundle's JSON.
    static func message(_ key: String, in bundle: String) -> String? {
        guard case .object(let messages)? = try? JSONParser().parse(Array(bundle.utf8)) else { return nil }
        return messages[key]?.stringValue
    }

    @Test("publish re-injects a log at a given rate, keyed by user, directory events to the directory topic")
    func publish() async throws {
        let environment = try KafkaTestEnvironment(topics: ["replayed.events": 3, "herald.directory": 1])
        let publisher = LogPublisher(
            bootstrapServers: [environment.cluster.bootstrapServers],
            topic: "replayed.events",
            pacing: .rate(100)
        )
        let started = ContinuousClock.now
        let counts = try await publisher.run(
            [RecordedLogFile(path: devDirectory), RecordedLogFile(path: devEvents)],
            logger: quietLogger
        )
        let elapsed = ContinuousClock.now - started
        #expect(counts == ["herald.directory": 13, "replayed.events": 17])
        // 30 records at 100/s: the last is due after 0.29 s.
        #expect(elapsed >= .milliseconds(250))
        try await environment.withCollector(["replayed.events", "herald.directory"]) { received in
            try await waitUntil("everything published is read back") { received.count == 30 }
            let keys = received.all.filter { $0.topic == "replayed.events" }.compactMap { $0.key?.string }
            // Nine of the sample's events are about u-1024 first; the poison line has no key.
            #expect(keys.filter { $0 == "u-1024" }.count == 9)
            #expect(keys.count == 16)
        }
    }

    @Test("publish keeps the recorded timing, scaled by --speed")
    func publishSpeed() async throws {
        let scratch = try Scratch()
        // Three events two seconds apart in event time: at speed 4, the last goes out after 1 s.
        let times = ["2026-11-21T12:00:00Z", "2026-11-21T12:00:02Z", "2026-11-21T12:00:04Z"]
        let log = times.enumerated().map { index, time in
            #"{"specversion":"1.0","id":"e\#(index)","source":"/t","type":"order.shipped","time":"\#(time)","data":{"userId":"u-1"}}"#
        }.joined(separator: "\n")
        try log.write(toFile: scratch.file("timed.jsonl"), atomically: true, encoding: .utf8)
        let environment = try KafkaTestEnvironment(topics: ["timed.events": 1])
        let publisher = LogPublisher(
            bootstrapServers: [environment.cluster.bootstrapServers],
            topic: "timed.events",
            pacing: .recorded(speed: 4)
        )
        _ = try await publisher.run([RecordedLogFile(path: scratch.file("timed.jsonl"))], logger: quietLogger)
        // The records' own timestamps (stamped as each is handed to the producer) show that none
        // went out before its time: 4 s of event time at speed 4 is at least 1 s. How much later
        // they went depends on the machine (other tests in this process share its threads), so
        // the schedule itself is checked exactly below.
        try await environment.withCollector(["timed.events"]) { received in
            try await waitUntil("the three records are read back") { received.count == 3 }
            let stamps = received.all.compactMap(\.timestampMilliseconds).sorted()
            let spread = try #require(stamps.last) - stamps[0]
            #expect(spread >= 950, "first to last record: \(spread) ms")
        }
        let first = Timestamp(rfc3339: times[0])
        let schedule = times.enumerated().map { index, time in
            LogPublisher.Pacing.recorded(speed: 4).offset(
                index: index,
                time: Timestamp(rfc3339: time),
                firstTime: first
            )
        }
        #expect(schedule == [.zero, .milliseconds(500), .milliseconds(1000)])
        #expect(
            LogPublisher.Pacing.recorded(speed: 1).offset(
                index: 2,
                time: Timestamp(rfc3339: times[2]),
                firstTime: first
            )
                == .seconds(4)
        )
        #expect(LogPublisher.Pacing.rate(100).offset(index: 29, time: nil, firstTime: nil) == .milliseconds(290))
        // A record without a time goes out when reached; one recorded before the first, too.
        #expect(LogPublisher.Pacing.recorded(speed: 4).offset(index: 3, time: nil, firstTime: first) == .zero)
        #expect(
            LogPublisher.Pacing.recorded(speed: 4).offset(
                index: 3,
                time: Timestamp(rfc3339: "2026-11-21T11:59:00Z"),
                firstTime: first
            ) == .zero
        )
    }

    @Test("a catalog policy with a wrong value fails catalog check naming the key")
    func policyValidation() throws {
        let scratch = try Scratch()
        let catalog = scratch.file("catalog")
        try FileManager.default.copyItem(atPath: path("catalog"), toPath: catalog)
        var settings = try String(contentsOfFile: catalog + "/catalog.yaml", encoding: .utf8)
        settings = settings.replacingOccurrences(of: "window: 7d", with: "window: weekly")
        settings = settings.replacingOccurrences(of: "quietHours: drop", with: "quietHours: snooze")
        try settings.write(toFile: catalog + "/catalog.yaml", atomically: true, encoding: .utf8)
        do {
            _ = try CatalogLoader.load(directory: catalog)
            Issue.record("a catalog with a bad policy loaded")
        } catch {
            let text = error.description
            #expect(text.contains("policies.marketing.throttle[0].window"))
            #expect(text.contains("policies.marketing.quietHours"))
        }
        // And the example catalog's policies are seed 004's defaults.
        let loaded = try CatalogLoader.load(directory: path("catalog")).catalog
        let policy = Policy(catalog: loaded)
        #expect(policy.categories == Policy.defaults.categories)
    }
}

func waitUntil(_ what: String, within limit: Duration = .seconds(30), _ condition: () async throws -> Bool) async throws
{
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    throw TestFailure("timed out after \(limit) waiting until \(what)")
}
