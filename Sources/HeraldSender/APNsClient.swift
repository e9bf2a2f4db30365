import AsyncHTTPClient
import HeraldAuth
import HeraldEvents
import HeraldPolicy
import HeraldProviders
import HeraldWorker
import NIOCore
import NIOHPACK
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
        /// How long connecting to APNs may take: the TCP connect and TLS handshake with
        /// async-http-client, the TCP connect alone with frame connections.
        public var connectTimeout = Duration.seconds(5)
        /// Requests in flight at once per key.
        public var concurrency = 256
        /// Send over frame-level HTTP/2 connections (``HTTP2FrameConnection``), a key's calls in
        /// batches; otherwise one async-http-client request per call, at a fifth to a quarter of the
        /// calls per second on this machine.
        public var usesFrameConnections = true
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
                    connectTimeout: configuration.connectTimeout
                ),
                limiter: ConcurrencyLimiter(limit: configuration.concurrency),
                frames: configuration.usesFrameConnections
                    ? HTTP2FramePool(
                        tls: try ProviderTransport.tlsConfiguration(extraTrustRootsPEM: extraTrustRootsPEM),
                        connectionsPerOrigin: configuration.frameConnections,
                        connectTimeout: configuration.connectTimeout
                    )
                    : nil
            )
        }
    }

    /// The provider token cache of the key that sends for `app`.
    public func providerToken(for app: String) -> APNsProviderToken? { connection(for: app)?.providerToken }

    func connection(for app: String) -> Connection? { keyIndex(for: app).map { connections[$0] } }

    /// The index of the key that sends for `app`: the one naming it, or else one naming no app.
    private func keyIndex(for app: String) -> Int? {
        connections.firstIndex { $0.credential.apps.contains(app) }
            ?? connections.firstIndex { $0.credential.apps.isEmpty }
    }

    /// Headers whose value is new on every request, kept out of HPACK's dynamic table.
    static let uniquePerRequest = ["apns-id"]

    /// Sends one message; an expired provider token is replaced and the request sent once more.
    public func send(_ message: OutboundMessage) async -> DeliveryOutcome {
        if configuration.usesFrameConnections { return await send([message])[0].outcome }
        guard let connection = connection(for: message.app) else { return Self.noKey(message.app) }
        return await connection.limiter.withPermit {
            let base = message.environment == .sandbox ? configuration.sandboxURL : configuration.productionURL
            var token: String
            do { token = try connection.providerToken.token() } catch { return Self.signingFailed }
            var attempt = 0
            while true {
                attempt += 1
                let answer = await ProviderTransport.post(
                    connection.client,
                    url: base + message.request.path,
                    headers: Self.headers(of: message, token: token),
                    body: message.request.body,
                    timeout: configuration.requestTimeout
                )
                switch answer {
                case .failure(let outcome):
                    return outcome
                case .success(let answer):
                    let (outcome, reason) = Self.classify(answer)
                    if reason == "ExpiredProviderToken", attempt == 1,
                        let fresh = try? connection.providerToken.refresh(after: token), fresh != token
                    {
                        token = fresh
                        continue
                    }
                    return outcome
                }
            }
        }
    }

    /// How many calls one batch of the `frames` transport carries at most: a quarter of the
    /// concurrency, so that a batch waiting for its slowest answer leaves room for others.
    var framesBatchSize: Int { max(configuration.concurrency / 4, 1) }

    /// Sends `messages`: an outcome and the seconds the call took for each, in order.
    ///
    /// With the `frames` transport, the calls of a key go in batches of ``framesBatchSize`` (each
    /// batch one trip to a connection's event loop and back); otherwise each is a call of its own.
    func send(_ messages: [OutboundMessage]) async -> [ProviderClients.Call] {
        guard configuration.usesFrameConnections else {
            return await ProviderClients.eachConcurrently(messages) { await self.send($0) }
        }
        var calls = [ProviderClients.Call](repeating: .unanswered, count: messages.count)
        // The messages of each key, by index.
        var byKey = [[Int]](repeating: [], count: connections.count)
        for (index, message) in messages.enumerated() {
            if let key = keyIndex(for: message.app) {
                byKey[key].append(index)
            } else {
                calls[index] = .init(outcome: Self.noKey(message.app), seconds: 0)
            }
        }
        let size = framesBatchSize
        await withTaskGroup(of: [(Int, ProviderClients.Call)].self) { group in
            for (key, indices) in byKey.enumerated() {
                for start in stride(from: 0, to: indices.count, by: size) {
                    let batch = Array(indices[start..<min(start + size, indices.count)])
                    let connection = connections[key]
                    group.addTask {
                        await connection.limiter.acquire(batch.count)
                        defer { connection.limiter.release(batch.count) }
                        let sent = await self.sendFrames(batch.map { messages[$0] }, over: connection)
                        return Array(zip(batch, sent))
                    }
                }
            }
            for await sent in group { for (index, call) in sent { calls[index] = call } }
        }
        return calls
    }

    /// One batch of one key over its frame connections; the calls an expired provider token was
    /// refused go once more with a fresh token.
    private func sendFrames(_ messages: [OutboundMessage], over connection: Connection) async -> [ProviderClients.Call]
    {
        var token: String
        do { token = try connection.providerToken.token() } catch {
            return Array(repeating: .init(outcome: Self.signingFailed, seconds: 0), count: messages.count)
        }
        var calls = [ProviderClients.Call](repeating: .unanswered, count: messages.count)
        var unsent = Array(messages.indices)
        for attempt in 1...2 {
            var expired: [Int] = []
            // One string for the whole batch, not one per call.
            let authorization = "bearer \(token)"
            for (environment, indices) in Dictionary(grouping: unsent, by: { messages[$0].environment }) {
                let answers = await ProviderTransport.post(
                    connection.frames!,
                    origin: environment == .sandbox ? sandboxOrigin : productionOrigin,
                    count: indices.count,
                    timeout: configuration.requestTimeout
                ) { frames, index in
                    let request = messages[indices[index]].request
                    return frames.makeRequest(
                        path: request.path,
                        headerCount: request.headers.count + 1,
                        body: ByteBuffer(bytes: request.body)
                    ) { block in
                        Self.addHeaders(of: request, authorization: authorization, to: &block)
                    }
                }
                for (index, (answer, seconds)) in zip(indices, answers) {
                    // A retried call took both tries.
                    let seconds = seconds + calls[index].seconds
                    switch answer {
                    case .failure(let outcome):
                        calls[index] = .init(outcome: outcome, seconds: seconds)
                    case .success(let answer):
                        let (outcome, reason) = Self.classify(answer)
                        calls[index] = .init(outcome: outcome, seconds: seconds)
                        if reason == "ExpiredProviderToken" { expired.append(index) }
                    }
                }
            }
            guard attempt == 1, !expired.isEmpty,
                let fresh = try? connection.providerToken.refresh(after: token), fresh != token
            else { break }
            token = fresh
            unsent = expired
        }
        return calls
    }

    /// Adds what a frame-level request to APNs carries after its pseudo-headers: the provider token,
    /// then the message's own headers, those new on every request (``uniquePerRequest``) kept out of
    /// HPACK's dynamic table.
    static func addHeaders(
        of request: OutboundMessage.Request,
        authorization: String,
        to block: inout HPACKHeaders
    ) {
        block.add(name: "authorization", value: authorization)
        for header in request.headers {
            let unique = uniquePerRequest.contains(header.name)
            block.add(name: header.name, value: header.value, indexing: unique ? .nonIndexable : .indexable)
        }
    }

    /// Headers a request to APNs carries: the provider token and the message's own.
    private static func headers(of message: OutboundMessage, token: String) -> [(String, String)] {
        headers(of: message, authorization: "bearer \(token)")
    }

    private static func headers(of message: OutboundMessage, authorization: String) -> [(String, String)] {
        var headers = [(String, String)]()
        headers.reserveCapacity(message.request.headers.count + 1)
        headers.append(("authorization", authorization))
        for header in message.request.headers { headers.append((header.name, header.value)) }
        return headers
    }

    /// An answer's outcome, and the `reason` APNs gave.
    private static func classify(_ answer: ProviderAnswer) -> (outcome: DeliveryOutcome, reason: String?) {
        // A 200 has no body; a parse error costs more than the check.
        let body = answer.body.isEmpty ? nil : try? JSONParser().parse(answer.body)
        let reason = body?["reason"]?.stringValue
        var timestamp: Int64?
        if case .number(let text)? = body?["timestamp"] { timestamp = Int64(text) }
        let outcome = Classification.apns(
            status: answer.status,
            reason: reason,
            timestamp: timestamp,
            retryAfter: answer.retryAfter
        )
        return (outcome, reason)
    }

    private static func noKey(_ app: String) -> DeliveryOutcome {
        .configuration(.init("apns.no_key", "no APNs key is configured for app \(app)"))
    }

    private static let signingFailed = DeliveryOutcome.configuration(
        .init("apns.signing", "the APNs key could not sign a provider token")
    )

    public func shutdown() async {
        for connection in connections {
            await connection.frames?.closeAll()
            try? await connection.client.shutdown()
        }
    }
}
