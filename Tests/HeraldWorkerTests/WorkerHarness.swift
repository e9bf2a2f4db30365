import Foundation
import HeraldApp
import HeraldCatalog
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldStore
import HeraldTestSupport
import HeraldWorker
import Synchronization
import Testing

let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

let exampleCatalog: Catalog = {
    do {
        return try CatalogLoader.load(directory: repositoryRoot.appendingPathComponent("catalog").path).catalog
    } catch {
        fatalError("the example catalog does not load: \(error)")
    }
}()

/// The example domain topics, by the example events' `source`.
let domainTopics = [
    "/orders": "orders.events", "/payments": "payments.events", "/identity": "security.events",
    "/chat": "messages.events", "/marketing": "marketing.events",
]

/// An embedded cluster with Herald's topics, and helpers to feed it and read what comes out.
struct Pipeline {
    let environment: KafkaTestEnvironment

    init() throws {
        var topics = Dictionary(uniqueKeysWithValues: domainTopics.values.map { ($0, 3) })
        topics["herald.directory"] = 3
        topics["herald.outbound"] = 3
        topics["herald.events.dlq"] = 1
        topics["herald.decisions"] = 1
        environment = try KafkaTestEnvironment(topics: topics)
    }

    func worker(
        store: any StateStore,
        clock: any HeraldClock,
        group: String = "herald-worker",
        batchSize: Int = 100,
        crashAfterBatches: Int? = nil,
        deliveryTimeout: Duration? = nil,
        statisticsInterval: Duration? = nil,
        settings: (inout HeraldConfiguration) -> Void = { _ in }
    ) throws -> Worker {
        var configuration = HeraldConfiguration()
        configuration.worker.domainTopics = domainTopics.values.sorted()
        configuration.worker.batchSize = batchSize
        settings(&configuration)
        return try WorkerApp.makeWorker(
            configuration: configuration,
            bootstrapServers: [environment.cluster.bootstrapServers],
            catalog: exampleCatalog,
            store: store,
            clock: clock,
            logger: environment.logger
        ) { worker in
            var consumer = environment.consumerConfiguration(group: group, topics: worker.consumer.topics)
            consumer.maxBatchSize = worker.consumer.maxBatchSize
            consumer.fetchMaxWait = .milliseconds(50)
            consumer.client.statisticsInterval = statisticsInterval
            worker.consumer = consumer
            worker.producer = environment.producerConfiguration()
            if let deliveryTimeout { worker.producer.deliveryTimeout = deliveryTimeout }
            worker.dueWorkInterval = .milliseconds(100)
            worker.crashAfterBatches = crashAfterBatches
        }
    }

    /// Produces `records` and returns where each landed.
    @discardableResult
    func produce(_ records: [KafkaProducerRecord]) async throws -> [KafkaDeliveryReport] {
        try await environment.produce(records)
    }

    /// Runs `body` while a consumer of its own group reads `topics` from the beginning.
    func withCollector<R: Sendable>(
        _ topics: [String],
        _ body: (ReceivedMessages) async throws -> R
    ) async throws -> R {
        try await environment.withCollector(topics, body)
    }
}

/// Waits until `condition` holds, checking every 50 ms.
func eventually(
    within limit: Duration = .seconds(30),
    _ what: String,
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    throw TestFailure("timed out after \(limit) waiting until \(what)")
}

/// A CloudEvent as JSON bytes.
func cloudEvent(
    id: String,
    type: String,
    source: String = "/tests",
    time: String? = "2026-11-21T12:00:00Z",
    data: JSONValue
) -> String {
    let attributes: [(String, JSONValue)] = [
        ("specversion", .string("1.0")), ("id", .string(id)), ("source", .string(source)), ("type", .string(type)),
    ]
    return JSONValue.object(
        JSONObject(
            attributes + (time.map { [("time", .string($0))] } ?? [])
                + [("datacontenttype", .string("application/json")), ("data", data)]
        )
    ).serialized
}

func object(_ members: [(String, JSONValue)]) -> JSONValue { .object(JSONObject(members)) }

/// A directory record for `herald.directory`, keyed by the user.
func directoryRecord(
    _ user: String,
    _ id: String,
    _ type: String,
    _ data: [(String, JSONValue)],
    time: String = "2026-11-01T09:00:00Z"
) -> KafkaProducerRecord {
    KafkaProducerRecord(
        topic: "herald.directory",
        key: KafkaBytes(user),
        value: KafkaBytes(
            cloudEvent(
                id: id,
                type: type,
                source: "/accounts",
                time: time,
                data: object([("userId", .string(user))] + data)
            )
        )
    )
}

/// One of ``exampleUsers`` with its device, profile, and marketing opted in.
func recipientRecords(
    _ user: (user: String, provider: String, token: String, locale: String, timeZone: String)
) -> [KafkaProducerRecord] {
    recipientRecords(
        user.user,
        provider: user.provider,
        token: user.token,
        locale: user.locale,
        timeZone: user.timeZone
    )
}

/// One user with one device, a profile, and marketing opted in.
func recipientRecords(
    _ user: String,
    provider: String,
    token: String,
    locale: String,
    timeZone: String
) -> [KafkaProducerRecord] {
    [
        directoryRecord(
            user,
            "\(user)-device",
            "device.registered",
            [
                ("deviceId", .string("device-1")), ("platform", .string(provider == "apns" ? "ios" : "android")),
                ("provider", .string(provider)), ("token", .string(token)), ("appId", .string("no.getdrop.app")),
                ("environment", .string("production")), ("locale", .string(locale)),
            ]
        ),
        directoryRecord(
            user,
            "\(user)-profile",
            "user.profile.updated",
            [("locale", .string(locale)), ("timeZone", .string(timeZone))]
        ),
        directoryRecord(
            user,
            "\(user)-preferences",
            "user.preferences.updated",
            [("categories", object([("marketing", .bool(true))]))]
        ),
    ]
}

extension KafkaMessage {
    var text: String { value.map { String(decoding: Array($0), as: UTF8.self) } ?? "" }

    func headerText(_ name: String) -> String? { header(name).map { String(decoding: Array($0), as: UTF8.self) } }

    var outbound: OutboundMessage? { value.flatMap { try? OutboundMessage(decoding: Array($0)) } }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
