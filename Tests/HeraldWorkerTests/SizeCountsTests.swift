import Testing

@testable import HeraldWorker

/// Payload size percentiles are exact: they must agree with sorting every size, for sizes counted
/// by position and for the rare ones past the dense range, alone and merged.
@Suite("Payload size counts")
struct SizeCountsTests {
    /// The size at `fraction` of `sizes`, by sorting them all.
    func reference(_ sizes: [Int], _ fraction: Double) -> Int {
        let sorted = sizes.sorted()
        guard !sorted.isEmpty else { return 0 }
        let rank = max(Int((fraction * Double(sorted.count)).rounded(.up)), 1)
        return sorted[min(rank, sorted.count) - 1]
    }

    var fractions: [Double] { [0, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1] }

    @Test("percentiles match sorting every size, past the dense range too")
    func percentiles() {
        var generator = SystemRandomNumberGenerator()
        var sizes = (0..<5_000).map { _ in Int.random(in: 0...4_096, using: &generator) }
        sizes += [SizeCounts.denseLimit - 1, SizeCounts.denseLimit, 200_000, 200_000, 1_000_000]
        sizes.shuffle(using: &generator)
        var counts = SizeCounts()
        for size in sizes { counts.add(size) }
        #expect(counts.total == sizes.count)
        for fraction in fractions {
            #expect(counts.percentile(fraction) == reference(sizes, fraction), "at \(fraction)")
        }
        #expect(counts.percentile(1) == 1_000_000)
        #expect(SizeCounts().percentile(0.5) == 0)
    }

    @Test("merging counts of different ranges is counting all their sizes in one")
    func merge() {
        let short = [3, 3, 10, 70_000]
        let long = [0, 4_000, 4_000, 9_999, 65_536, 70_000, 70_001]
        var left = SizeCounts()
        for size in short { left.add(size) }
        var right = SizeCounts()
        for size in long { right.add(size) }
        var merged = left
        merged.merge(right)
        var reversed = right
        reversed.merge(left)
        #expect(merged.total == short.count + long.count)
        for fraction in fractions {
            let expected = reference(short + long, fraction)
            #expect(merged.percentile(fraction) == expected, "at \(fraction)")
            #expect(reversed.percentile(fraction) == expected, "at \(fraction), merged the other way")
        }
        var empty = SizeCounts()
        empty.merge(SizeCounts())
        #expect(empty.total == 0 && empty.percentile(0.99) == 0)
    }
}
