import HeraldKafka
import HeraldPolicy
import HeraldSender
import HeraldStore
import HeraldWorker
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// `/metrics`, `/health/live` and `/health/ready` over HTTP/1.1, for Prometheus and orchestrators.
/// Answers come from in-memory state only (counters, readiness), so a scrape never waits on Kafka
/// or the store.
public final class HTTPEndpoints: Service, Sendable {
    public struct Response: Sendable {
        public var status: HTTPResponseStatus
        public var contentType: String
        public var body: String

        public init(status: HTTPResponseStatus, contentType: String = "text/plain; charset=utf-8", body: String) {
            self.status = status
            self.contentType = contentType
            self.body = body
        }
    }

    let host: String
    let port: Int
    let respond: @Sendable (String) -> Response
    let logger: Logger
    /// How long a connection may send nothing before it is closed. Each open connection holds a
    /// file descriptor of the process that also holds the Kafka and store connections: clients
    /// that connect and never ask (or never hang up) would otherwise use them all up.
    let idleTimeout: TimeAmount
    private let bound = BoundAddress()

    /// - Parameter listen: `host:port`; port 0 picks a free one (see ``port()``).
    /// - Parameter idleTimeout: how long a connection may be silent before it is closed; longer
    ///   than a Prometheus scrape interval, so a scraper's kept-alive connection usually survives.
    /// - Throws: ``ConfigurationError`` naming `http.listen` if it is not `host:port`.
    public init(
        listen: String,
        logger: Logger,
        idleTimeout: TimeAmount = .seconds(75),
        respond: @escaping @Sendable (String) -> Response
    ) throws {
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]),
            (0...65535).contains(port)
        else {
            throw ConfigurationError("http.listen: expected host:port, got '\(listen)'")
        }
        self.host = String(listen[..<colon])
        self.port = port
        self.respond = respond
        self.logger = logger
        self.idleTimeout = idleTimeout
    }

    /// What `/metrics` reports of a sender.
    public struct SenderState: Sendable {
        public var counters: SenderStatistics.Counters
        public var circuits: [PushProvider: CircuitBreaker.State]
        public var waitingRetries: Int
        public var lag: [TopicPartition: Int64]

        public init(
            counters: SenderStatistics.Counters,
            circuits: [PushProvider: CircuitBreaker.State],
            waitingRetries: Int,
            lag: [TopicPartition: Int64]
        ) {
            self.counters = counters
            self.circuits = circuits
            self.waitingRetries = waitingRetries
            self.lag = lag
        }
    }

    /// The `/metrics` body of a process running the roles given: `herald_build_info`, then each
    /// role's families. `herald_consumer_lag` is one family for both consumers (their topics
    /// differ), so a process running both roles reports the sender's backlog too.
    ///
    /// - Parameter brokers: each consumer's broker connections, by its name (`worker`, `sender`),
    ///   where its statistics have come: `herald_kafka_brokers_up`.
    /// - Parameter offsetResets: each consumer's offset resets per partition, by its name
    ///   (``KafkaConsumer/offsetResets()``): `herald_kafka_offset_resets_total`.
    /// - Parameter directoryCache: SQLite's directory cache, for a worker on SQLite.
    public static func metrics(
        worker: (counters: WorkerStatistics.Counters, lag: [TopicPartition: Int64])?,
        sender: SenderState?,
        brokers: [(consumer: String, connections: KafkaBrokerConnections)] = [],
        offsetResets: [(consumer: String, resets: [TopicPartition: Int])] = [],
        directoryCache: DirectoryCacheStatistics? = nil
    ) -> String {
        var body = BuildInfo.metricLines
        // Were a topic read by both (a configuration error), the larger backlog is the one to see.
        let lag = (worker?.lag ?? [:]).merging(sender?.lag ?? [:]) { max($0, $1) }
        if let worker { body += WorkerMetrics.exposition(worker.counters, lag: lag) }
        if let directoryCache { body += directoryCache.metricLines }
        if let sender {
            body += SenderMetrics.exposition(
                sender.counters,
                circuits: sender.circuits,
                waitingRetries: sender.waitingRetries
            )
            if worker == nil { body += WorkerMetrics.lagLines(lag) }
        }
        if !brokers.isEmpty {
            body += WorkerMetrics.family(
                "herald_kafka_brokers_up",
                .gauge,
                "Connections to Kafka brokers the consumer holds up, from librdkafka's statistics (a bootstrap "
                    + "server has one beside its broker's; 0: it reaches no broker).",
                samples: brokers.map { ("consumer=\"\($0.consumer)\"", $0.connections.up) }
            )
        }
        if !offsetResets.isEmpty {
            let samples = offsetResets.flatMap { consumer, resets in
                resets.sorted { $0.key < $1.key }.map { partition, count in
                    let topic = WorkerMetrics.escape(partition.topic)
                    return ("consumer=\"\(consumer)\",topic=\"\(topic)\",partition=\"\(partition.partition)\"", count)
                }
            }
            body += WorkerMetrics.family(
                "herald_kafka_offset_resets_total",
                .counter,
                "Times librdkafka moved a partition's reading position because the broker no longer had the "
                    + "offset asked for (auto.offset.reset): messages deleted unread by retention, or read again.",
                samples: samples
            )
        }
        return body
    }

    /// The endpoints of a process running a worker, a sender, or both.
    ///
    /// - Parameter directoryCache: the statistics of SQLite's directory cache, for a worker on
    ///   SQLite.
    public convenience init(
        listen: String,
        worker: Worker?,
        sender: Sender?,
        directoryCache: (@Sendable () -> DirectoryCacheStatistics)? = nil,
        logger: Logger,
        idleTimeout: TimeAmount = .seconds(75)
    ) throws {
        try self.init(listen: listen, logger: logger, idleTimeout: idleTimeout) { path in
            switch path {
            case "/metrics":
                let body = Self.metrics(
                    worker: worker.map { ($0.statistics.snapshot, $0.lag()) },
                    sender: sender.map { sender in
                        SenderState(
                            counters: sender.statistics.snapshot,
                            circuits: Dictionary(
                                uniqueKeysWithValues: [PushProvider.apns, .fcm, .expo].map {
                                    ($0, sender.circuitState(of: $0))
                                }
                            ),
                            waitingRetries: sender.waitingRetries,
                            lag: sender.lag()
                        )
                    },
                    brokers: [
                        worker?.brokerConnections.map { ("worker", $0) },
                        sender?.brokerConnections.map { ("sender", $0) },
                    ].compactMap { $0 },
                    offsetResets: [
                        worker.map { ("worker", $0.offsetResets()) },
                        sender.map { ("sender", $0.offsetResets()) },
                    ].compactMap { $0 },
                    directoryCache: worker == nil ? nil : directoryCache?()
                )
                return Response(status: .ok, contentType: WorkerMetrics.contentType, body: body)
            case "/health/live":
                return Response(status: .ok, body: "live\n")
            case "/health/ready":
                var problems: [String] = []
                if let worker, !worker.readiness.isReady {
                    problems.append(
                        "worker: \(worker.readiness.assignedPartitions) partitions assigned, store answering: "
                            + "\(worker.readiness.storeAnswers)"
                    )
                }
                if let sender, sender.assignedPartitions == 0 { problems.append("sender: no partitions assigned") }
                return problems.isEmpty
                    ? Response(status: .ok, body: "ready\n")
                    : Response(
                        status: .serviceUnavailable,
                        body: "not ready: " + problems.joined(separator: "; ") + "\n"
                    )
            default:
                return Response(status: .notFound, body: "not found\n")
            }
        }
    }

    /// The port bound, once ``run()`` has started listening.
    public func port() async -> Int { await bound.value }

    public func run() async throws {
        let respond = respond
        let idleTimeout = idleTimeout
        // A thread of its own, not NIO's shared loops: those carry the store's PostgreSQL connections
        // and the sender's provider connections, and a liveness probe must be answered (and a silent
        // connection closed on time) however busy they are.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            let channel: any Channel
            do {
                channel = try await ServerBootstrap(group: group)
                    .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
                    .childChannelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: idleTimeout))
                            try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                            try channel.pipeline.syncOperations.addHandler(RequestHandler(respond: respond))
                        }
                    }
                    .bind(host: host, port: port)
                    .get()
            } catch {
                // The address is the configuration's: say which key, not NIO's call and errno.
                let reason = (error as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(error)"
                throw ConfigurationError("http.listen: cannot listen on \(host):\(port): \(reason)")
            }
            let port = channel.localAddress?.port ?? self.port
            bound.set(port)
            logger.info("serving /metrics and /health", metadata: ["address": "\(host):\(port)"])
            try? await gracefulShutdown()
            try await channel.close()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        try await group.shutdownGracefully()
    }
}

