import HeraldKafka
import HeraldWorker

/// What a replay's report needs beyond the worker's own counters (which count decisions, outbound
/// messages and dead letters): who was throttled, and where the dead letters came from. Gathered
/// from what the worker's code produced; tallies of consecutive chunks are gathered concurrently
/// and merged in order, so the report is the same whatever the parallelism.
struct ReplayTally: Sendable {
    /// Throttled decisions by hashed recipient, from ``ThrottledCounts`` (counts: the same whatever
    /// order the build tasks told them in).
    var throttledByRecipient: [String: Int] = [:]
    /// The first few dead letters of each code, in log order: where to look.
    var deadLetterExamples: [String: [String]] = [:]

    static let examplesPerCode = 5

    init() {}

    init(_ records: [KafkaProducerRecord], topics: WorkerTopics) {
        for record in records where record.topic == topics.eventsDeadLetter {
            let code = record.headers.first(named: HeraldHeader.errorCode)?.string ?? "?"
            if deadLetterExamples[code, default: []].count < Self.examplesPerCode {
                deadLetterExamples[code, default: []].append(Self.place(of: record))
            }
        }
    }

    /// `topic[partition]@offset: message`, as a dead letter's headers name its original.
    private static func place(of record: KafkaProducerRecord) -> String {
        func header(_ name: String) -> String { record.headers.first(named: name)?.string ?? "?" }
        return "\(header(HeraldHeader.originalTopic))[\(header(HeraldHeader.originalPartition))]"
            + "@\(header(HeraldHeader.originalOffset)): \(header(HeraldHeader.errorMessage))"
    }

    mutating func merge(_ other: ReplayTally) {
        for (code, examples) in other.deadLetterExamples {
            let room = Self.examplesPerCode - deadLetterExamples[code, default: []].count
            deadLetterExamples[code, default: []] += examples.prefix(room)
        }
    }
}
