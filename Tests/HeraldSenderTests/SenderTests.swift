import Foundation
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldSender
import HeraldSimulator
import HeraldTestSupport
import HeraldWorker
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import HeraldStore

/// The sender on the embedded broker against the provider simulator.
@Suite("Sender, end to end", .serialized)
struct SenderTests {
    /// Delivery ledgers that a second sender opens after the first.
    let scratch = ScratchDirectory()

    static let topics = [
        "herald.outbound": 4, "herald.outbound.retry.1": 2, "herald.outbound.retry.2": 2,
        "herald.outbound.retry.3": 2, "herald.outbound.retry.4": 2, "herald.outbound.dlq": 1,
        "herald.directory": 2, "herald.decisions": 1, "herald.deliveries": 1,
    ]

    /// Scripts two APNs tokens at `fixture`: one answered 403 `InvalidProviderToken` (a configuration
    /// error), one answered 503 `ServiceUnavailable` every time (retried until the retries run out).
    static func scriptFailures(_ fixture: SimulatorFixture) -> (misconfigured: String, failing: String) {
        let misconfigured = "0000000000000000000000000000000000000000000000000000000000000bad"
        fixture.simulator.script(token: misconfigured, .init(status: 403, reason: "InvalidProviderToken"))
        let failing = "000000000000000000000000000000000000000000000000000000000000fa11"
        fixture.simulator.script(token: failing, .init(status: 503, reason: "ServiceUnavailable"))
        return (misconfigured, failing)
    }

    /// Scripts two dead tokens at `fixture`: APNs's default token, unregistered (410) since
    /// 2026-11-20T08:00:00Z, and `ExponentPushToken[gone]`, whose Expo receipt says `DeviceNotRegistered`.
    static func scriptDeadTokens(_ fixture: SimulatorFixture) {
        fixture.simulator.unregister(token: SimulatorFixture.apnsToken, at: Timestamp(rfc3339: "2026-11-20T08:00:00Z")!)
        fixture.simulator.script(token: "ExponentPushToken[gone]", .init(status: 200, reason: "DeviceNotRegistered"))
    }

    /// Runs a sender over `fixture`'s clients until `body` returns.
    static func withSender(
        _ environment: KafkaTestEnvironment,
        _ fixture: SimulatorFixture,
        ledger: any DeliveryLedger,
        clock: any HeraldClock = WallClock(),
        delays: [Duration] = [.milliseconds(100), .milliseconds(200), .milliseconds(300), .milliseconds(400)],
        logger: Logger? = nil,
        _ body: (Sender) async throws -> Void
    ) async throws {
        let sender = try makeSender(environment, fixture, ledger: ledger, clock: clock, delays: delays, logger: logger)
        try await withRunningServices([sender]) { try await body(sender) }
    }

    /// A sender over `fixture`'s clients, with short retry delays.
    static func makeSender(
        _ environment: KafkaTestEnvironment,
        _ fixture: SimulatorFixture,
        ledger: any DeliveryLedger,
        clock: any HeraldClock = WallClock(),
        delays: [Duration] = [.milliseconds(100), .milliseconds(200), .milliseconds(300), .milliseconds(400)],
        deliveryTimeout: Duration? = nil,
        assignment: KafkaConsumerConfiguration.AssignmentStrategy = .cooperativeSticky,
        logger: Logger? = nil
    ) throws -> Sender {
        var configuration = Sender.Configuration(
            consumer: environment.consumerConfiguration(group: "herald-sender", topics: []),
            producer: environment.producerConfiguration()
        )
        configuration.consumer.fetchMaxWait = .milliseconds(50)
        configuration.consumer.assignmentStrategy = assignment
        configuration.retry = RetryPolicy(delays: delays)
        configuration.topics.decisions = "herald.decisions"
        configuration.topics.deliveries = "herald.deliveries"
        configuration.receiptDelay = .zero
        configuration.receiptInterval = .milliseconds(100)
        if let deliveryTimeout { configuration.producer.deliveryTimeout = deliveryTimeout }
        return try Sender(
            configuration: configuration,
            providers: ProviderClients(apns: fixture.apns, fcm: fixture.fcm, expo: fixture.expo),
            ledger: ledger,
            clock: clock,
            logger: logger ?? environment.logger
        )
    }

    static func record(_ message: OutboundMessage) -> KafkaProducerRecord {
        KafkaProducerRecord(
            topic: "herald.outbound",
            key: KafkaBytes(message.recipient),
            value: KafkaBytes(message.encoded())
        )
    }

    static let faultyCount = Int(ProcessInfo.processInfo.environment["HERALD_FAULTY_COUNT"] ?? "") ?? 10_000

    static func header(_ message: KafkaMessage, _ name: String) -> String? { message.header(name)?.string }

