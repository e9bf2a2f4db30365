import Testing

@testable import HeraldProviders

@Suite("Notification ids")
struct NotificationIDTests {
    /// Ids are stored in the sender's delivery ledger and compared across versions (a rolling
    /// upgrade redelivers what the old version built): they must never change.
    @Test(
        "ids and APNs ids are the same as every earlier version made them",
        arguments: [
            (
                "evt-1", "order.confirmed", "u-2048", "token-a", "81005220D4DADF4D6076B419A331A774",
                "6F9D3AA4-4579-8CFA-A0CE-B8D3E04A0B3D"
            ),
            ("", "", "", "", "8F3E7418D31FE7B4122128A98DEAB4E0", "A238DCB5-0630-8606-9D77-1CAD06E6A45D"),
            (
                "ünïcødé-😀", "message.received", "użytkownik", String(repeating: "ab", count: 40),
                "C0B4AD593322E1C51C74F78D90DFFB40", "237817AF-7A00-8EC4-AA32-A0B0245AB549"
            ),
        ]
    )
    func stable(_ event: String, _ kind: String, _ recipient: String, _ device: String, _ id: String, _ apnsID: String)
    {
        let made = NotificationID.make(eventID: event, kind: kind, recipient: recipient, device: device)
        #expect(made == id)
        #expect(StableHash.uuid(from: made) == apnsID)
    }
}
