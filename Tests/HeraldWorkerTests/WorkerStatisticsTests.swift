import Testing

@testable import HeraldWorker

@Suite("Worker statistics")
struct WorkerStatisticsTests {
    @Test("the first batch's arrival is kept; later batches do not move it")
    func firstBatchReceived() async throws {
        let statistics = WorkerStatistics()
        #expect(statistics.firstBatchReceived == nil)
        let before = ContinuousClock.now
        statistics.noteBatchReceived()
        let first = try #require(statistics.firstBatchReceived)
        #expect(first >= before && first <= .now)
        try await Task.sleep(for: .milliseconds(5))
        statistics.noteBatchReceived()
        #expect(statistics.firstBatchReceived == first)
    }
}