    @Test(
        "10,000 notifications through 10% 500s, 5% 429s and 1% dropped connections: each accepted once, or dead-lettered with a reason"
    )
    func faultyProviders() async throws {
        let environment = try KafkaTestEnvironment(topics: Self.topics)
        let faults = try FaultProfile(parsing: "500=0.10,429=0.05,drop=0.01,retry-after=0,seed=42")
        try await SimulatorFixture.with(faults: faults) { fixture in
            // Nine in ten to APNs one by one, the rest to Expo in batches.
            let messages = try (0..<Self.faultyCount).map { index in
                index % 10 == 9
                    ? try SimulatorFixture.message(.expo, token: "ExponentPushToken[device-\(index)]", id: "n-\(index)")
                    : try SimulatorFixture.message(
                        .apns,
                        token: ProviderAnswerTests.apnsToken(index + 1),
                        id: "n-\(index)"
                    )
            }.map { message in
                var message = message
                message.recipient = "user-\(message.notificationID)"
                return message
            }
            // Room for every warning of the run: the check below adds up all of them.
            let warnings = LogCapture(keeping: 100_000)
            var logger = warnings.logger(label: "herald.sender")
            logger.logLevel = .warning
            try await environment.withCollector(["herald.outbound.dlq"]) { deadLetters in
                try await Self.withSender(
                    environment,
                    fixture,
                    ledger: try SQLiteStore(path: ":memory:"),
                    logger: logger
                ) { sender in
                    // Produced while the sender runs and spread over the partitions: the embedded
                    // broker keeps only about 5 MiB per partition.
                    try await environment.produce(messages.map(Self.record))
                    // Debug builds of the HTTP/2 stack manage about a hundred calls a second here.
                    let settled = await eventually(
                        within: .seconds(Double(ProcessInfo.processInfo.environment["HERALD_FAULTY_WAIT"] ?? "400")!)
                    ) {
                        fixture.simulator.statistics.accepted + deadLetters.count >= messages.count
                    }
                    #expect(
                        settled,
                        "accepted \(fixture.simulator.statistics.accepted), dead letters \(deadLetters.count)"
                    )
                    // A moment more, to catch anything sent twice.
                    try await Task.sleep(for: .milliseconds(500))
                    let deadIDs = try deadLetters.all.map {
                        try OutboundMessage(decoding: $0.value ?? KafkaBytes([])).notificationID
                    }
                    var lost: [String] = []
                    var twice: [String] = []
                    for message in messages {
                        let id =
                            message.provider == .apns
                            ? message.request.headers.first { $0.name == "apns-id" }!.value : message.notificationID
                        let accepted = fixture.simulator.acceptedCount(id: id)
                        let dead = deadIDs.filter { $0 == message.notificationID }.count
                        if accepted + dead == 0 { lost.append(message.notificationID) }
                        if accepted + dead > 1 { twice.append(message.notificationID) }
                    }
                    #expect(lost.count == 0, "lost: \(lost.count), such as \(lost.prefix(5))")
                    if !lost.isEmpty { print(try await Self.whereLost(lost, environment: environment, sender: sender)) }
                    #expect(twice.count == 0, "more than once: \(twice.count), such as \(twice.prefix(5))")
                    for letter in deadLetters.all {
                        #expect(Self.header(letter, HeraldHeader.errorCode)?.isEmpty == false)
                        #expect(Self.header(letter, HeraldHeader.originalTopic) == "herald.outbound")
                        #expect(Self.header(letter, HeraldHeader.attempts) == "5")
                    }
                    let counters = sender.statistics.snapshot
                    #expect(counters.retriesByStep["1", default: 0] > messages.count / 20)
                    #expect(counters.answersByReason["apns.InternalServerError", default: 0] > 0)
                    #expect(counters.answersByReason["apns.TooManyRequests", default: 0] > 0)
                    #expect(counters.answersByReason["transport.connection", default: 0] > 0)
                    #expect(fixture.simulator.statistics.dropped > 0)
                    // Every call that got no answer is logged with its cause, once per batch,
                    // provider and cause: the dropped requests as the simulator's stream reset (a
                    // loaded machine may add timeouts, under their own cause and code).
                    let unanswered = warnings.recent.filter { $0.contains(Sender.unansweredCallsMessage) }
                    let logged = unanswered.compactMap { line in line.firstMatch(of: /calls=(\d+)/).map { Int($0.1)! } }
                    #expect(logged.count == unanswered.count)
                    let transportAnswers = counters.answersByReason.filter { $0.key.hasPrefix("transport.") }
                    #expect(logged.reduce(0, +) == transportAnswers.values.reduce(0, +), "\(transportAnswers)")
                    let dropped = unanswered.filter { $0.contains("cause=the connection failed: HTTP/2 stream closed") }
                    #expect(
                        dropped.compactMap { $0.firstMatch(of: /calls=(\d+)/).map { Int($0.1)! } }.reduce(0, +)
                            == counters.answersByReason["transport.connection", default: 0]
                    )
                }
            }
        }
    }

    /// For a test that lost notifications: where each of the first few lost ones was last written
    /// (topic, partition, offset, attempt) and where the sender's consumer stands on each partition.
    static func whereLost(_ lost: [String], environment: KafkaTestEnvironment, sender: Sender) async throws -> String {
        var lines = [
            "sender: \(sender.waitingRetries) retries held, \(sender.callsInHand) calls in hand, "
                + "\(sender.unacknowledgedRecords) records not yet acknowledged"
        ]
        let lag = sender.lag()
        for (partition, state) in sender.partitionStates().sorted(by: { $0.key < $1.key }) {
            lines.append("  \(partition): \(state), lag \(lag[partition].map(String.init) ?? "-")")
        }
        let wanted = Set(lost.prefix(10))
        for topic in ["herald.outbound"] + RetryPolicy().topics {
            let reader = TopicReader(
                bootstrapServers: [environment.cluster.bootstrapServers],
                topic: topic,
                clientID: "herald-test-lost"
            )
            try await reader.read(logger: environment.logger, idleTimeout: .seconds(10)) { batch in
                for copy in batch {
                    guard let outbound = try? OutboundMessage(decoding: copy.value ?? KafkaBytes([])),
                        wanted.contains(outbound.notificationID)
                    else { continue }
                    lines.append(
                        "  \(outbound.notificationID) attempt \(outbound.attempt) at \(copy.topicPartition)@\(copy.offset)"
                            + " not before \(copy.header(HeraldHeader.notBefore)?.string ?? "-")"
                    )
                }
            }
        }
        return lines.joined(separator: "\n")
    }

    @Test(
        "a redelivered message whose notification was delivered is not sent again; expired ones are dropped with a decision; deliveries past the retention are purged"
    )
    func ledgerAndExpiry() async throws {
        let environment = try KafkaTestEnvironment(topics: Self.topics)
        try await SimulatorFixture.with { fixture in
            let ledger = try SQLiteStore(path: ":memory:")
            // Delivered longer ago than the ledger's retention (7 days): purged when the sender starts.
            try await ledger.recordDeliveries([
                DeliveryRecord(
                    notificationID: "n-old",
                    provider: "fcm",
                    deliveredAt: Timestamp(rfc3339: "2020-01-01T00:00:00Z")!
                )
            ])
            let message = try SimulatorFixture.message(.fcm, id: "n-once")
            var expired = try SimulatorFixture.message(.fcm, id: "n-expired")
            expired.expiresAt = Timestamp(rfc3339: "2020-01-01T00:00:00Z")
            try await environment.withCollector(["herald.decisions"]) { decisions in
                try await Self.withSender(environment, fixture, ledger: ledger) { sender in
                    #expect(await eventually { sender.statistics.snapshot.purgedDeliveries == 1 })
                    try await environment.produce([Self.record(message), Self.record(expired)])
                    #expect(await eventually { fixture.simulator.acceptedCount(id: "n-once") == 1 })
                    #expect(await eventually { sender.statistics.snapshot.expired == 1 })
                    try await environment.produce([Self.record(message)])
                    #expect(await eventually { sender.statistics.snapshot.skippedAlreadyDelivered == 1 })
                    #expect(fixture.simulator.acceptedCount(id: "n-once") == 1)
                    #expect(fixture.simulator.acceptedCount(id: "n-expired") == 0)
                    // Required, not expected: the record is read below.
                    try #require(await eventually { decisions.count == 1 }, "\(decisions.readerPositions)")
                    let decision = try JSONParser().parse(decisions.all[0].value ?? KafkaBytes([]))
                    #expect(decision["reason"]?.stringValue == "expired")
                    #expect(decision["notificationId"]?.stringValue == "n-expired")
                    // Hashed as the worker's decision records are, in the value and the key.
                    let hashed = UserHash(key: nil)(expired.recipient)
                    #expect(decision["recipient"]?.stringValue == hashed)
                    #expect(decisions.all[0].key.map { String(decoding: Array($0), as: UTF8.self) } == hashed)
                }
            }
            #expect(try await ledger.delivered(among: ["n-once", "n-expired", "n-old"]) == ["n-once"])
        }
    }

    @Test("a copy that comes while the first copy's call is still out rides on that call: accepted once")
    func copyWhileFirstInFlight() async throws {
        try await sendCopyWhileFirstInFlight(id: "n-copied", ledger: try SQLiteStore(path: ":memory:"))
    }

    @Test(
        "a copy whose group read the ledger while the first copy's call was out is not sent once that call is recorded"
    )
    func copyReadLedgerBeforeFirstRecorded() async throws {
        // Had the copy's group read the ledger before claiming the notification, the answer (not
        // delivered) would come only after the first group recorded the call and let go of it.
        let ledger = LateAnsweringLedger(try SQLiteStore(path: ":memory:"))
        try await sendCopyWhileFirstInFlight(id: "n-raced", ledger: ledger)
        #expect(try await ledger.delivered(among: ["n-raced"]) == ["n-raced"])
    }

    /// Sends notification `id`, and a copy of it (a redelivered event's, with the same id) in a later
    /// group while the first call is out and unanswered, so the ledger does not know it yet; expects
    /// the copy skipped and the notification accepted once.
    func sendCopyWhileFirstInFlight(id: String, ledger: any DeliveryLedger) async throws {
        let environment = try KafkaTestEnvironment(topics: Self.topics)
        // Every answer waits 1.5 s; the simulator counts a call as accepted when it arrives.
        let faults = try FaultProfile(parsing: "latency=1500ms..1500ms")
        try await SimulatorFixture.with(faults: faults) { fixture in
            let message = try SimulatorFixture.message(.fcm, id: id)
            try await Self.withSender(environment, fixture, ledger: ledger) { sender in
                try await environment.produce([Self.record(message)])
                #expect(await eventually { fixture.simulator.acceptedCount(id: id) == 1 })
                try await environment.produce([Self.record(message)])
                #expect(await eventually { sender.statistics.snapshot.skippedAlreadyDelivered == 1 })
                #expect(await eventually { sender.statistics.snapshot.callsByOutcome["fcm delivered"] == 1 })
                try await Task.sleep(for: .seconds(2))
                #expect(fixture.simulator.acceptedCount(id: id) == 1)
            }
        }
    }

    @Test(
        "PostgreSQL down: the sender waits without calling, carries on when it is back, and stopped meanwhile exits cleanly; each notification is accepted once"
    )
    func ledgerOutage() async throws {
        let environment = try KafkaTestEnvironment(topics: Self.topics)
        let cluster = try await PostgresTestCluster.makeOwn()
        defer { cluster.destroy() }
        var configuration = try await cluster.makeDatabase()
        configuration.callTimeout = .seconds(2)
        let ledger = PostgresStore(configuration: configuration, logger: environment.logger)
        try await SimulatorFixture.with { fixture in
            try await withRunningServices([ledger]) {
                try await ledger.migrate()
                let messages = try ["n-before", "n-during", "n-stopped"].map {
                    try SimulatorFixture.message(.fcm, id: $0)
                }
                let first = try Self.makeSender(environment, fixture, ledger: ledger)
                let running = Task { try await first.run() }
                try await environment.produce([Self.record(messages[0])])
                #expect(await eventually { fixture.simulator.acceptedCount(id: "n-before") == 1 })

                // Down: the ledger cannot say whether it was sent, so it is not sent yet.
                try await cluster.halt()
                try await environment.produce([Self.record(messages[1])])
                try await Task.sleep(for: .seconds(3))
                #expect(fixture.simulator.acceptedCount(id: "n-during") == 0)
                try await cluster.start()
                #expect(await eventually { fixture.simulator.acceptedCount(id: "n-during") == 1 })
                #expect(try await eventually { try await ledger.delivered(among: ["n-during"]) == ["n-during"] })

                // Down again, and the sender is stopped meanwhile: it gives the message up and exits.
                try await cluster.halt()
                try await environment.produce([Self.record(messages[2])])
                try await Task.sleep(for: .seconds(3))
                let stopping = ContinuousClock.now
                running.cancel()
                try await running.value
                #expect(ContinuousClock.now - stopping < .seconds(20), "stopped within the shutdown deadline")
                #expect(fixture.simulator.acceptedCount(id: "n-stopped") == 0)

                // The next sender, once the server is back, sends what the first one gave up.
                try await cluster.start()
                try await Self.withSender(environment, fixture, ledger: ledger) { _ in
                    #expect(await eventually { fixture.simulator.acceptedCount(id: "n-stopped") == 1 })
                }
                for id in ["n-before", "n-during", "n-stopped"] {
                    #expect(fixture.simulator.acceptedCount(id: id) == 1, "\(id) accepted once")
                }
            }
        }
    }

    /// Ten APNs messages (ids `<ids>-0`…) whose calls `fixture` answers 503 until the test unscripts
    /// their tokens: fewer than the circuit breaker's threshold, whose circuit would put them back
    /// itself. Also the calls' apns-ids, by which the simulator knows them.
    static func refusedOnce(
        _ fixture: SimulatorFixture,
        ids: String
    ) throws -> (tokens: [String], messages: [OutboundMessage], callIDs: [String]) {
        let tokens = (1...10).map(ProviderAnswerTests.apnsToken)
        let messages = try tokens.enumerated().map { index, token in
            var message = try SimulatorFixture.message(.apns, token: token, id: "\(ids)-\(index)")
            message.recipient = "user-\(index)"
            return message
        }
        let callIDs = messages.map { message in message.request.headers.first { $0.name == "apns-id" }!.value }
        for token in tokens {
            fixture.simulator.script(token: token, .init(status: 503, reason: "ServiceUnavailable"))
        }
        return (tokens, messages, callIDs)
    }

    @Test(
        "retries waiting for their time when the sender stops are given back: it stops at once, not at their time, and the next sender sends each once"
    )
    func waitingRetriesGivenBack() async throws {
        let environment = try KafkaTestEnvironment(topics: Self.topics)
        try await SimulatorFixture.with { fixture in
            // Every first call is answered 503: each message waits 12 s in herald.outbound.retry.1.
            let (tokens, messages, callIDs) = try Self.refusedOnce(fixture, ids: "w")
            let delays: [Duration] = [.seconds(12), .milliseconds(100), .milliseconds(100), .milliseconds(100)]
            let ledgerPath = scratch.path + "/waiting.sqlite"
            let first = try Self.makeSender(
                environment,
                fixture,
                ledger: try SQLiteStore(path: ledgerPath),
                delays: delays
            )
            // Stopped as SIGTERM stops it: a graceful shutdown, no cancellation.
            let group = ServiceGroup(
                configuration: ServiceGroupConfiguration(services: [.init(service: first)], logger: environment.logger)
            )
            let running = Task { try await group.run() }
            try await environment.produce(messages.map(Self.record))
            #expect(
                await eventually { first.statistics.snapshot.retriesByStep["1", default: 0] == messages.count },
                "every first call was answered 503 and its retry written"
            )
            // Read back, they wait for their time. Not necessarily all at once: a partition waiting
            // is paused, and what it holds beyond its first fetch is read when that has been tried.
            #expect(await eventually { first.waitingRetries > 0 }, "retries are read back and wait")
            for token in tokens { fixture.simulator.script(token: token, nil) }

            let stopping = ContinuousClock.now
            await group.triggerGracefulShutdown()
            try await running.value
            // Kept, they held the sender until their time (and were sent by it and the next owner).
            #expect(
                ContinuousClock.now - stopping < .seconds(4),
                "stopped without waiting for its retries' time (\(ContinuousClock.now - stopping))"
            )
            #expect(first.waitingRetries == 0)
            #expect(fixture.simulator.statistics.accepted == 0, "nothing sent before its time")

            try await Self.withSender(environment, fixture, ledger: try SQLiteStore(path: ledgerPath), delays: delays) {
                _ in
                #expect(
                    await eventually(within: .seconds(60)) { fixture.simulator.statistics.accepted >= messages.count },
                    "accepted \(fixture.simulator.statistics.accepted) of \(messages.count)"
                )
            }
            let wrong = callIDs.filter { fixture.simulator.acceptedCount(id: $0) != 1 }
            #expect(wrong.count == 0, "not accepted exactly once: \(wrong.prefix(5))")
        }
    }

    @Test(
        "a second sender joins and leaves while retries wait for their time: the partitions handed back flow again, and each notification is accepted once"
    )
    func rebalanceWhileRetriesWait() async throws {
        let environment = try KafkaTestEnvironment(topics: Self.topics)
        try await SimulatorFixture.with { fixture in
            // Every first call is answered 503: each message waits 25 s in herald.outbound.retry.1,
            // its partition paused, while the second sender joins and leaves.
            let (tokens, messages, callIDs) = try Self.refusedOnce(fixture, ids: "r")
            let delays: [Duration] = [.seconds(25), .milliseconds(100), .milliseconds(100), .milliseconds(100)]
            let ledgerPath = scratch.path + "/rebalance.sqlite"
            // Eager: every rebalance takes every partition away and hands it out again, so the paused
            // retry partitions are handed back to the first sender whichever member got them.
            func sender() throws -> Sender {
                try Self.makeSender(
                    environment,
                    fixture,
                    ledger: try SQLiteStore(path: ledgerPath),
                    delays: delays,
                    assignment: .eager
                )
            }
            // The partitions the senders read: the outbound topic and the retry topics.
            let read = Self.topics.filter { $0.key.hasPrefix("herald.outbound") && $0.key != "herald.outbound.dlq" }
            let first = try sender()
            try await environment.withCollector(["herald.deliveries"]) { deliveries in
                try await withRunningServices([first]) {
                    let written = try await environment.produce(messages.map(Self.record))
                    #expect(
                        await eventually { first.statistics.snapshot.retriesByStep["1", default: 0] == messages.count },
                        "every first call was answered 503 and its retry written"
                    )
                    #expect(await eventually { first.waitingRetries > 0 }, "retries are read back and wait")
                    // The first copies' offsets committed: after the rebalances the first sender reads
                    // the retries again, not the first copies (which would be sent as they are).
                    var ends: [TopicPartition: Int64] = [:]
                    for report in written {
                        let partition = TopicPartition("herald.outbound", report.partition)
                        ends[partition] = max(ends[partition] ?? 0, (report.offset ?? 0) + 1)
                    }
                    let outbound = Array(ends.keys)
                    #expect(await eventually { (try? await first.committedOffsets(for: outbound)) == ends })
                    for token in tokens { fixture.simulator.script(token: token, nil) }
                    let second = try sender()
                    try await withRunningServices([second]) {
                        #expect(await eventually(within: .seconds(30)) { second.assignedPartitions > 0 })
                    }
                    #expect(
                        await eventually(within: .seconds(30)) {
                            first.assignedPartitions == read.values.reduce(0, +)
                        }
                    )
                    // Before, a partition paused when the rebalance took it away came back paused for
                    // good: its retries were never read again.
                    #expect(
                        await eventually(within: .seconds(60)) {
                            fixture.simulator.statistics.accepted >= messages.count
                        },
                        "accepted \(fixture.simulator.statistics.accepted) of \(messages.count); \(first.partitionStates())"
                    )
                }
                // Each was delivered by its retry (attempt 2), read from a handed-back partition. (The
                // records are read back by the collector a moment after the calls are answered.)
                func delivered() throws -> [JSONValue] {
                    try deliveries.all.map { try JSONParser().parse($0.value ?? KafkaBytes([])) }
                        .filter { $0["outcome"]?.stringValue == "delivered" }
                }
                _ = try await eventually { try delivered().count >= messages.count }
                let attempts = Dictionary(
                    try delivered().map { record in
                        var attempt = 0
                        if case .number(let text)? = record["attempt"] { attempt = Int(text) ?? 0 }
                        return (record["notificationId"]?.stringValue ?? "", attempt)
                    },
                    uniquingKeysWith: max
                )
                #expect(attempts == Dictionary(uniqueKeysWithValues: messages.map { ($0.notificationID, 2) }))
            }
            let wrong = callIDs.filter { fixture.simulator.acceptedCount(id: $0) != 1 }
            #expect(wrong.count == 0, "not accepted exactly once: \(wrong.prefix(5))")
        }
    }

    @Test("dead tokens become device.token.invalidated directory events: APNs 410 with its time, Expo receipts")
    func tokenInvalidation() async throws {
        let environment = try KafkaTestEnvironment(topics: Self.topics)
        try await SimulatorFixture.with { fixture in
            Self.scriptDeadTokens(fixture)
            try await environment.withCollector(["herald.directory", "herald.outbound.dlq"]) { received in
                try await Self.withSender(environment, fixture, ledger: try SQLiteStore(path: ":memory:")) { sender in
                    try await environment.produce([
                        Self.record(try SimulatorFixture.message(.apns, id: "n-apns")),
                        Self.record(
                            try SimulatorFixture.message(.expo, token: "ExponentPushToken[gone]", id: "n-expo")
                        ),
                    ])
                    #expect(await eventually { received.count == 2 }, "\(received.readerPositions)")
                    let events = try received.all.map { message in
                        #expect(message.topic == "herald.directory")
                        return (
                            key: message.key?.string,
                            event: try EventDecoder().decode(value: Array(message.value ?? KafkaBytes([])))
                        )
                    }
                    let invalidations = try events.map { try DirectoryEvent($0.event) }
                    // Keyed by the token: the directory topic is compacted, and keyed by the user
                    // the invalidation would take the place of the user's registrations.
                    #expect(
                        Set(events.map(\.key))
                            == ["token/apns/\(SimulatorFixture.apnsToken)", "token/expo/ExponentPushToken[gone]"]
                    )
                    #expect(
                        invalidations.contains(
                            .tokenInvalidated(
                                provider: .apns,
                                token: SimulatorFixture.apnsToken,
                                at: Timestamp(rfc3339: "2026-11-20T08:00:00Z")!
                            )
                        )
                    )
                    #expect(
                        invalidations.contains {
                            if case .tokenInvalidated(.expo, "ExponentPushToken[gone]", _) = $0 { true } else { false }
                        }
                    )
                    #expect(sender.statistics.snapshot.tokensInvalidated == 2)
                }
            }
        }
    }

    @Test(
        "with PostgreSQL: a message whose notification id the ledger could not keep (U+0000, 3,000 bytes) is dead-lettered unsent, and its partition goes on"
    )
    func unstorableIDs() async throws {
        let environment = try KafkaTestEnvironment(topics: Self.topics)
        let ledger = PostgresStore(
            configuration: try await PostgresTestCluster.shared().makeDatabase(),
            logger: environment.logger
        )
        try await SimulatorFixture.with { fixture in
            try await withRunningServices([ledger]) {
                try await ledger.migrate()
                // One key: one partition, in this order. Before the reader refused them, PostgreSQL
                // refused the first's look-up and the second's ledger entry (after its call) for
                // ever, and the third was never sent.
                let ids = ["n-\u{0}", String(repeating: "n", count: 3000), "n-after"]
                let records = try ids.map { Self.record(try SimulatorFixture.message(.fcm, id: $0)) }
                try await environment.withCollector(["herald.outbound.dlq"]) { received in
                    try await Self.withSender(environment, fixture, ledger: ledger) { sender in
                        try await environment.produce(records)
                        #expect(await eventually { fixture.simulator.acceptedCount(id: "n-after") == 1 })
                        // The ledger is written once the provider's answer is in, a moment after
                        // the simulator counts the call.
                        #expect(
                            try await eventually { try await ledger.delivered(among: ["n-after"]) == ["n-after"] }
                        )
                        #expect(await eventually { received.all.count == 2 }, "\(received.readerPositions)")
                        for letter in received.all {
                            #expect(Self.header(letter, HeraldHeader.errorCode) == "outbound.invalid_message")
                            #expect(
                                Self.header(letter, HeraldHeader.errorMessage)
                                    == "outbound.invalid_message: 'notificationId' must be 1 to 128 printable ASCII characters"
                            )
                        }
                        #expect(Set(received.all.map(\.value)) == Set(records.prefix(2).map(\.value)))
                        #expect(fixture.simulator.acceptedCount(id: ids[1]) == 0)
                        #expect(sender.statistics.snapshot.ledgerRefusals == 0)
                    }
                }
            }
        }
    }

    @Test("a record whose key or headers are too large to copy to a retry topic is dead-lettered unsent, cut to fit")
    func oversizeKeyOrHeaders() async throws {
        let environment = try KafkaTestEnvironment(topics: Self.topics)
        try await SimulatorFixture.with { fixture in
            var longKey = Self.record(try SimulatorFixture.message(.fcm, id: "n-long-key"))
            longKey.key = KafkaBytes(String(repeating: "k", count: 20_000))
            var manyHeaders = Self.record(try SimulatorFixture.message(.fcm, id: "n-many-headers"))
            manyHeaders.headers = (0..<70).map { KafkaHeader("h\($0)", KafkaBytes(Array(repeating: 1, count: 1024))) }
            let fine = Self.record(try SimulatorFixture.message(.fcm, id: "n-fine"))
            try await environment.withCollector(["herald.outbound.dlq"]) { received in
                try await Self.withSender(environment, fixture, ledger: try SQLiteStore(path: ":memory:")) { _ in
                    try await environment.produce([longKey, manyHeaders, fine])
                    #expect(await eventually { fixture.simulator.acceptedCount(id: "n-fine") == 1 })
                    #expect(await eventually { received.count == 2 }, "\(received.readerPositions)")
                }
                for letter in received.all {
                    #expect(Self.header(letter, HeraldHeader.errorCode) == "outbound.invalid_message")
                    #expect(
                        Self.header(letter, HeraldHeader.errorMessage)
                            == "the record's key is over 16384 bytes or its headers over 65536"
                    )
                }
                let cutKey = try #require(received.all.first { $0.header(HeraldHeader.keyTruncated) != nil })
                #expect(cutKey.key?.count == 16_384)
                let dropped = try #require(received.all.first { $0.header(HeraldHeader.headersDropped) != nil })
                #expect(Self.header(dropped, HeraldHeader.headersDropped) == "70")
                #expect(!dropped.headers.contains { $0.name == "h0" }, "the original headers left out")
            }
            #expect(fixture.simulator.acceptedCount(id: "n-long-key") == 0)
            #expect(fixture.simulator.acceptedCount(id: "n-many-headers") == 0)
        }
    }

    @Test(
        "a ledger entry the store refuses even alone is skipped and counted; the group's other entries are kept and the partition goes on"
    )
    func refusedLedgerEntries() async throws {
        let environment = try KafkaTestEnvironment(topics: Self.topics)
        let path = try scratch.file("refusing.sqlite", "")
        try FileManager.default.removeItem(atPath: path)
        let ledger = try SQLiteStore(path: path)
        try SQLiteConnection(path: path).execute(
            """
            CREATE TRIGGER refuse BEFORE INSERT ON deliveries WHEN NEW.notification_id LIKE 'n-refused%'
            BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;
            """
        )
        try await SimulatorFixture.with { fixture in
            let ids = ["n-first", "n-refused", "n-third", "n-refused-too", "n-fifth"]
            let records = try ids.map { Self.record(try SimulatorFixture.message(.fcm, id: $0)) }
            try await Self.withSender(environment, fixture, ledger: ledger) { sender in
                try await environment.produce(records)
                #expect(await eventually { ids.allSatisfy { fixture.simulator.acceptedCount(id: $0) == 1 } })
                #expect(await eventually { sender.statistics.snapshot.ledgerRefusals == 2 })
                // The last entries may be written in a group after the refusals were counted.
                #expect(
                    try await eventually {
                        try await ledger.delivered(among: ids) == ["n-first", "n-third", "n-fifth"]
                    }
                )
            }
        }
    }

    @Test(
        "herald.deliveries gets one record per answer: delivered, retrying then failed, failed at once, a dead token (APNs 410, an Expo receipt); users hashed, no token"
    )
    func deliveryRecords() async throws {
        let environment = try KafkaTestEnvironment(topics: Self.topics)
        try await SimulatorFixture.with { fixture in
            let (misconfigured, failing) = Self.scriptFailures(fixture)
            Self.scriptDeadTokens(fixture)
            let messages = [
                try SimulatorFixture.message(.fcm, id: "n-ok"),
                try SimulatorFixture.message(.apns, token: misconfigured, id: "n-config"),
                try SimulatorFixture.message(.apns, token: failing, id: "n-failing"),
                try SimulatorFixture.message(.apns, id: "n-gone"),
                try SimulatorFixture.message(.expo, token: "ExponentPushToken[gone]", id: "n-expo"),
            ]
            var collected: [KafkaMessage] = []
            try await environment.withCollector(["herald.deliveries"]) { received in
                try await Self.withSender(environment, fixture, ledger: try SQLiteStore(path: ":memory:")) { _ in
                    try await environment.produce(messages.map { Self.record($0) })
                    // n-ok 1, n-config 1, n-failing 4 retries and a failure, n-gone 1, n-expo its
                    // ticket and its receipt.
                    #expect(await eventually { received.count == 10 }, "\(received.readerPositions)")
                }
                collected = received.all
            }
            let records = try collected.map { try JSONParser().parse(Array($0.value ?? KafkaBytes([]))) }
            func outcomes(_ id: String) -> [String] {
                records.filter { $0["notificationId"]?.stringValue == id }.map {
                    [$0["outcome"]?.stringValue, $0["reason"]?.stringValue].compactMap { $0 }.joined(separator: " ")
                }
            }
            #expect(outcomes("n-ok") == ["delivered"])
            #expect(outcomes("n-config") == ["failed apns.InvalidProviderToken"])
            #expect(
                outcomes("n-failing")
                    == Array(repeating: "retrying apns.ServiceUnavailable", count: 4) + [
                        "failed apns.ServiceUnavailable"
                    ]
            )
            #expect(outcomes("n-gone") == ["invalid_token apns.Unregistered"])
            #expect(outcomes("n-expo") == ["delivered", "invalid_token expo.DeviceNotRegistered"])
            let attempts = records.filter { $0["notificationId"]?.stringValue == "n-failing" }.compactMap {
                $0["attempt"].flatMap { if case .number(let text) = $0 { Int(text) } else { nil } }
            }
            #expect(attempts == [1, 2, 3, 4, 5])
            let hashed = UserHash(key: nil)("user-1")
            for record in records {
                #expect(record["recipient"]?.stringValue == hashed)
                #expect(record["provider"]?.stringValue != nil && record["answeredAt"]?.stringValue != nil)
            }
            #expect(
                records.first { $0["notificationId"]?.stringValue == "n-ok" }?["kind"]?.stringValue == "order.confirmed"
            )
            let text = collected.map { String(decoding: Array($0.value ?? KafkaBytes([])), as: UTF8.self) }
            #expect(
                !text.contains { $0.contains("user-1") || $0.contains(failing) || $0.contains("ExponentPushToken") }
            )
            #expect(collected.allSatisfy { $0.key?.string == hashed })
        }
    }

    @Test("configuration errors are dead-lettered at once; retries used up end in the dead-letter topic")
    func deadLetters() async throws {
        let environment = try KafkaTestEnvironment(topics: Self.topics)
        try await SimulatorFixture.with { fixture in
            let (misconfigured, failing) = Self.scriptFailures(fixture)
            try await environment.withCollector(["herald.outbound.dlq", "herald.outbound.retry.1"]) { received in
                try await Self.withSender(environment, fixture, ledger: try SQLiteStore(path: ":memory:")) { sender in
                    try await environment.produce([
                        Self.record(try SimulatorFixture.message(.apns, token: misconfigured, id: "n-config")),
                        Self.record(try SimulatorFixture.message(.apns, token: failing, id: "n-failing")),
                    ])
                    #expect(
                        await eventually { received.all.filter { $0.topic == "herald.outbound.dlq" }.count == 2 },
                        "\(received.readerPositions)"
                    )
                    let letters = Dictionary(
                        uniqueKeysWithValues: try received.all.filter { $0.topic == "herald.outbound.dlq" }.map {
                            (try OutboundMessage(decoding: $0.value ?? KafkaBytes([])).notificationID, $0)
                        }
                    )
                    let config = try #require(letters["n-config"])
                    #expect(Self.header(config, HeraldHeader.errorCode) == "apns.InvalidProviderToken")
                    #expect(Self.header(config, HeraldHeader.attempts) == "1")
                    let exhausted = try #require(letters["n-failing"])
                    #expect(Self.header(exhausted, HeraldHeader.errorCode) == "apns.ServiceUnavailable")
                    #expect(Self.header(exhausted, HeraldHeader.attempts) == "5")
                    #expect(Self.header(exhausted, HeraldHeader.originalTopic) == "herald.outbound")
                    #expect(Self.header(exhausted, HeraldHeader.errorMessage)?.contains("retries used up") == true)
                    let retried = try #require(received.all.first { $0.topic == "herald.outbound.retry.1" })
                    let notBefore = try #require(
                        Self.header(retried, HeraldHeader.notBefore).flatMap { Timestamp(rfc3339: $0) }
                    )
                    let failedAt = try #require(
                        Self.header(retried, HeraldHeader.lastFailure).flatMap { Timestamp(rfc3339: $0) }
                    )
                    // 100 ms plus up to 10% jitter.
                    #expect((100...110).contains(notBefore.epochMilliseconds - failedAt.epochMilliseconds))
                    #expect(try OutboundMessage(decoding: retried.value ?? KafkaBytes([])).attempt == 2)
                    let counters = sender.statistics.snapshot
                    #expect(counters.configurationErrors["apns.InvalidProviderToken"] == 1)
                    #expect(counters.retriesByStep == ["1": 1, "2": 1, "3": 1, "4": 1])
                }
            }
        }
    }
}

