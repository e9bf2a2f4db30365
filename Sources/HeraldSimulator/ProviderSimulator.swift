import Crypto
import HeraldAuth
import HeraldEvents
import Logging
import Synchronization
import _CryptoExtras

/// APNs-, FCM- and Expo-like endpoints in one server: they check what the real services check
/// (provider tokens, headers, device-token format, payload size), answer with the real services'
/// status codes and error bodies, misbehave as a ``FaultProfile`` says, and record what they
/// accepted so that tests and demos can count deliveries per notification.
///
/// Paths: `POST /3/device/{token}` (APNs), `POST /token` (Google OAuth2),
/// `POST /v1/projects/{project}/messages:send` (FCM HTTP v1), `POST /--/api/v2/push/send` and
/// `POST /--/api/v2/push/getReceipts` (Expo), and `GET /simulator/stats` (what it has seen, as JSON).
public final class ProviderSimulator: Sendable {
    public struct Configuration: Sendable {
        /// APNs keys whose provider tokens are accepted.
        public var apnsKeys: [APNsKey] = []
        /// Bundle ids APNs accepts as `apns-topic` (with their push-type suffixes); empty: any.
        public var apnsTopics: Set<String> = []
        /// Service accounts whose assertions the OAuth endpoint accepts.
        public var serviceAccounts: [ServiceAccountKey] = []
        /// The Expo access token required in `Authorization: Bearer`, if any.
        public var expoAccessToken: String?
        public var faults = FaultProfile.none
        /// Keep each accepted request's body (tests that read the text); off for benchmarks.
        public var keepsBodies = false
        /// How long an OAuth access token lives.
        public var accessTokenLifetimeSeconds: Int64 = 3600

        public init() {}
    }

    public struct APNsKey: Sendable {
        public var keyID: String
        public var teamID: String
        public var publicKey: P256.Signing.PublicKey

        public init(keyID: String, teamID: String, publicKey: P256.Signing.PublicKey) {
            self.keyID = keyID
            self.teamID = teamID
            self.publicKey = publicKey
        }
    }

    public struct ServiceAccountKey: Sendable {
        public var clientEmail: String
        public var projectID: String
        public var publicKey: _RSA.Signing.PublicKey

        public init(clientEmail: String, projectID: String, publicKey: _RSA.Signing.PublicKey) {
            self.clientEmail = clientEmail
            self.projectID = projectID
            self.publicKey = publicKey
        }
    }

    /// What the simulator has seen.
    public struct Statistics: Sendable {
        /// Answers by provider and status ("apns 200", "fcm 429", "expo 200", "oauth 200").
        public var answers: [String: Int] = [:]
        /// Error reasons by provider ("apns BadDeviceToken", "fcm UNREGISTERED", "expo DeviceNotRegistered").
        public var reasons: [String: Int] = [:]
        /// Connections dropped on purpose.
        public var dropped = 0
        /// Accepted notifications, and how many of them were accepted more than once.
        public var accepted = 0
        public var acceptedMoreThanOnce = 0
    }

    /// An answer the simulator gives for one device token instead of its usual one: the way tests
    /// reach answers a well-formed request never gets (`BadCertificate`, `Shutdown`, `SENDER_ID_MISMATCH`).
    /// For Expo, status 200 means an `ok` ticket whose receipt carries `reason`.
    public struct ScriptedAnswer: Sendable, Equatable {
        public var status: Int
        /// The APNs `reason`, FCM `errorCode` or Expo error code.
        public var reason: String
        public var retryAfterSeconds: Int?

        public init(status: Int, reason: String, retryAfterSeconds: Int? = nil) {
            self.status = status
            self.reason = reason
            self.retryAfterSeconds = retryAfterSeconds
        }
    }

    struct State {
        var scripted: [String: ScriptedAnswer] = [:]
        var dice: FaultDice
        /// Provider tokens already verified: the signature is checked once per token, as APNs does
        /// per connection, not once per request.
        var verifiedProviderTokens: [String: (teamID: String, keyID: String, issuedAt: Int64)] = [:]
        var accessTokens: [String: (projectID: String, expiresAt: Int64)] = [:]
        var unregistered: [String: Int64] = [:]
        /// Expo tokens registered under a project other than ``ProviderSimulator/defaultExpoProject``.
        var expoProjects: [String: String] = [:]
        var receipts: [String: ExpoReceipt] = [:]
        var deliveries: [SimulatorDelivery] = []
        var acceptedCounts: [String: Int] = [:]
        var statistics = Statistics()
        var nextID: UInt64 = 0

        mutating func makeID(_ prefix: String) -> String {
            nextID += 1
            return "\(prefix)\(nextID)"
        }
    }

    enum ExpoReceipt {
        case ok
        case error(code: String, message: String)
    }

    let configuration: Configuration
    let now: @Sendable () -> Timestamp
    let logger: Logger
    let state: Mutex<State>

