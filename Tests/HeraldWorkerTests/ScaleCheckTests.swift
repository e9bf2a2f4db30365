import Foundation
import HeraldCatalog
import HeraldKafka
import HeraldPolicy
import HeraldTestSupport
import Testing

@testable import HeraldApp

/// `herald bench scale`'s throttle check, on decision records written out by hand.
@Suite("Scale check: throttle windows")
struct ScaleCheckTests {
    let scratch = ScratchDirectory()

    /// The check over the example catalog with its messages limit at 2 per 10 s, as the benchmark
    /// runs it; the catalog copied to the scratch directory's `copy`.
    func observations(copy: String = "catalog") throws -> ScaleObservations {
        let copy = URL(fileURLWithPath: scratch.path).appendingPathComponent(copy)
        let directory = try ScaleBenchmark.shortenedCatalog(
            from: "\(ScaleOutTests.repositoryRoot)/catalog",
            into: copy,
            limit: 2,
            window: .seconds(10)
        )
        let catalog = try CatalogLoader.load(directory: directory).catalog
        return ScaleObservations(policy: Policy(catalog: catalog), catalog: catalog)
    }

    /// A `herald.decisions` record of a chat message to one user, decided at `time` (seconds past
    /// 12:00:00); a redelivery with what was recorded and, if given, when (`recordedAt`).
    func record(_ event: String, at time: Int, duplicateOf recorded: Int?? = nil) -> KafkaMessage {
        func timestamp(_ seconds: Int) -> String { "2026-11-21T12:00:\(seconds < 10 ? "0" : "")\(seconds).000Z" }
        var json = #"{"eventId":"\#(event)","kind":"message.received","recipient":"u-1","#
        if let recorded {
            json += #""reason":"duplicate","recorded":"sent","decidedAt":"\#(timestamp(time))""#
            if let recordedAt = recorded { json += #","recordedAt":"\#(timestamp(recordedAt))""# }
        } else {
            json += #""reason":"sent","decidedAt":"\#(timestamp(time))""#
        }
        return KafkaMessage(
            topic: "herald.decisions",
            partition: 0,
            offset: 0,
            key: nil,
            value: KafkaBytes(Array((json + "}").utf8))
        )
    }

    @Test(
        "a redelivery whose first record was never written counts in the window it was first decided in, not the redelivery's"
    )
    func redeliveryCountsWhereItWasDecided() throws {
        let observations = try observations()
        // e1 was decided at 12:00:01 by a worker that died before writing its record; redelivered
        // at 12:00:11, in the next window, where e3 and e4 use up the limit of 2.
        observations.record([
            record("e1", at: 11, duplicateOf: 1), record("e2", at: 2), record("e3", at: 12), record("e4", at: 13),
        ])
        let result = observations.verify { _ in 1 }
        #expect(result.throttleWindows == 2)
        #expect(result.throttleViolations == 0)
    }

    @Test("three notifications sent in one window are over a limit of 2; so is a redelivery without its time in it")
    func overTheLimit() throws {
        let crowded = try observations()
        crowded.record([record("e1", at: 1), record("e2", at: 2), record("e3", at: 3)])
        #expect(crowded.verify { _ in 1 }.throttleViolations == 1)

        // A record without recordedAt (from a worker before it was written) counts where it says
        // it was decided.
        let older = try observations(copy: "older")
        older.record([record("e1", at: 11, duplicateOf: .some(nil)), record("e3", at: 12), record("e4", at: 13)])
        #expect(older.verify { _ in 1 }.throttleViolations == 1)
    }
}
