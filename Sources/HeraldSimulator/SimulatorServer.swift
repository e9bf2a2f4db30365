import HeraldEvents
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization

/// Serves a ``ProviderSimulator`` over TLS: HTTP/2 as APNs and Google speak it, and HTTP/1.1 for
/// clients that do not offer `h2`.
public final class SimulatorServer: Service, Sendable {
    public let simulator: ProviderSimulator
    public let tls: SimulatorTLS
    let host: String
    let requestedPort: Int
    let logger: Logger
    private let bound = Mutex<(port: Int?, waiters: [CheckedContinuation<Int, Never>])>((nil, []))

    /// - Parameter port: 0 picks a free port (see ``port()``).
    public init(
        simulator: ProviderSimulator,
        tls: SimulatorTLS,
        host: String = "127.0.0.1",
        port: Int = 0,
        logger: Logger
    ) {
        self.simulator = simulator
        self.tls = tls
        self.host = host
        self.requestedPort = port
        self.logger = logger
    }

    /// The port bound, once ``run()`` listens.
    public func port() async -> Int {
        await withCheckedContinuation { continuation in
            let port: Int? = bound.withLock { state in
                if state.port == nil { state.waiters.append(continuation) }
                return state.port
            }
            if let port { continuation.resume(returning: port) }
        }
    }

    /// `https://host:port`, once ``run()`` listens.
    public func baseURL() async -> String { "https://\(host):\(await port())" }

    public func run() async throws {
        let context = try NIOSSLContext(configuration: tls.serverConfiguration())
        let simulator = simulator
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                }.flatMap {
                    channel.configureHTTP2SecureUpgrade(
                        h2ChannelConfigurator: { channel in
                            channel.eventLoop.makeCompletedFuture {
                                try channel.pipeline.syncOperations.addHandler(
                                    NIOHTTP2Handler(
                                        mode: .server,
                                        // APNs allows many concurrent streams per connection; so
                                        // does this. The stream window takes a whole request body.
                                        initialSettings: [
                                            HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000),
                                            HTTP2Setting(parameter: .maxHeaderListSize, value: 1 << 16),
                                            HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
                                        ]
                                    )
                                )
                                try channel.pipeline.syncOperations.addHandler(
                                    SimulatorFrameHandler(simulator: simulator)
                                )
                            }
                        },
                        http1ChannelConfigurator: { channel in
                            channel.eventLoop.makeCompletedFuture {
                                try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                                try channel.pipeline.syncOperations.addHandler(
                                    SimulatorHandler(simulator: simulator)
                                )
                            }
                        }
                    )
                }
            }
            .bind(host: host, port: requestedPort)
            .get()
        let port = channel.localAddress?.port ?? requestedPort
        let waiters = bound.withLock { state in
            state.port = port
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: port) }
        logger.info("provider simulator listening", metadata: ["address": "https://\(host):\(port)"])
        try? await gracefulShutdown()
        try await channel.close()
    }
}

/// Collects one HTTP/1.1 request (head and body) and writes the simulator's answer, after its
/// latency. (HTTP/2 is served frame by frame: ``SimulatorFrameHandler``.)
final class SimulatorHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let simulator: ProviderSimulator
    private var head: HTTPRequestHead?
    private var body: ByteBuffer?

    init(simulator: ProviderSimulator) {
        self.simulator = simulator
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = nil
        case .body(var chunk):
            if body == nil { body = chunk } else { body!.writeBuffer(&chunk) }
        case .end:
            guard let head else { return }
            self.head = nil
            let bytes = body.map { Array($0.readableBytesView) } ?? []
            body = nil
            let request = SimulatorRequest(
                method: head.method.rawValue,
                path: String(head.uri.prefix { $0 != "?" }),
                headers: head.headers.map { (name: $0.name.lowercased(), value: $0.value) },
                body: bytes
            )
            let response = simulator.respond(to: request)
            let keepAlive = head.isKeepAlive
            let version = head.version
            if response.delayNanoseconds > 0 {
                let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                context.eventLoop.scheduleTask(in: .nanoseconds(response.delayNanoseconds)) {
                    let (handler, context) = bound.value
                    handler.write(response, version: version, keepAlive: keepAlive, context: context)
                }
            } else {
                write(response, version: version, keepAlive: keepAlive, context: context)
            }
        }
    }

    private func write(
        _ response: SimulatorResponse,
        version: HTTPVersion,
        keepAlive: Bool,
        context: ChannelHandlerContext
    ) {
        if response.dropsConnection {
            // Over HTTP/1.1 a request without an answer is a closed connection.
            context.close(promise: nil)
            return
        }
        var headers = HTTPHeaders()
        for header in response.headers { headers.add(name: header.name, value: header.value) }
        headers.add(name: "content-length", value: String(response.body.count))
        if !keepAlive { headers.add(name: "connection", value: "close") }
        context.write(
            wrapOutboundOut(
                .head(
                    HTTPResponseHead(
                        version: version,
                        status: HTTPResponseStatus(statusCode: response.status),
                        headers: headers
                    )
                )
            ),
            promise: nil
        )
        if !response.body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: response.body)))), promise: nil)
        }
        if !keepAlive {
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        } else {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