    /// - Parameter now: the simulator's clock (provider-token age, access-token expiry, the 410
    ///   timestamps); tests pass the sender's test clock.
    public init(
        configuration: Configuration,
        now: @escaping @Sendable () -> Timestamp,
        logger: Logger = Logger(label: "herald.simulator")
    ) {
        self.configuration = configuration
        self.now = now
        self.logger = logger
        state = Mutex(State(dice: FaultDice(profile: configuration.faults)))
    }

    /// Answers one request.
    public func respond(to request: SimulatorRequest) -> SimulatorResponse {
        var response: SimulatorResponse
        let provider: String
        switch request.path {
        case let path where path.hasPrefix("/3/device"):
            provider = "apns"
            response = apns(request)
        case "/token":
            provider = "oauth"
            response = oauthToken(request)
        case let path where path.hasPrefix("/v1/projects/"):
            provider = "fcm"
            response = fcm(request)
        case "/--/api/v2/push/send":
            provider = "expo"
            response = expoSend(request)
        case "/--/api/v2/push/getReceipts":
            provider = "expo-receipts"
            response = expoReceipts(request)
        case "/simulator/stats":
            return .json(200, statisticsJSON())
        default:
            // APNs' answer for a path it does not serve; the others answer much the same.
            provider = "unknown"
            response = .json(404, #"{"reason":"BadPath"}"#.utf8Array)
        }
        state.withLock { state in
            if response.dropsConnection {
                state.statistics.dropped += 1
            } else {
                state.statistics.answers["\(provider) \(response.status)", default: 0] += 1
            }
            response.delayNanoseconds = state.dice.latencyNanoseconds()
        }
        return response
    }

    /// Marks `token` unregistered at `at`: APNs answers 410 `Unregistered` with that time, FCM
    /// `UNREGISTERED`, Expo `DeviceNotRegistered`.
    public func unregister(token: String, at: Timestamp) {
        state.withLock { $0.unregistered[token] = at.epochMilliseconds }
    }

    /// Answers requests for `token` with `answer` from now on (`nil`: as usual again).
    public func script(token: String, _ answer: ScriptedAnswer?) {
        state.withLock { $0.scripted[token] = answer }
    }

    func scripted(_ token: String) -> ScriptedAnswer? { state.withLock { $0.scripted[token] } }

    /// The Expo project of every token not registered under another (``registerExpoProject(_:tokens:)``).
    public static let defaultExpoProject = "@herald/app"

    /// Registers Expo `tokens` under `project` (an experience id such as `@team/app`): Expo refuses
    /// a send request whose tokens belong to more than one project.
    public func registerExpoProject(_ project: String, tokens: [String]) {
        state.withLock { state in
            for token in tokens { state.expoProjects[token] = project }
        }
    }

    /// Forgets every OAuth access token handed out, as Google does when a key is rotated: the next
    /// FCM send with one of them gets 401.
    public func revokeAccessTokens() {
        state.withLock { $0.accessTokens.removeAll() }
    }

    /// Every accepted notification, in the order accepted.
    public var deliveries: [SimulatorDelivery] { state.withLock { $0.deliveries } }

    /// How many different notifications were accepted (each counted once however often it came).
    public var distinctAccepted: Int { state.withLock { $0.acceptedCounts.count } }

    /// How many times the notification identified by `id` was accepted.
    public func acceptedCount(id: String) -> Int { state.withLock { $0.acceptedCounts[id] ?? 0 } }

    public var statistics: Statistics { state.withLock { $0.statistics } }

    func accept(_ provider: SimulatorDelivery.Provider, id: String, token: String, body: [UInt8]) {
        let kept = configuration.keepsBodies ? body : nil
        state.withLock { state in
            let previous = state.acceptedCounts[id, default: 0]
            state.acceptedCounts[id] = previous + 1
            state.statistics.accepted += 1
            if previous == 1 { state.statistics.acceptedMoreThanOnce += 1 }
            state.deliveries.append(SimulatorDelivery(provider: provider, id: id, token: token, body: kept))
        }
    }

    func count(reason: String, of provider: String) {
        state.withLock { $0.statistics.reasons["\(provider) \(reason)", default: 0] += 1 }
    }

    func rollFault(perMessage: Bool = true) -> Fault? { state.withLock { $0.dice.roll(perMessage: perMessage) } }

    private func statisticsJSON() -> [UInt8] {
        let statistics = self.statistics
        var writer = JSONStreamWriter()
        writer.beginObject()
        writer.member("accepted", integer: Int64(statistics.accepted))
        writer.member("acceptedMoreThanOnce", integer: Int64(statistics.acceptedMoreThanOnce))
        writer.member("dropped", integer: Int64(statistics.dropped))
        for (name, values) in [("answers", statistics.answers), ("reasons", statistics.reasons)] {
            writer.key(name)
            writer.beginObject()
            for (key, value) in values.sorted(by: { $0.key < $1.key }) { writer.member(key, integer: Int64(value)) }
            writer.endObject()
        }
        writer.endObject()
        return writer.bytes
    }
}

extension String {
    var utf8Array: [UInt8] { Array(utf8) }
}
