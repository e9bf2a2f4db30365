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
}
