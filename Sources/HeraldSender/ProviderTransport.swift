import AsyncHTTPClient
import DequeModule
import HeraldEvents
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// A provider's answer as bytes: its status, body and `Retry-After`, the one header any
/// classification reads (the rest are not copied out of the transport's header block).
struct ProviderAnswer: Sendable {
    var status: Int
    var body: [UInt8]
    /// `Retry-After` in seconds (the only form APNs, FCM and Expo send), at most a day.
    var retryAfter: Duration?

    /// The longest `Retry-After` honoured. More would hold the retry's partition (everything
    /// behind it waits its turn) for longer than a notification is worth; and a value such as
    /// 10^16 seconds overflowed the retry's not-before time, which trapped: the sender crashed on
    /// one odd header.
    static let maximumRetryAfterSeconds: Int64 = 86_400

    init(status: Int, body: [UInt8], retryAfter: String?) {
        self.status = status
        self.body = body
        self.retryAfter = Self.retryAfter(retryAfter)
    }

    /// A `Retry-After` of whole seconds, capped at ``maximumRetryAfterSeconds``; `nil` for anything
    /// else (a negative number, an HTTP date, which no provider of ours sends, or garbage).
    static func retryAfter(_ text: String?) -> Duration? {
        guard let text, let seconds = UInt64(text.trimmingCharacters(in: .whitespaces)) else { return nil }
        return .seconds(Int64(min(seconds, UInt64(maximumRetryAfterSeconds))))
    }
}

/// HTTP to providers: one `HTTPClient` per credential (so each APNs key or Firebase project has its
/// own connections), HTTP/2 where the provider offers it, a deadline per request.
public enum ProviderTransport {
    /// The largest answer read; providers' answers are a few hundred bytes.
    static let maximumAnswerBytes = 64 * 1024

    /// A client that trusts the system's roots, plus `extraTrustRootsPEM` (the provider simulator's
    /// authority) if given.
    static func tlsConfiguration(extraTrustRootsPEM: String?) throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let extraTrustRootsPEM {
            let certificates = try NIOSSLCertificate.fromPEMBytes(Array(extraTrustRootsPEM.utf8))
            tls.additionalTrustRoots = [.certificates(certificates)]
        }
        return tls
    }

    /// How many certificates `pem` (the text of `providers.trust_roots_file`) holds: checked when
    /// the configuration is read, so that a file of something else is refused naming its key,
    /// rather than stopping the sender later with TLS's own error.
    ///
    /// - Throws: if a certificate in it cannot be read, or it holds none.
    public static func trustRootCount(pem: String) throws -> Int {
        let certificates = try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8))
        guard !certificates.isEmpty else { throw NIOSSLError.failedToLoadCertificate }
        return certificates.count
    }

    static func makeClient(extraTrustRootsPEM: String?, connectTimeout: Duration) throws -> HTTPClient {
        let tls = try tlsConfiguration(extraTrustRootsPEM: extraTrustRootsPEM)
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            timeout: HTTPClient.Configuration.Timeout(connect: .nanoseconds(connectTimeout.nanoseconds))
        )
        configuration.httpVersion = .automatic
        configuration.connectionPool = HTTPClient.Configuration.ConnectionPool(
            idleTimeout: .minutes(10),
            concurrentHTTP1ConnectionsPerHostSoftLimit: 16
        )
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    /// POSTs `body` to `url`. A failure to get any answer comes back as a retryable transport outcome.
    static func post(
        _ client: HTTPClient,
        url: String,
        headers: [(String, String)],
        body: [UInt8],
        timeout: Duration
    ) async -> Result<ProviderAnswer, DeliveryOutcome> {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await client.execute(request, timeout: .nanoseconds(timeout.nanoseconds))
            var buffer = try await response.body.collect(upTo: maximumAnswerBytes)
            let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
            return .success(
                ProviderAnswer(
                    status: Int(response.status.code),
                    body: bytes,
                    retryAfter: response.headers.first(name: "retry-after")
                )
            )
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            return .failure(Classification.transport("timeout", "no answer within \(timeout)"))
        } catch let error as HTTPClientError where error == .connectTimeout {
            return .failure(Classification.transport("connect_timeout", "could not connect within the deadline"))
        } catch let error as NIOSSLError {
            return .failure(Classification.transport("tls", "TLS failed: \(error)"))
        } catch {
            // Refused, reset or dropped connections: the request may or may not have arrived.
            return .failure(Classification.transport("connection", "the connection failed: \(describe(error))"))
        }
    }

    /// What went wrong with a connection, for logs and dead-letter headers: the full description
    /// of the transport libraries' own errors, which name the cause (`Remote connection closed`, an
    /// errno, the provider's address) and never the request, and only the type of anything else,
    /// whose description might carry a URL — and an APNs URL holds the device token.
    static func describe(_ error: any Error) -> String {
        switch error {
        // Its short description leaves out associated values, such as an invalid header's value.
        case let error as HTTPClientError: "HTTPClientError: \(error.shortDescription)"
        case let error as IOError: "\(error)"
        case let error as ChannelError: "ChannelError.\(error)"
        case let error as NIOConnectionError: "\(error)"
        // A stream the server reset: worded as async-http-client words it, so the cause reads the
        // same whichever transport carried the call.
        case HTTP2FrameConnection.ConnectionError.reset(let code): "HTTP/2 stream closed (\(code))"
        case let error as HTTP2FrameConnection.ConnectionError: "HTTP/2 connection \(error)"
        case let error as NIOHTTP2Errors.StreamClosed: "HTTP/2 stream closed (\(error.errorCode))"
        default: "\(type(of: error))"
        }
    }
}

