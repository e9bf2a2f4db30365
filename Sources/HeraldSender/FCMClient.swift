import AsyncHTTPClient
import HeraldAuth
import HeraldEvents
import HeraldPolicy
import HeraldWorker
import Synchronization

/// An OAuth2 access token for one service account (RFC 7523 JWT-bearer grant), cached until about
/// five minutes before it expires. Concurrent callers share one exchange.
public final class FCMAccessToken: Sendable {
    /// How long before expiry a token is replaced.
    public static let refreshMargin = Duration.seconds(5 * 60)

    let account: ServiceAccount
    let clock: any HeraldClock
    let client: HTTPClient
    let timeout: Duration
    private let state = Mutex<State>(State())

    struct State {
        var token: (value: String, expiresAt: Timestamp)?
        var exchange: Task<Result<(value: String, expiresAt: Timestamp), DeliveryOutcome>, Never>?
        var exchanges = 0
    }

    init(account: ServiceAccount, clock: any HeraldClock, client: HTTPClient, timeout: Duration) {
        self.account = account
        self.clock = clock
        self.client = client
        self.timeout = timeout
    }

    /// How many times a token was fetched.
    public var exchanges: Int { state.withLock { $0.exchanges } }

    /// A token valid for at least the refresh margin, or why there is none.
    func token() async -> Result<String, DeliveryOutcome> {
        let now = clock.now()
        let exchange: Task<Result<(value: String, expiresAt: Timestamp), DeliveryOutcome>, Never> = state.withLock {
            state in
            if let token = state.token,
                token.expiresAt.epochMilliseconds - now.epochMilliseconds > Self.refreshMargin.milliseconds
            {
                return Task { .success(token) }
            }
            if let exchange = state.exchange { return exchange }
            state.exchanges += 1
            let exchange = Task { await self.exchange(now: now) }
            state.exchange = exchange
            return exchange
        }
        let result = await exchange.value
        state.withLock { state in
            if state.exchange == exchange {
                state.exchange = nil
                if case .success(let token) = result { state.token = token }
            }
        }
        return result.map(\.value)
    }

    /// Forgets `rejected` after a 401, so the next ``token()`` fetches a new one.
    func invalidate(_ rejected: String) {
        state.withLock { state in
            if state.token?.value == rejected { state.token = nil }
        }
    }

    private func exchange(now: Timestamp) async -> Result<(value: String, expiresAt: Timestamp), DeliveryOutcome> {
        let assertion: String
        do { assertion = try account.assertion(issuedAt: now) } catch {
            return .failure(.configuration(.init("fcm.signing", "the service account key could not sign an assertion")))
        }
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        let answer = await ProviderTransport.post(
            client,
            url: account.tokenURI,
            headers: [("content-type", "application/x-www-form-urlencoded")],
            body: Array(form.utf8),
            timeout: timeout
        )
        switch answer {
        case .failure(let outcome):
            return .failure(outcome)
        case .success(let answer):
            let body = try? JSONParser().parse(answer.body)
            guard answer.status == 200, let token = body?["access_token"]?.stringValue,
                case .number(let seconds)? = body?["expires_in"], let lifetime = Int64(seconds)
            else {
                let error = body?["error"]?.stringValue ?? "HTTP\(answer.status)"
                let reason = DeliveryOutcome.Reason(
                    "fcm.oauth.\(error)",
                    "the OAuth token exchange answered \(answer.status) \(error)"
                )
                return .failure(
                    answer.status >= 500 || answer.status == 429
                        ? .retry(reason, after: answer.retryAfter) : .configuration(reason)
                )
            }
            // Google's tokens live an hour. At most a day: an endpoint answering 10^16 seconds
            // overflowed this sum, which trapped. (A lifetime under the refresh margin, 0 or negative
            // included, makes the next call fetch a new token, as it should.)
            let bounded = min(max(lifetime, 0), 86_400)
            return .success((token, Timestamp(epochMilliseconds: now.epochMilliseconds + bounded * 1000)))
        }
    }
}

/// FCM HTTP v1: `POST /v1/projects/{project}/messages:send` with an OAuth2 access token, refreshed
/// once when FCM answers 401.
public final class FCMClient: Sendable {
    public struct Credential: Sendable {
        public var account: ServiceAccount
        /// The app ids (Android packages, iOS bundle ids) this project sends for; empty: any.
        public var apps: Set<String>

        public init(account: ServiceAccount, apps: Set<String> = []) {
            self.account = account
            self.apps = apps
        }
    }

    public struct Configuration: Sendable {
        public var credentials: [Credential]
        public var baseURL = "https://fcm.googleapis.com"
        public var requestTimeout = Duration.seconds(10)
        /// How long connecting to FCM may take.
        public var connectTimeout = Duration.seconds(5)
        public var concurrency = 256

        public init(credentials: [Credential]) {
            self.credentials = credentials
        }
    }

    struct Project: Sendable {
        let credential: Credential
        let accessToken: FCMAccessToken
        let client: HTTPClient
        let limiter: ConcurrencyLimiter
    }

    let configuration: Configuration
    let projects: [Project]

    public init(configuration: Configuration, clock: any HeraldClock, extraTrustRootsPEM: String?) throws {
        self.configuration = configuration
        projects = try configuration.credentials.map { credential in
            let client = try ProviderTransport.makeClient(
                extraTrustRootsPEM: extraTrustRootsPEM,
                connectTimeout: configuration.connectTimeout
            )
            return Project(
                credential: credential,
                accessToken: FCMAccessToken(
                    account: credential.account,
                    clock: clock,
                    client: client,
                    timeout: configuration.requestTimeout
                ),
                client: client,
                limiter: ConcurrencyLimiter(limit: configuration.concurrency)
            )
        }
    }

    /// The access-token cache of the project that sends for `app`.
    public func accessToken(for app: String) -> FCMAccessToken? { project(for: app)?.accessToken }

    func project(for app: String) -> Project? {
        projects.first { $0.credential.apps.contains(app) } ?? projects.first { $0.credential.apps.isEmpty }
    }

    public func send(_ message: OutboundMessage) async -> DeliveryOutcome {
        guard let project = project(for: message.app) else {
            return .configuration(
                .init("fcm.no_project", "no FCM service account is configured for app \(message.app)")
            )
        }
        return await project.limiter.withPermit {
            let url =
                "\(configuration.baseURL)/v1/projects/\(project.credential.account.projectID)/\(message.request.path)"
            var attempt = 0
            while true {
                attempt += 1
                let token: String
                switch await project.accessToken.token() {
                case .success(let value): token = value
                case .failure(let outcome): return outcome
                }
                let headers =
                    [("authorization", "Bearer \(token)")] + message.request.headers.map { ($0.name, $0.value) }
                switch await ProviderTransport.post(
                    project.client,
                    url: url,
                    headers: headers,
                    body: message.request.body,
                    timeout: configuration.requestTimeout
                ) {
                case .failure(let outcome):
                    return outcome
                case .success(let answer):
                    if answer.status == 401, attempt == 1 {
                        project.accessToken.invalidate(token)
                        continue
                    }
                    let error = (try? JSONParser().parse(answer.body))?["error"]
                    var errorCode: String?
                    if case .array(let details)? = error?["details"] {
                        errorCode = details.lazy.compactMap { $0["errorCode"]?.stringValue }.first
                    }
                    return Classification.fcm(
                        status: answer.status,
                        errorCode: errorCode,
                        rpcStatus: error?["status"]?.stringValue,
                        retryAfter: answer.retryAfter
                    )
                }
            }
        }
    }

    public func shutdown() async {
        for project in projects { try? await project.client.shutdown() }
    }
}
