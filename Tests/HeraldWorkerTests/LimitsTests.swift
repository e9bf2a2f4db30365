import HeraldCatalog
import HeraldEvents
import HeraldPolicy
import Testing

/// Limits set in different modules that must agree: the store contract tests decide the longest
/// keys these allow (`DecisionContractTests.longestKeys`).
@Suite("Limits")
struct LimitsTests {
    @Test("an event's recipient is bounded as the directory bounds user ids; event ids are shorter still")
    func keys() {
        #expect(Renderer.maximumRecipientBytes == DirectoryEvent.maximumValueBytes)
        #expect(EventDecoder.maximumIDBytes <= DirectoryEvent.maximumValueBytes)
    }
}
