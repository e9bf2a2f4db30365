import HeraldAuth
import HeraldEvents
import HeraldPolicy
import HeraldProviders
import HeraldSender
import HeraldSimulator
import HeraldTestSupport
import HeraldWorker
import Logging

/// A provider simulator on a free port, with one APNs key and one service account it trusts, and
/// clients for all three providers pointed at it.
struct SimulatorFixture {
    let simulator: ProviderSimulator
    let baseURL: String
    /// The simulator's certificate authority.
    let authorityPEM: String
    let apnsKey: APNsSigningKey
    let account: ServiceAccount
    let senderClock: TestClock
    let apns: APNsClient
    let fcm: FCMClient
    let expo: ExpoClient

    static let bundleID = "no.getdrop.app"
    static let apnsToken = String(repeating: "ab", count: 32)
    static let fcmToken = "fcm-token-0123456789abcdefghijklmnopqrstuvwxyz"
    static let expoToken = "ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]"

    /// The provider clients' deadline per call.
    static let requestTimeout = Duration.seconds(30)
    /// The provider clients' deadline for a connection. Not the default 5 s: in a debug build TLS
    /// handshakes are slow, and with the suite's tests all connecting at once on two cores some
    /// took longer (`transport.connect_timeout` where a test expected the simulator's answer).
    static let connectTimeout = Duration.seconds(30)

    /// Runs `body` with a fixture. `senderClock` signs tokens; the simulator reads `simulatorClock`.
    static func with(
        faults: FaultProfile = .none,
        simulatorClock: TestClock = TestClock("2026-11-22T12:00:00Z"),
        senderClock: TestClock = TestClock("2026-11-22T12:00:00Z"),
        trustedAPNsKey: Bool = true,
        frames: Bool = true,
        accessTokenLifetimeSeconds: Int64 = 3600,
        _ body: (SimulatorFixture) async throws -> Void
    ) async throws {
        let apnsKey = APNsSigningKey.generate(keyID: "KEY1234567", teamID: "TEAM123456").key
        var account = try ServiceAccount.generate(
            projectID: "herald-test",
            clientEmail: "sender@herald-test.iam.gserviceaccount.com",
            tokenURI: "https://127.0.0.1/token"
        ).account
        var configuration = ProviderSimulator.Configuration()
        let trusted = trustedAPNsKey ? apnsKey : APNsSigningKey.generate(keyID: "KEY1234567", teamID: "TEAM123456").key
        configuration.apnsKeys = [.init(keyID: trusted.keyID, teamID: trusted.teamID, publicKey: trusted.publicKey)]
        configuration.apnsTopics = [bundleID, bundleID + ".voip"]
        configuration.serviceAccounts = [
            .init(clientEmail: account.clientEmail, projectID: account.projectID, publicKey: account.publicKey)
        ]
        configuration.faults = faults
        configuration.keepsBodies = true
        configuration.accessTokenLifetimeSeconds = accessTokenLifetimeSeconds
        let simulator = ProviderSimulator(configuration: configuration, now: { simulatorClock.now() })
        let tls = try SimulatorTLS.generate()
        let server = SimulatorServer(simulator: simulator, tls: tls, logger: Logger(label: "test.simulator"))
        try await withRunningServices([server]) {
            let baseURL = await server.baseURL()
            account.tokenURI = baseURL + "/token"
            var apnsConfiguration = APNsClient.Configuration(credentials: [.init(key: apnsKey)])
            apnsConfiguration.productionURL = baseURL
            apnsConfiguration.sandboxURL = baseURL
            // Long enough that a call slowed by a loaded machine is not given up: a call that
            // timed out after the simulator accepted it is sent again (at least once, by design),
            // and the fault tests count every notification accepted twice.
            apnsConfiguration.requestTimeout = Self.requestTimeout
            apnsConfiguration.connectTimeout = Self.connectTimeout
            // Debug builds of swift-nio-http2 look streams up by a linear scan: fewer in flight is faster there.
            apnsConfiguration.concurrency = 32
            apnsConfiguration.usesFrameConnections = frames
            var fcmConfiguration = FCMClient.Configuration(credentials: [.init(account: account)])
            fcmConfiguration.baseURL = baseURL
            fcmConfiguration.requestTimeout = Self.requestTimeout
            fcmConfiguration.connectTimeout = Self.connectTimeout
            fcmConfiguration.concurrency = 32
            var expoConfiguration = ExpoClient.Configuration()
            expoConfiguration.baseURL = baseURL
            expoConfiguration.requestTimeout = Self.requestTimeout
            expoConfiguration.connectTimeout = Self.connectTimeout
            let fixture = SimulatorFixture(
                simulator: simulator,
                baseURL: baseURL,
                authorityPEM: tls.authorityPEM,
                apnsKey: apnsKey,
                account: account,
                senderClock: senderClock,
                apns: try APNsClient(
                    configuration: apnsConfiguration,
                    clock: senderClock,
                    extraTrustRootsPEM: tls.authorityPEM
                ),
                fcm: try FCMClient(
                    configuration: fcmConfiguration,
                    clock: senderClock,
                    extraTrustRootsPEM: tls.authorityPEM
                ),
                expo: try ExpoClient(configuration: expoConfiguration, extraTrustRootsPEM: tls.authorityPEM)
            )
            do {
                try await body(fixture)
            } catch {
                await fixture.shutdown()
                throw error
            }
            await fixture.shutdown()
        }
    }

    func shutdown() async {
        await apns.shutdown()
        await fcm.shutdown()
        await expo.shutdown()
    }

    /// An outbound message as the worker builds it, for `provider` and `token`.
    static func message(
        _ provider: PushProvider,
        token: String? = nil,
        id: String = "n-1",
        title: String = "Order confirmed",
        sandbox: Bool = false
    ) throws -> OutboundMessage {
        let device = Device(
            token: token ?? defaultToken(provider),
            appID: bundleID,
            environment: sandbox ? .sandbox : .production
        )
        let push = PushMessage(
            notificationID: id,
            kind: "order.confirmed",
            title: title,
            body: "Your order 1234 is confirmed.",
            createdAt: Timestamp(rfc3339: "2026-11-22T12:00:00Z")!
        )
        let request: OutboundMessage.Request
        switch provider {
        case .apns:
            let built = try APNsPayloadBuilder.build(push, for: device)
            request = .init(path: built.path, headers: built.headers.map { .init($0.name, $0.value) }, body: built.body)
        case .fcm:
            request = .init(
                path: "messages:send",
                headers: [.init("content-type", "application/json")],
                body: try FCMPayloadBuilder.build(push, for: device)
            )
        case .expo:
            request = .init(
                path: "/--/api/v2/push/send",
                headers: [.init("content-type", "application/json")],
                body: try ExpoPayloadBuilder.build(push, for: device)
            )
        }
        return OutboundMessage(
            notificationID: id,
            eventID: "e-1",
            kind: "order.confirmed",
            category: "transactional",
            recipient: "user-1",
            provider: provider,
            app: bundleID,
            environment: device.environment,
            token: device.token,
            request: request,
            createdAt: push.createdAt,
            expiresAt: nil
        )
    }

    static func defaultToken(_ provider: PushProvider) -> String {
        switch provider {
        case .apns: apnsToken
        case .fcm: fcmToken
        case .expo: expoToken
        }
    }
}
