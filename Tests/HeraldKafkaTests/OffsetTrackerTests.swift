import Testing

@testable import HeraldKafka

@Suite("Offset tracker")
struct OffsetTrackerTests {
    @Test("finishing 0, 1 and 3 makes 2 the next offset to commit, not 4")
    func contiguous() {
        var tracker = OffsetTracker()
        for offset: Int64 in 0...3 { tracker.handedOut(offset) }
        let advanced0 = tracker.markDone(0)
        #expect(advanced0)
        let advanced1 = tracker.markDone(1)
        #expect(advanced1)
        let advanced3 = tracker.markDone(3)
        #expect(!advanced3)
        #expect(tracker.committable == 2)
        #expect(tracker.outstanding == 1)
        let advanced2 = tracker.markDone(2)
        #expect(advanced2)
        #expect(tracker.committable == 4)
        #expect(tracker.outstanding == 0)
    }

    @Test("a released offset is no longer outstanding, is never committed past, and marking it done changes nothing")
    func released() {
        var tracker = OffsetTracker()
        for offset: Int64 in 0...3 { tracker.handedOut(offset) }
        tracker.markDone(0)
        tracker.release(1)
        tracker.release(1)
        #expect(tracker.outstanding == 2)
        tracker.markDone(2)
        tracker.markDone(3)
        #expect(tracker.outstanding == 0)
        #expect(tracker.committable == 1, "the next owner reads 1 again")
        let advanced = tracker.markDone(1)
        #expect(!advanced)
        #expect(tracker.committable == 1)
        #expect(tracker.outstanding == 0)
    }

    @Test("gaps in offsets (compaction, transaction markers) do not block commits")
    func gaps() {
        var tracker = OffsetTracker()
        for offset: Int64 in [10, 11, 15, 20] { tracker.handedOut(offset) }
        tracker.markDone(15)
        tracker.markDone(10)
        #expect(tracker.committable == 11)
        tracker.markDone(11)
        #expect(tracker.committable == 16)
        tracker.markDone(20)
        #expect(tracker.committable == 21)
    }

    @Test("marking twice or marking an unknown offset changes nothing")
    func idempotent() {
        var tracker = OffsetTracker()
        tracker.handedOut(0)
        tracker.handedOut(1)
        let advanced0 = tracker.markDone(0)
        #expect(advanced0)
        let again = tracker.markDone(0)
        #expect(!again)
        let advanced7 = tracker.markDone(7)
        #expect(!advanced7)
        #expect(tracker.outstanding == 1)
        #expect(tracker.committable == 1)
    }

    @Test("a redelivered offset below the committable one is not tracked again")
    func staleHandout() {
        var tracker = OffsetTracker()
        tracker.handedOut(5)
        tracker.markDone(5)
        tracker.handedOut(3)
        #expect(tracker.outstanding == 0)
        #expect(tracker.committable == 6)
    }
}
