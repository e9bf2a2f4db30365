import HeraldWorker
import Testing

@Suite("Log sampling")
struct LogSamplerTests {
    @Test("a few lines per kind and interval; the first line after them says how many were left out")
    func sampling() {
        let sampler = LogSampler(limit: 3, interval: .seconds(10))
        let start = ContinuousClock.now
        let first = (0..<5).map { _ in sampler.admit("event.not_json", now: start) }
        #expect(first == [0, 0, 0, nil, nil])
        #expect(sampler.admit("event.bad_time", now: start) == 0, "each kind has its own allowance")
        #expect(sampler.admit("event.not_json", now: start + .seconds(9)) == nil)
        // A new interval: the three left out are counted on the first line let through.
        let next = (0..<4).map { _ in sampler.admit("event.not_json", now: start + .seconds(10)) }
        #expect(next == [3, 0, 0, nil])
        #expect(sampler.admit("event.not_json", now: start + .seconds(20)) == 1)
    }

    @Test("the count is added to a line's metadata only when lines were left out")
    func metadata() {
        #expect(LogSampler.metadata(0, ["code": "x"]) == ["code": "x"])
        #expect(LogSampler.metadata(7, ["code": "x"]) == ["code": "x", "suppressed": "7"])
    }

    @Test("past 256 kinds, new kinds share one allowance")
    func manyKinds() {
        let sampler = LogSampler(limit: 3, interval: .seconds(10))
        let start = ContinuousClock.now
        for kind in 0..<LogSampler.maximumKinds { #expect(sampler.admit("apns.reason-\(kind)", now: start) == 0) }
        let more = (0..<4).map { sampler.admit("apns.new-\($0)", now: start) }
        #expect(more == [0, 0, 0, nil])
        #expect(sampler.admit("apns.reason-0", now: start) == 0, "a kind already kept keeps its own")
    }
}

@Suite("Metric label values")
struct MetricLabelsTests {
    @Test("at most the limit of values, none longer than the most bytes; the rest counted as (other)")
    func bounded() {
        var total: [String: Int] = [:]
        MetricLabels.add(["a": 1, String(repeating: "b", count: 9): 2], into: &total, limit: 3, maximumBytes: 8)
        #expect(total == ["a": 1, MetricLabels.other: 2])
        MetricLabels.add(["c": 1], into: &total, limit: 4, maximumBytes: 8)
        MetricLabels.add(["d": 1, "a": 5], into: &total, limit: 4, maximumBytes: 8)
        #expect(total == ["a": 6, "c": 1, "d": 1, MetricLabels.other: 2], "(other) has its place within the limit")
        MetricLabels.add(["e": 1], into: &total, limit: 4, maximumBytes: 8)
        #expect(total[MetricLabels.other] == 3 && total.count == 4)
    }
}