extension ProviderTransport {
    /// POSTs `count` requests together over one frame-level connection from `pool` to `origin`
    /// (nil: the configured URL is not an https URL), `request` making the `index`th for the
    /// connection taken: an answer or a failure for each, in order, and the seconds from its write
    /// to its answer.
    static func post(
        _ pool: HTTP2FramePool,
        origin: HTTP2FramePool.Origin?,
        count: Int,
        timeout: Duration,
        request: (_ connection: HTTP2FrameConnection, _ index: Int) -> HTTP2FrameConnection.Request
    ) async -> [(answer: Result<ProviderAnswer, DeliveryOutcome>, seconds: Double)] {
        guard let origin else {
            let outcome = DeliveryOutcome.configuration(.init("transport.bad_url", "not an https URL"))
            return Array(repeating: (.failure(outcome), 0), count: count)
        }
        let connection: HTTP2FrameConnection
        do {
            connection = try await pool.connection(to: origin)
        } catch {
            return Array(repeating: (.failure(frameFailure(error, timeout: timeout)), 0), count: count)
        }
        let outcomes = await connection.send(
            (0..<count).map { request(connection, $0) },
            deadline: .now() + .nanoseconds(timeout.nanoseconds)
        )
        return outcomes.map { outcome in
            switch outcome.result {
            case .success(let answer):
                var buffer = answer.body
                let body = buffer.readBytes(length: buffer.readableBytes) ?? []
                let retryAfter = answer.headers.first(name: "retry-after")
                return (
                    .success(ProviderAnswer(status: answer.status, body: body, retryAfter: retryAfter)), outcome.seconds
                )
            case .failure(let error):
                return (.failure(frameFailure(error, timeout: timeout)), outcome.seconds)
            }
        }
    }

    /// The outcome of a frame-level request that got no answer.
    private static func frameFailure(_ error: any Error, timeout: Duration) -> DeliveryOutcome {
        switch error {
        case HTTP2FrameConnection.ConnectionError.timedOut:
            Classification.transport("timeout", "no answer within \(timeout)")
        case ChannelError.connectTimeout:
            Classification.transport("connect_timeout", "could not connect within the deadline")
        case let error as NIOSSLError:
            Classification.transport("tls", "TLS failed: \(error)")
        default:
            Classification.transport("connection", "the connection failed: \(describe(error))")
        }
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

/// At most `limit` calls in flight; the rest wait their turn in order. Used per provider
/// connection pool, so a slow provider holds back its own calls, not the others'.
final class ConcurrencyLimiter: Sendable {
    private struct State {
        var available: Int
        var waiters: Deque<(count: Int, continuation: CheckedContinuation<Void, Never>)> = []

        /// Takes `count` permits if they are free and nobody waits ahead.
        mutating func take(_ count: Int) -> Bool {
            guard waiters.isEmpty, available >= count else { return false }
            available -= count
            return true
        }
    }

    let limit: Int
    private let state: Mutex<State>

    init(limit: Int) {
        self.limit = max(limit, 1)
        state = Mutex(State(available: max(limit, 1)))
    }

    func withPermit<R: Sendable>(_ body: () async -> R) async -> R {
        await acquire()
        defer { release() }
        return await body()
    }

    /// Waits for `count` permits (at most ``limit``), after everyone already waiting.
    func acquire(_ count: Int = 1) async {
        let count = min(max(count, 1), limit)
        // Free permits are taken without suspending.
        if state.withLock({ $0.take(count) }) { return }
        await withCheckedContinuation { continuation in
            let granted = state.withLock { state in
                if state.take(count) { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if granted { continuation.resume() }
        }
    }

    /// Callers waiting for permits.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Returns `count` permits, as taken by ``acquire(_:)``.
    func release(_ count: Int = 1) {
        let count = min(max(count, 1), limit)
        var ready: [CheckedContinuation<Void, Never>] = []
        state.withLock { state in
            state.available += count
            while let first = state.waiters.first, first.count <= state.available {
                state.available -= first.count
                ready.append(state.waiters.removeFirst().continuation)
            }
        }
        for continuation in ready { continuation.resume() }
    }
}
