import Foundation
import HeraldApp
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldStore
import HeraldTestSupport
import HeraldWorker
import Logging
import Testing

/// GET `url` with curl; returns the status code and body.
func httpGet(_ url: String) throws -> (status: Int, body: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    process.arguments = ["-s", "-w", "\n%{http_code}", url]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
}

@Suite("Worker /metrics and /health", .serialized)
struct WorkerEndpointsTests {
    @Test(
        "ready once partitions are assigned; /metrics counts events, decisions, outbound, dead letters, lag and purged ledger entries"
    )
    func endpoints() async throws {
        let pipeline = try Pipeline()
        let store = try SQLiteStore(path: ":memory:")
        // Decided longer ago than the ledger's retention (7 days): purged when the worker starts.
        let stale = (0..<3).map { index in
            DecisionRequest(
                key: DecisionKey(
                    eventID: "stale-\(index)",
                    kind: "order.confirmed",
                    recipient: "u-stale",
                    eventTime: nil
                ),
                plan: Policy.defaults.plan(
                    Policy.Input(
                        kind: "order.confirmed",
                        category: "transactional",
                        recipient: "u-stale",
                        deviceCount: 1,
                        preferences: Preferences()
                    ),
                    now: Timestamp(rfc3339: "2026-11-13T08:00:00Z")!
                ),
                decidedAt: Timestamp(rfc3339: "2026-11-13T08:00:00Z")!,
                payload: "{}"
            )
        }
        _ = try await store.decide(stale)
        let worker = try pipeline.worker(store: store, clock: TestClock("2026-11-21T08:00:00Z"))
        let endpoints = try HTTPEndpoints(
            listen: "127.0.0.1:0",
            worker: worker,
            sender: nil,
            logger: Logger(label: "test")
        )
        try await withRunningServices([endpoints]) {
            let base = "http://127.0.0.1:\(await endpoints.port())"
            #expect(try httpGet(base + "/health/live").status == 200)
            #expect(try httpGet(base + "/health/ready").status == 503, "no partitions before the worker runs")
            #expect(try httpGet(base + "/nothing").status == 404)
            try await withRunningServices([worker]) {
                try await eventually("the worker is ready") { try httpGet(base + "/health/ready").status == 200 }
                try await registerExampleUsers(pipeline, store)
                try await eventually("the directory is loaded") {
                    try await store.recipients(exampleUsers.map(\.user)).count == 3
                }
                try await pipeline.produce(
                    orderEvents(0..<30) + [KafkaProducerRecord(topic: "orders.events", value: KafkaBytes("not json"))]
                )
                let expected = [
                    #"herald_events_consumed_total{type="order.confirmed"} 30"#,
                    #"herald_decisions_total{reason="sent"} 30"#, #"herald_outbound_total{provider="apns"} 10"#,
                    #"herald_outbound_total{provider="fcm"} 10"#, #"herald_outbound_total{provider="expo"} 10"#,
                    #"herald_dead_letters_total{code="event.not_json"} 1"#, #"herald_directory_changes_total 9"#,
                    "herald_decisions_purged_total 3",
                    "# TYPE herald_event_processing_seconds histogram",
                    #"herald_consumer_lag{topic="orders.events",partition="0"}"#,
                ]
                // Events are counted when decided, decisions and outbound when built (a moment later, on
                // another core): wait for all of them.
                var metrics = ""
                do {
                    try await eventually("the metrics show every event, decision and outbound message") {
                        metrics = try httpGet(base + "/metrics").body
                        return expected.allSatisfy { metrics.contains($0) }
                    }
                } catch {
                    for line in expected { #expect(metrics.contains(line), "\(line) in\n\(metrics)") }
                    throw error
                }
                // Every consumed message (9 directory changes, 31 events) is timed once its records are acknowledged.
                try await eventually("every message timed") {
                    try httpGet(base + "/metrics").body.contains("herald_event_processing_seconds_count 40")
                }
                // The purged entries are forgotten: deciding them again is not a redelivery.
                #expect(try await store.decide([stale[0]]).map(\.redelivered) == [false])
            }
        }
    }
}