/// A ledger on SQLite whose second look-up reads the store at once but answers only after the
/// first deliveries were recorded, and a while more: the timing of a busy store, when a group's
/// read is overtaken by another group's write.
final class LateAnsweringLedger: ForwardingDeliveryLedger {
    let store: SQLiteStore
    var ledger: any DeliveryLedger { store }
    private let lookups = Atomic<Int>(0)
    private let recorded = Atomic<Bool>(false)

    init(_ store: SQLiteStore) { self.store = store }

    func delivered(among notificationIDs: [String]) async throws(StoreError) -> Set<String> {
        let answer = try await store.delivered(among: notificationIDs)
        guard lookups.add(1, ordering: .relaxed).newValue == 2 else { return answer }
        // Until then, or until the sender stops (a cancelled sleep returns at once: without the
        // check this would spin).
        while !recorded.load(ordering: .acquiring) && !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(10))
        }
        try? await Task.sleep(for: .milliseconds(300))
        return answer
    }

    func recordDeliveries(_ deliveries: [DeliveryRecord]) async throws(StoreError) {
        try await store.recordDeliveries(deliveries)
        if !deliveries.isEmpty { recorded.store(true, ordering: .releasing) }
    }
}

extension SenderTests {
    /// Tests that take the embedded broker down: they run in a phase of their own (see `BrokerOutage`
    /// in the Makefile).
    @Suite("Kafka broker outages", .serialized)
    struct BrokerOutage {
        /// The ledgers' SQLite files.
        let scratch = ScratchDirectory()