/// The bound port, handed from ``HTTPEndpoints/run()`` to whoever asks.
private actor BoundAddressStorage {
    var port: Int?
    var waiters: [CheckedContinuation<Int, Never>] = []

    func set(_ port: Int) {
        self.port = port
        for waiter in waiters { waiter.resume(returning: port) }
        waiters = []
    }

    func value() async -> Int {
        if let port { return port }
        return await withCheckedContinuation { waiters.append($0) }
    }
}

private struct BoundAddress: Sendable {
    let storage = BoundAddressStorage()
    func set(_ port: Int) { Task { await storage.set(port) } }
    var value: Int { get async { await storage.value() } }
}

private final class RequestHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let respond: @Sendable (String) -> HTTPEndpoints.Response

    init(respond: @escaping @Sendable (String) -> HTTPEndpoints.Response) {
        self.respond = respond
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Nothing read for the idle timeout (IdleStateHandler): a silent client, or one that sent
        // half a request and stopped.
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            Self.hangUp(context.channel)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let request) = unwrapInboundIn(data) else { return }
        let path = String(request.uri.prefix { $0 != "?" })
        let response =
            request.method == .GET || request.method == .HEAD
            ? respond(path) : HTTPEndpoints.Response(status: .methodNotAllowed, body: "GET only\n")
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: response.contentType)
        headers.add(name: "content-length", value: String(response.body.utf8.count))
        let keepAlive = request.isKeepAlive
        if !keepAlive { headers.add(name: "connection", value: "close") }
        context.write(
            wrapOutboundOut(
                .head(HTTPResponseHead(version: request.version, status: response.status, headers: headers))
            ),
            promise: nil
        )
        if request.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: response.body)))), promise: nil)
        }
        let done = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: done)
        if !keepAlive {
            let channel = context.channel
            done.futureResult.whenComplete { _ in Self.hangUp(channel) }
        }
    }

    /// Ends the connection for the client too. Closing the descriptor alone sends nothing while a
    /// copy of it lives on in a child process (one spawned at the moment it was open, if the process
    /// embedding Herald spawns any): shutting down the output first sends the end of stream whoever
    /// else holds the socket.
    private static func hangUp(_ channel: any Channel) {
        channel.close(mode: .output, promise: nil)
        channel.close(promise: nil)
    }
}
