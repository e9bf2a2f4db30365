import HeraldEvents
import HeraldPolicy
import HeraldTestSupport
import Testing

@testable import HeraldStore

/// Ids that Swift's `==` calls equal (canonically equivalent) and the databases do not: one
/// precomposed, one decomposed. Each store must keep them apart, as their rows are.
private let composed = "jos\u{E9}"
private let decomposed = "jose\u{301}"

@Suite("Store contract: ids are their bytes")
struct OpaqueIDContractTests {
    let noon = at("2026-11-21T12:00:00Z")

    @Test("OpaqueID compares and hashes bytes, where String compares canonical equivalents")
    func opaqueID() {
        #expect(composed == decomposed, "the premise: Swift's String calls them equal")
        #expect(OpaqueID(composed) != OpaqueID(decomposed))
        #expect(Set([OpaqueID(composed), OpaqueID(decomposed), OpaqueID(composed)]).count == 2)
        #expect(OpaqueID("ab") == OpaqueID("a" + "b"))
        #expect(!composed.hasSameBytes(as: decomposed) && composed.hasSameBytes(as: "jos\u{E9}"))
        // A long (heap-allocated) string against a small one of other bytes, and two long ones.
        let long = String(repeating: "x", count: 40)
        #expect(!long.hasSameBytes(as: "x") && long.hasSameBytes(as: String(repeating: "x", count: 40)))
        #expect(OpaqueID(decomposed) < OpaqueID(composed), "by bytes: 0x65 before 0xC3")
        #expect(OpaqueID("ab") < OpaqueID("abc") && !(OpaqueID("abc") < OpaqueID("ab")) && !(OpaqueID("ab") < "ab"))
        #expect(!"ab".hasSameBytes(as: "abc") && !"".hasSameBytes(as: "a") && "".hasSameBytes(as: String()))
        #expect([OpaqueID("b"), "", "ab", "a"].sorted() == ["", "a", "ab", "b"])
    }

    @Test(
        "two users whose ids differ only in their normalization each get their own devices, cached or not",
        arguments: StoreKind.allCases
    )
    func users(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            try await store.apply([
                registered(composed, "phone", token: "t-composed", at: "2026-11-01T10:00:00Z"),
                registered(decomposed, "phone", token: "t-decomposed", at: "2026-11-01T10:00:00Z", provider: .fcm),
                .profileUpdated(userID: decomposed, locale: "en-GB", timeZone: nil, at: at("2026-11-01T10:00:00Z")),
            ])
            // Twice: SQLite reads its records the first time and answers from its cache the second.
            for _ in 0..<2 {
                let inOrder = try await store.recipients(inOrder: [decomposed, composed, decomposed])
                #expect(
                    inOrder.map { $0?.devices.map(\.token) } == [["t-decomposed"], ["t-composed"], ["t-decomposed"]]
                )
                #expect(
                    inOrder.map { $0.map { Array($0.userID.utf8) } }
                        == [decomposed, composed, decomposed].map {
                            Array($0.utf8)
                        }
                )
                #expect(inOrder.map { $0?.locale } == ["en-GB", nil, "en-GB"])
            }
            let found = try await store.recipients([composed, decomposed])
            #expect(found.count == 2)
            #expect(found[OpaqueID(composed)]?.devices.map(\.token) == ["t-composed"])
            #expect(found[OpaqueID(decomposed)]?.devices.map(\.token) == ["t-decomposed"])

            // A change to one leaves the other's cached answer alone, and reaches its own.
            try await store.apply([
                .deviceUnregistered(userID: composed, deviceID: "phone", at: at("2026-11-02T10:00:00Z"))
            ])
            let after = try await store.recipients(inOrder: [composed, decomposed])
            #expect(after[0]?.devices.isEmpty ?? true)
            #expect(after[1]?.devices.map(\.token) == ["t-decomposed"])

            try await store.apply([.userDeleted(userID: decomposed, at: at("2026-11-03T10:00:00Z"))])
            let deletions = try await store.deletions([composed, decomposed])
            #expect(Array(deletions.keys) == [OpaqueID(decomposed)])
            #expect(try await store.recipients(inOrder: [decomposed])[0]?.devices.isEmpty ?? true)
        }
    }

    @Test(
        "device ids and tokens that differ only in their normalization are other devices and other tokens",
        arguments: StoreKind.allCases
    )
    func devicesAndTokens(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            try await store.apply([
                registered("ana", "caf\u{E9}", token: "t1", at: "2026-11-01T10:00:00Z"),
                registered("ana", "cafe\u{301}", token: "t2", at: "2026-11-01T11:00:00Z"),
                registered("ben", "phone", token: "tok\u{E9}n", at: "2026-11-01T10:00:00Z", provider: .fcm),
                // Not the same token: it does not move from ben to cy.
                registered("cy", "phone", token: "toke\u{301}n", at: "2026-11-01T11:00:00Z", provider: .fcm),
            ])
            let found = try await store.recipients(inOrder: ["ana", "ben", "cy"])
            #expect(found[0]?.devices.map(\.token) == ["t1", "t2"])
            #expect(found[1]?.devices.map { Array($0.token.utf8) } == [Array("tok\u{E9}n".utf8)])
            #expect(found[2]?.devices.map { Array($0.token.utf8) } == [Array("toke\u{301}n".utf8)])
            // Invalidating one token leaves the other.
            try await store.apply([
                .tokenInvalidated(provider: .fcm, token: "tok\u{E9}n", at: at("2026-11-02T10:00:00Z"))
            ])
            let after = try await store.recipients(inOrder: ["ben", "cy"])
            #expect(after[0]?.devices.isEmpty ?? true)
            #expect(after[1]?.devices.count == 1)
            // Unregistering one device id leaves the other.
            try await store.apply([
                .deviceUnregistered(userID: "ana", deviceID: "cafe\u{301}", at: at("2026-11-02T10:00:00Z"))
            ])
            #expect(try await store.recipients(inOrder: ["ana"])[0]?.devices.map(\.token) == ["t1"])
        }
    }

    @Test(
        "decisions: such recipients count against windows of their own, and such event ids are other events",
        arguments: StoreKind.allCases
    )
    func decisions(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            // Two messages a minute each (tightMessages), then a digest.
            func message(_ event: String, to recipient: String) -> DecisionRequest {
                request(event, policy: tightMessages, recipient: recipient, now: noon)
            }
            let first = try await store.decide([
                message("m1", to: composed), message("m1", to: decomposed), message("m2", to: composed),
            ])
            #expect(first.map(\.reason) == [.sent, .sent, .sent])
            #expect(first.allSatisfy { !$0.redelivered })
            let second = try await store.decide([message("m2", to: decomposed), message("m3", to: composed)])
            #expect(second.map(\.reason) == [.sent, .throttledDigested])
            // An event id that differs only in its normalization is another event for the ledger.
            let events = try await store.decide([message("caf\u{E9}", to: "ana"), message("cafe\u{301}", to: "ana")])
            #expect(events.map(\.reason) == [.sent, .sent])
            #expect(events.allSatisfy { !$0.redelivered })
            // Each is still recognised when it comes again.
            let again = try await store.decide([message("cafe\u{301}", to: "ana"), message("caf\u{E9}", to: "ana")])
            #expect(again.allSatisfy { $0.redelivered })
        }
    }
}