        @Test(
            "Kafka down mid-stream: for seconds the sender waits and carries on; past the delivery timeout it stops with that error and a new sender does the rest; each notification accepted once or dead-lettered",
            arguments: [false, true]
        )
        func kafkaOutage(pastDeliveryTimeout: Bool) async throws {
            let environment = try KafkaTestEnvironment(topics: SenderTests.topics)
            // One call in ten answered 500: some of the calls made around the outage need a retry
            // record, which cannot be written until the broker is back.
            let faults = try FaultProfile(parsing: "500=0.10,retry-after=0,seed=7")
            // A file, for a second sender to find what the first delivered.
            let ledgerPath = scratch.path + "/ledger-\(pastDeliveryTimeout).sqlite"
            try await SimulatorFixture.with(faults: faults) { fixture in
                let messages = try (0..<400).map { index in
                    var message = try SimulatorFixture.message(.fcm, id: "n-\(index)")
                    message.recipient = "user-\(index)"
                    return message
                }
                try await environment.withCollector(["herald.outbound.dlq"]) { deadLetters in
                    let first = try SenderTests.makeSender(
                        environment,
                        fixture,
                        ledger: try SQLiteStore(path: ledgerPath),
                        deliveryTimeout: pastDeliveryTimeout ? .seconds(2) : nil
                    )
                    let (running, ended) = startService(first)
                    try await environment.produce(messages[..<200].map(SenderTests.record))
                    #expect(await eventually { fixture.simulator.statistics.accepted >= 50 })

                    try environment.cluster.setBrokerDown(1)
                    // Produced while the broker is down: delivered when it is back.
                    let producing = Task { try await environment.produce(messages[200...].map(SenderTests.record)) }
                    if pastDeliveryTimeout {
                        // A retry record librdkafka gave up on stops the sender rather than let its
                        // message be marked done: the message comes back to the next sender.
                        #expect(await eventually(within: .seconds(60)) { ended.value != nil }, "the sender stops")
                        let failure: (any Error)? = if case .failure(let error) = ended.value { error } else { nil }
                        #expect(
                            (failure as? KafkaError)?.code == .deliveryTimedOut,
                            "stopped by the delivery that timed out, not by \(String(describing: failure))"
                        )
                    } else {
                        try await Task.sleep(for: .seconds(4))
                        #expect(ended.value == nil, "the sender waits for the broker instead of stopping")
                    }
                    try environment.cluster.setBrokerUp(1)
                    _ = try await producing.value
                    let second =
                        pastDeliveryTimeout
                        ? try SenderTests.makeSender(environment, fixture, ledger: try SQLiteStore(path: ledgerPath))
                        : nil
                    let secondRun = second.map { sender in Task { try await sender.run() } }

                    let settled = await eventually(within: .seconds(120)) {
                        fixture.simulator.statistics.accepted + deadLetters.count >= messages.count
                    }
                    #expect(
                        settled,
                        "accepted \(fixture.simulator.statistics.accepted), dead letters \(deadLetters.count)"
                    )
                    if !settled {
                        let lost = messages.map(\.notificationID).filter {
                            fixture.simulator.acceptedCount(id: $0) == 0
                        }
                        for sender in [first, second].compactMap({ $0 }) {
                            print(try await SenderTests.whereLost(lost, environment: environment, sender: sender))
                        }
                    }
                    // A moment more, to catch anything sent twice.
                    try await Task.sleep(for: .milliseconds(500))
                    if !pastDeliveryTimeout { #expect(ended.value == nil, "the same sender did the rest") }
                    let dead = try deadLetters.all.map {
                        try OutboundMessage(decoding: $0.value ?? KafkaBytes([])).notificationID
                    }
                    let wrong = messages.map(\.notificationID).filter { id in
                        fixture.simulator.acceptedCount(id: id) + dead.filter { $0 == id }.count != 1
                    }
                    #expect(wrong.count == 0, "not accepted or dead-lettered exactly once: \(wrong.prefix(5))")
                    let retries = [first, second].compactMap { $0?.statistics.snapshot.retriesByStep["1", default: 0] }
                    #expect(retries.reduce(0, +) > 0, "some calls were retried")
                    running.cancel()
                    secondRun?.cancel()
                    _ = try? await running.value
                    try await secondRun?.value
                }
            }
        }
    }
}
