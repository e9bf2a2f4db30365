import HeraldAuth
import HeraldEvents
import HeraldSender
import HeraldSimulator
import HeraldTestSupport
import Testing

@Suite("Provider authentication: APNs provider tokens and FCM access tokens")
struct ProviderAuthTests {
    @Test("an APNs provider token is reused for 50 minutes and replaced after; never refreshed within 20")
    func providerTokenTiming() throws {
        let clock = TestClock("2026-11-22T12:00:00Z")
        let key = APNsSigningKey.generate(keyID: "KEY1234567", teamID: "TEAM123456").key
        let cache = APNsProviderToken(key: key, clock: clock)
        let first = try cache.token()
        clock.advance(by: .seconds(10 * 60))
        // APNs says expired, but the token is 10 minutes old: signing again would only earn
        // TooManyProviderTokenUpdates.
        #expect(try cache.refresh(after: first) == first)
        clock.advance(by: .seconds(39 * 60 + 59))
        #expect(try cache.token() == first)
        clock.advance(by: .seconds(1))
        let second = try cache.token()
        #expect(second != first)
        #expect(cache.issuedAt == Timestamp(rfc3339: "2026-11-22T12:50:00Z"))
        clock.advance(by: .seconds(20 * 60))
        let third = try cache.refresh(after: second)
        #expect(third != second)
        // A rejection of a token already replaced does not replace the new one.
        #expect(try cache.refresh(after: second) == third)

        let parsed = try JSONWebToken(compact: third)
        #expect(parsed.algorithm == "ES256" && parsed.keyID == "KEY1234567")
        #expect(parsed.claims["iss"]?.stringValue == "TEAM123456")
        #expect(parsed.seconds("iat") == Timestamp(rfc3339: "2026-11-22T13:10:00Z")!.epochMilliseconds / 1000)
        #expect(parsed.isSigned(by: key.publicKey))
        #expect(!parsed.isSigned(by: APNsSigningKey.generate(keyID: "K", teamID: "T").key.publicKey))
    }

    @Test("APNs says ExpiredProviderToken once the token is an hour old; the next token after 50 minutes is accepted")
    func expiredProviderToken() async throws {
        let simulatorClock = TestClock("2026-11-22T12:00:00Z")
        let senderClock = TestClock("2026-11-22T12:00:00Z")
        try await SimulatorFixture.with(simulatorClock: simulatorClock, senderClock: senderClock) { fixture in
            let message = try SimulatorFixture.message(.apns)
            #expect(await fixture.apns.send(message) == .delivered())
            simulatorClock.advance(by: .seconds(61 * 60))
            // The sender's clock disagrees (the token looks new to it): retry later, not a re-sign.
            #expect(
                await fixture.apns.send(message)
                    == .retry(.init("apns.ExpiredProviderToken", "APNs answered 403 ExpiredProviderToken"))
            )
            senderClock.advance(by: .seconds(61 * 60))
            #expect(await fixture.apns.send(message) == .delivered())
        }
        // Clocks that agree: the stale token is replaced on the rejection and the send succeeds.
        try await SimulatorFixture.with(simulatorClock: simulatorClock, senderClock: senderClock) { fixture in
            let message = try SimulatorFixture.message(.apns)
            #expect(await fixture.apns.send(message) == .delivered())
            let issued = try #require(fixture.apns.providerToken(for: SimulatorFixture.bundleID)?.issuedAt)
            // Past APNs' hour, though short of the sender's 50 minutes as its own clock lags a minute.
            simulatorClock.advance(by: .seconds(61 * 60))
            senderClock.advance(by: .seconds(45 * 60))
            #expect(await fixture.apns.send(message) == .delivered())
            #expect(fixture.apns.providerToken(for: SimulatorFixture.bundleID)?.issuedAt != issued)
        }
    }

    @Test("an FCM access token is fetched once, replaced 5 minutes before expiry, and refreshed once on 401")
    func accessTokenLifecycle() async throws {
        let simulatorClock = TestClock("2026-11-22T12:00:00Z")
        let senderClock = TestClock("2026-11-22T12:00:00Z")
        try await SimulatorFixture.with(simulatorClock: simulatorClock, senderClock: senderClock) { fixture in
            let accessToken = try #require(fixture.fcm.accessToken(for: SimulatorFixture.bundleID))
            let messages = try (0..<20).map { try SimulatorFixture.message(.fcm, id: "n-\($0)") }
            let outcomes = await withTaskGroup(of: DeliveryOutcome.self) { group in
                for message in messages { group.addTask { await fixture.fcm.send(message) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.allSatisfy { $0 == .delivered() })
            #expect(accessToken.exchanges == 1)

            senderClock.advance(by: .seconds(54 * 60))
            simulatorClock.advance(by: .seconds(54 * 60))
            #expect(await fixture.fcm.send(messages[0]) == .delivered())
            #expect(accessToken.exchanges == 1)
            senderClock.advance(by: .seconds(2 * 60))
            simulatorClock.advance(by: .seconds(2 * 60))
            #expect(await fixture.fcm.send(messages[0]) == .delivered())
            #expect(accessToken.exchanges == 2)

            fixture.simulator.revokeAccessTokens()
            #expect(await fixture.fcm.send(messages[1]) == .delivered())
            #expect(accessToken.exchanges == 3)
            #expect(fixture.simulator.statistics.answers["fcm 401"] == 1)
        }
    }

    @Test("an assertion the token endpoint rejects is a configuration error; an untrusted server, a transport failure")
    func rejectedAssertion() async throws {
        try await SimulatorFixture.with { fixture in
            // The fixture's account, with a key the token endpoint has never seen.
            let forged = try ServiceAccount.generate(
                projectID: "herald-test",
                clientEmail: fixture.account.clientEmail,
                tokenURI: fixture.baseURL + "/token"
            ).account
            var configuration = FCMClient.Configuration(credentials: [.init(account: forged)])
            configuration.baseURL = fixture.baseURL
            configuration.connectTimeout = SimulatorFixture.connectTimeout
            for (trust, expected) in [(fixture.authorityPEM, "fcm.oauth.invalid_grant"), (nil, "transport.tls")] {
                let client = try FCMClient(
                    configuration: configuration,
                    clock: fixture.senderClock,
                    extraTrustRootsPEM: trust
                )
                let outcome = await client.send(try SimulatorFixture.message(.fcm))
                await client.shutdown()
                #expect(outcome.reason?.code == expected)
                #expect(outcome.class == (trust == nil ? .retry : .configuration))
            }
            #expect(fixture.simulator.statistics.reasons["oauth invalid_grant"] == 1)
            #expect(fixture.simulator.statistics.accepted == 0)
        }
    }

    @Test("base64url round-trips and rejects what is not base64url")
    func base64URL() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let encoded = Base64URL.encode(bytes)
            #expect(!encoded.contains("=") && !encoded.contains("+") && !encoded.contains("/"))
            #expect(Base64URL.decode(encoded) == bytes)
        }
        #expect(Base64URL.decode("ab+c") == nil)
        #expect(Base64URL.decode("a") == nil)
    }
}
