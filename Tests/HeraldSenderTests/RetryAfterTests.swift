import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldTestSupport
import HeraldWorker
import Testing

@testable import HeraldSender

/// A provider's `Retry-After` is whole seconds; anything odd in it must not reach the retry's time.
@Suite("Retry-After")
struct RetryAfterTests {
    @Test("whole seconds are read, at most a day; a negative number, a date or garbage is no Retry-After")
    func parsing() {
        #expect(ProviderAnswer.retryAfter("5") == .seconds(5))
        #expect(ProviderAnswer.retryAfter(" 7 ") == .seconds(7))
        #expect(ProviderAnswer.retryAfter("0") == .seconds(0))
        #expect(ProviderAnswer.retryAfter("86401") == .seconds(86_400))
        // 10^16 seconds overflowed the retry's not-before in milliseconds, which trapped.
        #expect(ProviderAnswer.retryAfter("9999999999999999") == .seconds(86_400))
        for odd in [nil, "", "-5", "1.5", "soon", "Wed, 21 Oct 2026 07:28:00 GMT", "99999999999999999999999"] {
            #expect(ProviderAnswer.retryAfter(odd) == nil, "\(odd ?? "nil")")
        }
    }

    @Test("a huge Retry-After from the provider waits a day, and the sender's arithmetic does not trap")
    func hugeRetryAfterFromTheProvider() async throws {
        try await SimulatorFixture.with(frames: true) { fixture in
            let message = try SimulatorFixture.message(.apns, token: ProviderAnswerTests.apnsToken(1), id: "r-1")
            fixture.simulator.script(
                token: message.token,
                .init(status: 429, reason: "TooManyRequests", retryAfterSeconds: 9_999_999_999_999_999)
            )
            let calls = await fixture.apns.send([message])
            guard case .retry(_, let after)? = calls.first?.outcome else {
                Issue.record("\(calls)")
                return
            }
            #expect(after == .seconds(86_400))
            let now = Timestamp(rfc3339: "2026-11-26T12:00:00Z")!
            let next = RetryPolicy().next(after: 0, now: now, retryAfter: after, random: 0)
            #expect(next?.notBefore == Timestamp(epochMilliseconds: now.epochMilliseconds + 86_400_000))
        }
    }

    @Test(
        "an OAuth token's lifetime is bounded: 10^16 seconds does not trap, 30 (under the refresh margin) is fetched again each call",
        arguments: [(Int64(9_999_999_999_999_999), 1), (30, 2)]
    )
    func accessTokenLifetime(lifetime: Int64, exchanges: Int) async throws {
        try await SimulatorFixture.with(accessTokenLifetimeSeconds: lifetime) { fixture in
            for index in 0..<2 {
                let message = try SimulatorFixture.message(.fcm, token: SimulatorFixture.fcmToken, id: "t-\(index)")
                #expect(await fixture.fcm.send(message) == .delivered())
            }
            #expect(fixture.simulator.statistics.answers["oauth 200"] == exchanges)
        }
    }

    @Test("a retry waits no longer than the longest hold after it was written, whatever its not-before says")
    func notBeforeIsBounded() throws {
        let written = Timestamp(rfc3339: "2026-11-26T12:00:00Z")!
        // The default policy's: a day's Retry-After (more than its last step, 1 h and 10%) and an hour.
        let hold = Sender.longestHold(RetryPolicy())
        #expect(hold == .seconds(25 * 3600))
        func retry(notBefore: String?, written: Timestamp? = written) -> KafkaMessage {
            KafkaMessage(
                topic: "herald.outbound.retry.1",
                partition: 0,
                offset: 0,
                timestampMilliseconds: written?.epochMilliseconds,
                key: nil,
                value: nil,
                headers: notBefore.map { [KafkaHeader(HeraldHeader.notBefore, string: $0)] } ?? []
            )
        }
        let latest = Timestamp(epochMilliseconds: written.epochMilliseconds + hold.milliseconds)
        // Years ahead (a garbled header, a clock far off): it held the partition until then.
        #expect(Sender.notBefore(retry(notBefore: "9999-12-31T23:59:59Z"), holdingAtMost: hold) == latest)
        let inTenMinutes = "2026-11-26T12:10:00.000Z"
        #expect(Sender.notBefore(retry(notBefore: inTenMinutes), holdingAtMost: hold)?.description == inTenMinutes)
        #expect(Sender.notBefore(retry(notBefore: nil), holdingAtMost: hold) == nil)
        #expect(Sender.notBefore(retry(notBefore: "soon"), holdingAtMost: hold) == nil)
        // Without the record's time there is nothing to bound it by.
        #expect(
            Sender.notBefore(retry(notBefore: "9999-12-31T23:59:59Z", written: nil), holdingAtMost: hold)
                == Timestamp(rfc3339: "9999-12-31T23:59:59Z")
        )
    }

    @Test("whole milliseconds of a duration saturate instead of trapping")
    func saturatingMilliseconds() {
        #expect(Duration.seconds(5).milliseconds == 5000)
        #expect(Duration.milliseconds(-1500).milliseconds == -1500)
        #expect(Duration.seconds(Int64.max).milliseconds == .max)
        #expect(Duration.seconds(Int64.min).milliseconds == .min)
        #expect(Duration.seconds(Int64.max / 1000).milliseconds == Int64.max / 1000 * 1000)
    }
}
