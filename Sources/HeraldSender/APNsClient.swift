import AsyncHTTPClient
import HeraldAuth
import HeraldEvents
import HeraldPolicy
import HeraldWorker
import Synchronization

/// The provider token for one APNs key: signed when first needed, then again about every 50 minutes
/// (APNs rejects tokens older than an hour), and never more often than every 20 (APNs answers
/// `TooManyProviderTokenUpdates` to a provider that refreshes faster).
public final class APNsProviderToken: Sendable {
    public static let refreshAge = Duration.seconds(50 * 60)
    public static let minimumAge = Duration.seconds(20 * 60)

    let key: APNsSigningKey
    let clock: any HeraldClock
    private let current = Mutex<(token: String, issuedAt: Timestamp)?>(nil)

    public init(key: APNsSigningKey, clock: any HeraldClock) {
        self.key = key
        self.clock = clock
    }

    /// The token to send now.
    public func token() throws -> String {
        let now = clock.now()
        return try current.withLock { current in
            if let current, age(of: current.issuedAt, now: now) < Self.refreshAge { return current.token }
            let token = try key.token(issuedAt: now)
            current = (token, now)
            return token
        }
    }

    /// After APNs answered `ExpiredProviderToken` to `rejected`: a new token if the current one is
    /// at least 20 minutes old, otherwise the current one (a clock APNs disagrees with is not fixed
    /// by signing faster).
    public func refresh(after rejected: String) throws -> String {
        let now = clock.now()
        return try current.withLock { current in
            if let current, current.token != rejected || age(of: current.issuedAt, now: now) < Self.minimumAge {
                return current.token
            }
            let token = try key.token(issuedAt: now)
            current = (token, now)
            return token
        }
    }

    /// When the current token was signed.
    public var issuedAt: Timestamp? { current.withLock { $0?.issuedAt } }

    private func age(of issuedAt: Timestamp, now: Timestamp) -> Duration {
        .milliseconds(now.epochMilliseconds - issuedAt.epochMilliseconds)
    }
}

/// APNs over HTTP/2 with token authentication: one connection pool per key, the sandbox or
/// production host by the device's environment, a deadline per request.
public final class APNsClient: Sendable {
    public struct Credential: Sendable {
        public var key: APNsSigningKey
        /// The bundle ids this key sends for; empty: any app without a key of its own.
        public var apps: Set<String>

        public init(key: APNsSigningKey, apps: Set<String> = []) {
            self.key = key
            self.apps = apps
        }
    }

    public struct Configuration: Sendable {
        public var credentials: [Credential]
        public var productionURL = "https://api.push.apple.com"
        public var sandboxURL = "https://api.sandbox.push.apple.com"
        public var requestTimeout = Duration.seconds(10)
        /// Requests in flight at once per key.
        public var concurrency = 256
        /// Experimental: send over frame-level HTTP/2 connections (``HTTP2FrameConnection``) instead of
        /// async-http-client; about twice the calls per second on this machine.
        public var usesFrameConnections = false
        /// HTTP/2 connections per APNs host and key with the `frames` transport, used in turn: one
        /// connection is one event loop's work at each end, however many streams it carries.
        public var frameConnections = 2

        public init(credentials: [Credential]) {
            self.credentials = credentials
        }
    }

    struct Connection: Sendable {
        let credential: Credential
        let providerToken: APNsProviderToken
        let client: HTTPClient
        let limiter: ConcurrencyLimiter
        let frames: HTTP2FramePool?
    }

    let configuration: Configuration
    let connections: [Connection]
    /// The hosts of `productionURL` and `sandboxURL`, for the `frames` transport.
    let productionOrigin: HTTP2FramePool.Origin?
    let sandboxOrigin: HTTP2FramePool.Origin?

    public init(configuration: Configuration, clock: any HeraldClock, extraTrustRootsPEM: String?) throws {
        self.configuration = configuration
        productionOrigin = HTTP2FramePool.Origin(url: configuration.productionURL)
        sandboxOrigin = HTTP2FramePool.Origin(url: configuration.sandboxURL)
        connections = try configuration.credentials.map { credential in
            Connection(
                credential: credential,
                providerToken: APNsProviderToken(key: credential.key, clock: clock),
                client: try ProviderTransport.makeClient(
                    extraTrustRootsPEM: extraTrustRootsPEM,
                    connectTimeout: .seconds(5)
                ),
                limiter: ConcurrencyLimiter(limit: configuration.concurrency),
                frames: configuration.usesFrameConnections
                    ? HTTP2FramePool(
                        tls: try ProviderTransport.tlsConfiguration(extraTrustRootsPEM: extraTrustRootsPEM),
                        connectionsPerOrigin: configuration.frameConnections
                    )
                    : nil
            )
        }
    }

    /// The provider token cache of the key that sends for `app`.
    public func providerToken(for app: String) -> APNsProviderToken? { connection(for: app)?.providerToken }

    func connection(for app: String) -> Connection? {
        connections.first { $0.credential.apps.contains(app) } ?? connections.first { $0.credential.apps.isEmpty }
    }

    /// Headers whose value is new on every request, kept out of HPACK's dynamic table.
    static let uniquePerRequest = ["apns-id"]

    /// Sends one message; an expired provider token is replaced and the request sent once more.
    public func send(_ message: OutboundMessage) async -> DeliveryOutcome {
        guard let connection = connection(for: message.app) else {
            return .configuration(.init("apns.no_key", "no APNs key is configured for app \(message.app)"))
        }
        return await connection.limiter.withPermit {
            let base = message.environment == .sandbox ? configuration.sandboxURL : configuration.productionURL
            var token: String
            do { token = try connection.providerToken.token() } catch {
                return .configuration(.init("apns.signing", "the APNs key could not sign a provider token"))
            }
            var attempt = 0
            while true {
                attempt += 1
                let headers =
                    [("authorization", "bearer \(token)")] + message.request.headers.map { ($0.name, $0.value) }
                let answer =
                    if let frames = connection.frames {
                        await ProviderTransport.post(
                            frames,
                            origin: message.environment == .sandbox ? sandboxOrigin : productionOrigin,
                            path: message.request.path,
                            headers: headers,
                            unindexed: Self.uniquePerRequest,
                            body: message.request.body,
                            timeout: configuration.requestTimeout
                        )
                    } else {
                        await ProviderTransport.post(
                            connection.client,
                            url: base + message.request.path,
                            headers: headers,
                            body: message.request.body,
                            timeout: configuration.requestTimeout
                        )
                    }
                switch answer {
                case .failure(let outcome):
                    return outcome
                case .success(let answer):
                    // A 200 has no body; a parse error costs more than the check.
                    let body = answer.body.isEmpty ? nil : try? JSONParser().parse(answer.body)
                    let reason = body?["reason"]?.stringValue
                    if reason == "ExpiredProviderToken", attempt == 1,
                        let fresh = try? connection.providerToken.refresh(after: token), fresh != token
                    {
                        token = fresh
                        continue
                    }
                    var timestamp: Int64?
                    if case .number(let text)? = body?["timestamp"] { timestamp = Int64(text) }
                    return Classification.apns(
                        status: answer.status,
                        reason: reason,
                        timestamp: timestamp,
                        retryAfter: answer.retryAfter
                    )
                }
            }
        }
    }

    public func shutdown() async {
        for connection in connections {
            await connection.frames?.closeAll()
            try? await connection.client.shutdown()
        }
    }
}
