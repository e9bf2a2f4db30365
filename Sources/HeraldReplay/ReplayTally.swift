import HeraldEvents
import HeraldKafka
import HeraldWorker

/// What a replay's report needs beyond the worker's own counters (which count decisions, outbound
/// messages and dead letters): who was throttled, and where the dead letters came from. Gathered
/// from the records the worker's code produced; tallies of consecutive chunks are gathered
/// concurrently and merged in order, so the report is the same whatever the parallelism.
struct ReplayTally: Sendable {
    /// Throttled decisions by hashed recipient.
    var throttledByRecipient: [String: Int] = [:]
    /// The first few dead letters of each code, in log order: where to look.
    var deadLetterExamples: [String: [String]] = [:]

    static let examplesPerCode = 5

    init() {}

    init(_ records: [KafkaProducerRecord], topics: WorkerTopics) {
        let parser = JSONParser()
        for record in records {
            guard let value = record.value else { continue }
            if record.topic == topics.decisions {
                // Only throttled decisions are read back: there is one record per decision, and
                // most are not throttled.
                guard Self.isThrottled(value), case .object(let decision)? = try? parser.parse(value),
                    let recipient = decision["recipient"]?.stringValue
                else { continue }
                throttledByRecipient[Redact.user(recipient), default: 0] += 1
            } else if record.topic == topics.eventsDeadLetter {
                let code = record.headers.first(named: HeraldHeader.errorCode)?.string ?? "?"
                if deadLetterExamples[code, default: []].count < Self.examplesPerCode {
                    deadLetterExamples[code, default: []].append(Self.place(of: record))
                }
            }
        }
    }

    /// Whether a decision record (``EventProcessor``'s compact JSON) has a `throttled.*` reason; a
    /// string value cannot hold the unescaped quotes searched for.
    static func isThrottled(_ value: KafkaBytes) -> Bool {
        value.withUnsafeBytes { bytes in
            let needle = throttledReason
            guard bytes.count >= needle.count else { return false }
            for start in 0...(bytes.count - needle.count) where bytes[start] == needle[0] {
                if needle.indices.allSatisfy({ bytes[start + $0] == needle[$0] }) { return true }
            }
            return false
        }
    }

    private static let throttledReason = Array(#""reason":"throttled."#.utf8)

    /// `topic[partition]@offset: message`, as a dead letter's headers name its original.
    private static func place(of record: KafkaProducerRecord) -> String {
        func header(_ name: String) -> String { record.headers.first(named: name)?.string ?? "?" }
        return "\(header(HeraldHeader.originalTopic))[\(header(HeraldHeader.originalPartition))]"
            + "@\(header(HeraldHeader.originalOffset)): \(header(HeraldHeader.errorMessage))"
    }

    mutating func merge(_ other: ReplayTally) {
        throttledByRecipient.merge(other.throttledByRecipient, uniquingKeysWith: +)
        for (code, examples) in other.deadLetterExamples {
            let room = Self.examplesPerCode - deadLetterExamples[code, default: []].count
            deadLetterExamples[code, default: []] += examples.prefix(room)
        }
    }
}
