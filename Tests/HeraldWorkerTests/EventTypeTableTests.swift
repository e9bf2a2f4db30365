import HeraldCatalog
import Testing

@testable import HeraldWorker

/// The worker counts a batch's events by type and finds their kinds through a short table: the
/// counts and kinds must be what the counters' and the catalog's dictionaries give, also for a
/// batch with more types than the table keeps.
@Suite("Event type table")
struct EventTypeTableTests {
    @Test("every event is counted under its type and gets its type's kinds, within and past the table's capacity")
    func countsAndKinds() {
        let known = Array(Set(exampleCatalog.kinds.flatMap(\.eventTypes))).sorted()
        let invented = (0..<(EventTypeTable.capacity + 10)).map { "com.example.invented.\($0)" }
        var generator = SystemRandomNumberGenerator()
        var stream: [String] = []
        for round in 1...3 { stream += Array(repeating: known + invented, count: round).flatMap { $0 } }
        stream.shuffle(using: &generator)

        var table = EventTypeTable()
        var counters = WorkerStatistics.Counters()
        var expected: [String: Int] = [:]
        for type in stream {
            let kinds = table.count(type, in: exampleCatalog, counters: &counters)
            #expect(kinds.map(\.name) == exampleCatalog.kinds(forEventType: type).map(\.name), "\(type)")
            expected[type, default: 0] += 1
        }
        table.fold(into: &counters)
        #expect(counters.eventsByType == expected)
        #expect(known.allSatisfy { !exampleCatalog.kinds(forEventType: $0).isEmpty })
        #expect(invented.allSatisfy { exampleCatalog.kinds(forEventType: $0).isEmpty })
    }

    @Test("the worker's counters name at most 200 event types, none longer than 128 bytes; the rest are (other)")
    func boundedLabels() {
        typealias Counters = WorkerStatistics.Counters
        var total = Counters()
        var batch = Counters()
        batch.eventsByType = ["order.confirmed": 2, String(repeating: "x", count: 129): 1]
        total.add(batch)
        #expect(total.eventsByType == ["order.confirmed": 2, Counters.otherEventTypes: 1])
        for round in 0..<3 {
            batch.eventsByType = Dictionary(uniqueKeysWithValues: (0..<150).map { ("invented.\(round).\($0)", 1) })
            batch.eventsByType["order.confirmed"] = 1
            total.add(batch)
        }
        #expect(total.eventsByType.count == Counters.maximumEventTypes)
        #expect(total.eventsByType["order.confirmed"] == 5, "a type already named keeps counting under its name")
        #expect(total.eventsByType.values.reduce(0, +) == 3 + 3 * 151)
        #expect(total.eventsByType.keys.allSatisfy { $0.utf8.count <= Counters.maximumEventTypeBytes })
    }
}
