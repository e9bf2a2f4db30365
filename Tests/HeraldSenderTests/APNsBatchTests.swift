import HeraldEvents
import HeraldSimulator
import HeraldTestSupport
import HeraldWorker
import NIOHPACK
import Testing

@testable import HeraldSender

/// The `frames` transport sends a key's calls in batches, one trip to a connection's event loop
/// each: every call must still get its own answer, in its own place.
@Suite("APNs calls in batches over frame connections")
struct APNsBatchTests {
    /// Messages with distinct tokens and ids; every third goes to the sandbox host.
    static func messages(_ count: Int, prefix: String) throws -> [OutboundMessage] {
        try (0..<count).map {
            try SimulatorFixture.message(
                .apns,
                token: ProviderAnswerTests.apnsToken($0 + 1),
                id: "\(prefix)-\($0)",
                sandbox: $0 % 3 == 0
            )
        }
    }

    static func apnsID(_ message: OutboundMessage) -> String {
        message.request.headers.first { $0.name == "apns-id" }!.value
    }

    @Test("each call of a batch gets its own answer in its own place, with the time it took")
    func answersInPlace() async throws {
        try await SimulatorFixture.with(frames: true) { fixture in
            let messages = try Self.messages(150, prefix: "b")
            // Every tenth token is unregistered, every seventh throttled: scattered through the batches.
            for index in messages.indices where index % 10 == 4 {
                fixture.simulator.script(token: messages[index].token, .init(status: 410, reason: "Unregistered"))
            }
            for index in messages.indices where index % 7 == 2 && index % 10 != 4 {
                fixture.simulator.script(
                    token: messages[index].token,
                    .init(status: 429, reason: "TooManyRequests", retryAfterSeconds: 5)
                )
            }
            // More calls than one batch carries: the fixture allows 32 in flight, so batches of 8.
            #expect(fixture.apns.framesBatchSize == 8)
            let calls = await fixture.apns.send(messages)
            #expect(calls.count == messages.count)
            for (index, (message, call)) in zip(messages, calls).enumerated() {
                let accepted = fixture.simulator.acceptedCount(id: Self.apnsID(message))
                if index % 10 == 4 {
                    #expect(call.outcome.class == .invalidToken, "\(index)")
                    #expect(call.outcome.reason?.code == "apns.Unregistered")
                    #expect(accepted == 0)
                } else if index % 7 == 2 {
                    #expect(
                        call.outcome
                            == .retry(
                                .init("apns.TooManyRequests", "APNs answered 429 TooManyRequests"),
                                after: .seconds(5)
                            ),
                        "\(index)"
                    )
                    #expect(accepted == 0)
                } else {
                    #expect(call.outcome == .delivered(), "\(index)")
                    #expect(accepted == 1, "\(index)")
                }
                #expect(call.seconds > 0 && call.seconds < SimulatorFixture.requestTimeout.seconds)
            }
            #expect(
                fixture.simulator.statistics.accepted == 150 - 15 - calls.filter { $0.outcome.class == .retry }.count
            )
        }
    }

    @Test("a frame request carries the provider token and the message's headers; apns-id stays out of HPACK's table")
    func frameRequestHeaders() throws {
        let message = try SimulatorFixture.message(.apns, token: ProviderAnswerTests.apnsToken(1), id: "h-1")
        var block = HPACKHeaders()
        APNsClient.addHeaders(of: message.request, authorization: "bearer provider-token", to: &block)
        let headers = block.map { (name: $0.name, value: $0.value, indexing: $0.indexable) }
        #expect(headers.first?.name == "authorization" && headers.first?.value == "bearer provider-token")
        #expect(headers.first?.indexing == .indexable, "the token is the same on every request: one index byte")
        #expect(headers.dropFirst().map(\.name) == message.request.headers.map(\.name))
        #expect(headers.dropFirst().map(\.value) == message.request.headers.map(\.value))
        let apnsID = try #require(headers.first { $0.name == "apns-id" })
        #expect(apnsID.indexing == .nonIndexable)
        #expect(headers.filter { $0.name != "apns-id" }.allSatisfy { $0.indexing == .indexable })
    }

    @Test("an expired provider token refused a batch: signed again once, and only the refused calls go again")
    func expiredTokenInABatch() async throws {
        let simulatorClock = TestClock("2026-11-22T12:00:00Z")
        let senderClock = TestClock("2026-11-22T12:00:00Z")
        try await SimulatorFixture.with(simulatorClock: simulatorClock, senderClock: senderClock, frames: true) {
            fixture in
            let first = try Self.messages(5, prefix: "early")
            #expect(await fixture.apns.send(first).allSatisfy { $0.outcome == .delivered() })
            let issued = try #require(fixture.apns.providerToken(for: SimulatorFixture.bundleID)?.issuedAt)
            // Past APNs' hour, short of the sender's 50 minutes: APNs refuses the cached token.
            simulatorClock.advance(by: .seconds(61 * 60))
            senderClock.advance(by: .seconds(45 * 60))
            let messages = try Self.messages(40, prefix: "late")
            let calls = await fixture.apns.send(messages)
            #expect(calls.allSatisfy { $0.outcome == .delivered() })
            let reissued = try #require(fixture.apns.providerToken(for: SimulatorFixture.bundleID)?.issuedAt)
            #expect(reissued != issued)
            #expect(reissued == senderClock.now())
            for message in messages + first { #expect(fixture.simulator.acceptedCount(id: Self.apnsID(message)) == 1) }
        }
    }

    @Test("the permits a batch takes come back, and a batch larger than the free permits waits its turn")
    func limiterPermits() async throws {
        let limiter = ConcurrencyLimiter(limit: 8)
        await limiter.acquire(6)
        let second = Task { await limiter.acquire(4) }
        #expect(await eventually { limiter.waiting == 1 })
        // A single permit asked for after the batch of four waits behind it, though two are free.
        let single = Task {
            await limiter.acquire()
            return ContinuousClock.now
        }
        #expect(await eventually { limiter.waiting == 2 })
        let released = ContinuousClock.now
        limiter.release(6)
        await second.value
        let singleAt = await single.value
        #expect(singleAt >= released)
        limiter.release(4)
        limiter.release()
        // Everything back: the whole limit can be taken at once without waiting.
        await limiter.acquire(8)
        limiter.release(8)
    }
}
