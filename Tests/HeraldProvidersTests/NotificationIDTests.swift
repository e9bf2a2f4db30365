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

    @Test("two devices' ids made together are each the id made alone, whatever their lengths")
    func pairs() {
        let devices = [
            "", "a", "token-a", "token-b", String(repeating: "0", count: 64),
            "fcm-35-1:APA91bBenchmarkRegistrationToken", "ExponentPushToken[bench-35-2]", "użytkownik-😀",
        ]
        for (event, kind, recipient) in [("evt-1", "order.confirmed", "u-2048"), ("", "", ""), ("ünïcødé", "k", "u")] {
            for first in devices {
                for second in devices {
                    let pair = NotificationID.make(
                        eventID: event,
                        kind: kind,
                        recipient: recipient,
                        devices: first,
                        second
                    )
                    #expect(
                        pair.0 == NotificationID.make(eventID: event, kind: kind, recipient: recipient, device: first)
                    )
                    #expect(
                        pair.1 == NotificationID.make(eventID: event, kind: kind, recipient: recipient, device: second)
                    )
                }
            }
        }
        // A pinned id, made in a pair: the same as every earlier version made it alone.
        let pinned = NotificationID.make(
            eventID: "evt-1",
            kind: "order.confirmed",
            recipient: "u-2048",
            devices: "token-a",
            String(repeating: "ab", count: 40)
        )
        #expect(pinned.0 == "81005220D4DADF4D6076B419A331A774")
    }

    @Test("hex digits written eight at a time are each digit's own, for every nibble")
    func hexDigits() {
        func reference(_ value: UInt64) -> String {
            let digits = Array("0123456789ABCDEF")
            return String((0..<16).map { digits[Int(value >> UInt64((15 - $0) * 4) & 0xF)] })
        }
        var values: [UInt64] = [0, .max, 0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210, 0x9A9A_9A9A_0F0F_F0F0]
        var state: UInt64 = 0x1234_5678
        for _ in 0..<1000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            values.append(state)
        }
        for value in values {
            #expect(StableHash.hexString(value) == reference(value))
            #expect(StableHash.hexString(value, ~value) == reference(value) + reference(~value))
        }
        // The UUID's layout: 8-4-4-4-12 upper-case digits, version 8, the RFC 4122 variant.
        let uuid = StableHash.uuid(from: "any text")
        #expect(uuid.split(separator: "-").map(\.count) == [8, 4, 4, 4, 12])
        #expect(Array(uuid)[14] == "8")
        #expect("89AB".contains(Array(uuid)[19]))
    }
}
