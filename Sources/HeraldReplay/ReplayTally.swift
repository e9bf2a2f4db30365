import HeraldEvents
import HeraldKafka
import HeraldWorker

/// What a replay's report counts beyond the worker's own counters, gathered from the decision and
/// dead-letter records the worker's code produced. Tallies of consecutive chunks are gathered
/// concurrently and merged in order, so the report is the same whatever the parallelism.
struct ReplayTally: Sendable {
    var decisionsByReason: [String: Int] = [:]
    /// Throttled decisions by hashed recipient.
    var throttledByRecipient: [String: Int] = [:]
    var deadLetters: [String: DeadLetterSummary] = [:]

    struct DeadLetterSummary: Sendable {
        var count = 0
        /// The first few, in log order: where to look.
        var examples: [String] = []
    }

    static let examplesPerCode = 5

    init() {}

    init(_ records: [KafkaProducerRecord], topics: WorkerTopics) {
        let parser = JSONParser()
        for record in records {
            guard let value = record.value else { continue }
            if record.topic == topics.decisions {
                guard case .object(let decision)? = try? parser.parse(value) else { continue }
                let reason = decision["reason"]?.stringValue ?? "?"
                decisionsByReason[reason, default: 0] += 1
                if reason.hasPrefix("throttled."), let recipient = decision["recipient"]?.stringValue {
                    throttledByRecipient[Redact.user(recipient), default: 0] += 1
                }
            } else if record.topic == topics.eventsDeadLetter {
                let code = record.headers.first(named: HeraldHeader.errorCode)?.string ?? "?"
                var summary = deadLetters[code] ?? DeadLetterSummary()
                summary.count += 1
                if summary.examples.count < Self.examplesPerCode { summary.examples.append(Self.place(of: record)) }
                deadLetters[code] = summary
            }
        }
    }

    /// `topic[partition]@offset: code: message`, as a dead letter's headers name its original.
    private static func place(of record: KafkaProducerRecord) -> String {
        func header(_ name: String) -> String { record.headers.first(named: name)?.string ?? "?" }
        return "\(header(HeraldHeader.originalTopic))[\(header(HeraldHeader.originalPartition))]"
            + "@\(header(HeraldHeader.originalOffset)): \(header(HeraldHeader.errorMessage))"
    }

    mutating func merge(_ other: ReplayTally) {
        decisionsByReason.merge(other.decisionsByReason, uniquingKeysWith: +)
        throttledByRecipient.merge(other.throttledByRecipient, uniquingKeysWith: +)
        for (code, summary) in other.deadLetters {
            var merged = deadLetters[code] ?? DeadLetterSummary()
            merged.count += summary.count
            merged.examples += summary.examples.prefix(Self.examplesPerCode - merged.examples.count)
            deadLetters[code] = merged
        }
    }
}
