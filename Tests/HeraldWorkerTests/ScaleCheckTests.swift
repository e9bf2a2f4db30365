import Foundation
import HeraldCatalog
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldTestSupport
import Testing

@testable import HeraldApp

/// `herald bench scale`'s throttle check, on decision records written out by hand.
@Suite("Scale check: throttle and digest windows")
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

    /// How a record's notification was decided.
    enum Decided {
        case sent
        /// A redelivery of one sent before, at `firstAt` seconds past 12:00:00 when the record says
        /// (`recordedAt`), as a worker before that field does not.
        case redelivered(firstAt: Int?)
    }

    /// A `herald.decisions` record of a chat message to one user, decided at `time` (seconds past
    /// 12:00:00).
    func record(_ event: String, at time: Int, _ decided: Decided = .sent) -> KafkaMessage {
        func timestamp(_ seconds: Int) -> String { "2026-11-21T12:00:\(seconds < 10 ? "0" : "")\(seconds).000Z" }
        var json = #"{"eventId":"\#(event)","kind":"message.received","recipient":"u-1","#
        switch decided {
        case .sent:
            json += #""reason":"sent","decidedAt":"\#(timestamp(time))""#
        case .redelivered(let firstAt):
            json += #""reason":"duplicate","recorded":"sent","decidedAt":"\#(timestamp(time))""#
            if let firstAt { json += #","recordedAt":"\#(timestamp(firstAt))""# }
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
            record("e1", at: 11, .redelivered(firstAt: 1)), record("e2", at: 2),
            record("e3", at: 12), record("e4", at: 13),
        ])
        let result = observations.verify { _ in 1 }
        #expect(result.throttleWindows == 2)
        #expect(result.throttleViolations == 0)
        #expect(result.failures.isEmpty, "\(result.failures)")
    }

    @Test("three notifications sent in one window are over a limit of 2; so is a redelivery without its time in it")
    func overTheLimit() throws {
        let crowded = try observations()
        crowded.record([record("e1", at: 1), record("e2", at: 2), record("e3", at: 3)])
        let result = crowded.verify { _ in 1 }
        #expect(result.throttleViolations == 1)
        // The report names the window and what was counted in it.
        let window = Timestamp(rfc3339: "2026-11-21T12:00:00Z")!.epochMilliseconds
        #expect(
            result.failures == [
                "window u-1|messages|\(window) over its limit of 2: e1 decided 2026-11-21T12:00:01.000Z; "
                    + "e2 decided 2026-11-21T12:00:02.000Z; e3 decided 2026-11-21T12:00:03.000Z"
            ]
        )

        // A record without recordedAt (from a worker before it was written) counts where it says
        // it was decided.
        let older = try observations(copy: "older")
        older.record([record("e1", at: 11, .redelivered(firstAt: nil)), record("e3", at: 12), record("e4", at: 13)])
        let olderResult = older.verify { _ in 1 }
        #expect(olderResult.throttleViolations == 1)
        #expect(
            olderResult.failures.first?.contains(
                "e1 decided 2026-11-21T12:00:11.000Z (a redelivery; first decided at a time not recorded)"
            ) == true,
            "\(olderResult.failures)"
        )
    }

    @Test("a digested window without its digest is named in the report")
    func digests() throws {
        let observations = try observations()
        let start = Timestamp(rfc3339: "2026-11-21T12:00:00Z")!.epochMilliseconds
        // Two digested in the window of 12:00:00 (due when it ends, and the grace after), one in
        // that of 12:00:10.
        func digested(_ event: String, at seconds: Int64, windowStart: Int64) -> KafkaMessage {
            let due = Timestamp(epochMilliseconds: windowStart + 10_000 + Policy.digestGrace.milliseconds)
            let decided = Timestamp(epochMilliseconds: start + seconds * 1000)
            let json =
                #"{"eventId":"\#(event)","kind":"message.received","recipient":"u-1","reason":"throttled.digested","#
                + #""dueAt":"\#(due)","decidedAt":"\#(decided)"}"#
            return KafkaMessage(
                topic: "herald.decisions",
                partition: 0,
                offset: 0,
                key: nil,
                value: KafkaBytes(Array(json.utf8))
            )
        }
        observations.record([
            digested("e3", at: 3, windowStart: start), digested("e4", at: 4, windowStart: start),
            digested("e13", at: 13, windowStart: start + 10_000),
        ])
        // No digest was sent for either window.
        let result = observations.verify { _ in 1 }
        #expect(result.digestsExpected == 2 && result.digestsMissing == 2 && result.digestsDuplicated == 0)
        #expect(
            result.failures == [
                "no digest for window u-1|messages|\(start)", "no digest for window u-1|messages|\(start + 10_000)",
            ],
            "\(result.failures)"
        )
    }
}
