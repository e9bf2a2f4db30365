import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// One HTTP/2 connection over TLS, driven frame by frame: requests are HEADERS and DATA frames on
/// new stream ids of one `NIOHTTP2Handler`, answers are matched to them by stream id. Unlike a
/// stream-channel client it builds no channel or pipeline per request, which is most of a
/// request's cost in swift-nio-http2. Used by the APNs client when `providers.apns.transport` is
/// `frames` (experimental).
final class HTTP2FrameConnection: Sendable {
    struct Answer: Sendable {
        var status: Int
        var headers: HPACKHeaders
        var body: ByteBuffer
    }

    enum ConnectionError: Error, Equatable {
        case closed
        case reset(HTTP2ErrorCode)
        case goingAway
        case timedOut
        case noStatus
    }

    let channel: any Channel
    let authority: String
    /// Set when the server sent GOAWAY: no new streams may start on this connection.
    private let goingAway: GoAwayFlag

    private init(channel: any Channel, authority: String, goingAway: GoAwayFlag) {
        self.channel = channel
        self.authority = authority
        self.goingAway = goingAway
    }

    /// Connects, negotiates `h2` over TLS and sends the connection preface.
    static func connect(
        host: String,
        port: Int,
        tls: TLSConfiguration,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> HTTP2FrameConnection {
        var tls = tls
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let serverHostname = host.first?.isNumber == true ? nil : host
        let goingAway = GoAwayFlag()
        let channel = try await ClientBootstrap(group: group)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        try NIOSSLClientHandler(context: context, serverHostname: serverHostname)
                    )
                    // Header blocks are not validated: the requests' headers are ours, and the
                    // answers' headers are only read for a few known names, never passed on.
                    try channel.pipeline.syncOperations.addHandler(
                        NIOHTTP2Handler(
                            mode: .client,
                            initialSettings: [
                                HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000),
                                HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
                            ],
                            headerBlockValidation: .disabled
                        )
                    )
                    try channel.pipeline.syncOperations.addHandler(
                        HTTP2FrameClientHandler { goingAway.set() }
                    )
                }
            }
            .connect(host: host, port: port)
            .get()
        return HTTP2FrameConnection(channel: channel, authority: "\(host):\(port)", goingAway: goingAway)
    }

    /// Sends one request and waits for its whole answer, or fails at `deadline`.
    ///
    /// The path and the headers named in `unindexed` (values new on every request, such as an id)
    /// stay out of HPACK's dynamic table. Indexed, each would push older entries out of the 4 KiB
    /// table within a few requests, and the headers that never change (a provider token of a few
    /// hundred bytes) would be Huffman-coded and sent in full again instead of as one index byte.
    func request(
        method: String = "POST",
        path: String,
        headers: [(String, String)],
        unindexed: [String] = [],
        body: ByteBuffer,
        deadline: NIODeadline
    ) async throws -> Answer {
        var hpack = HPACKHeaders()
        hpack.reserveCapacity(headers.count + 4)
        hpack.add(name: ":method", value: method)
        hpack.add(name: ":scheme", value: "https")
        hpack.add(name: ":authority", value: authority)
        hpack.add(name: ":path", value: path, indexing: .nonIndexable)
        for (name, value) in headers {
            hpack.add(name: name, value: value, indexing: unindexed.contains(name) ? .nonIndexable : .indexable)
        }
        let promise = channel.eventLoop.makePromise(of: Answer.self)
        let request = HTTP2FrameClientHandler.Request(headers: hpack, body: body, deadline: deadline, promise: promise)
        channel.writeAndFlush(request).cascadeFailure(to: promise)
        return try await promise.futureResult.get()
    }

    var isActive: Bool { channel.isActive }

    /// Open, and not told by the server to stop starting streams.
    var isUsable: Bool { channel.isActive && !goingAway.isSet }

    func close() async {
        try? await channel.close()
    }
}

/// Matches answers to requests by stream id, on the connection's event loop.
final class HTTP2FrameClientHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundIn = Request
    typealias OutboundOut = HTTP2Frame

    struct Request {
        var headers: HPACKHeaders
        var body: ByteBuffer
        var deadline: NIODeadline
        var promise: EventLoopPromise<HTTP2FrameConnection.Answer>
    }

    private struct Stream {
        var promise: EventLoopPromise<HTTP2FrameConnection.Answer>
        var deadline: NIODeadline
        var status: Int?
        var headers = HPACKHeaders()
        var body: ByteBuffer?
    }

    /// How often streams past their deadline are looked for: one timer for the connection rather
    /// than one per request, which would be scheduled and cancelled on every call.
    static let deadlineSweepInterval = TimeAmount.milliseconds(100)

    private var streams: [HTTP2StreamID: Stream] = [:]
    private var nextStreamID: Int32 = 1
    private var goingAway = false
    private var closing = false
    private var deadlineSweep: RepeatedTask?
    /// A flush is scheduled on the event loop and has not run yet.
    private var flushScheduled = false
    private let onGoAway: @Sendable () -> Void

    init(onGoAway: @escaping @Sendable () -> Void = {}) {
        self.onGoAway = onGoAway
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        guard !goingAway else {
            request.promise.fail(HTTP2FrameConnection.ConnectionError.goingAway)
            promise?.succeed()
            return
        }
        let id = HTTP2StreamID(nextStreamID)
        nextStreamID += 2
        if deadlineSweep == nil { startDeadlineSweep(context: context) }
        streams[id] = Stream(promise: request.promise, deadline: request.deadline)
        let hasBody = request.body.readableBytes > 0
        context.write(
            wrapOutboundOut(
                HTTP2Frame(streamID: id, payload: .headers(.init(headers: request.headers, endStream: !hasBody)))
            ),
            promise: hasBody ? nil : promise
        )
        if hasBody {
            context.write(
                wrapOutboundOut(
                    HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(request.body), endStream: true)))
                ),
                promise: promise
            )
        }
    }

    /// Requests arrive one by one from the tasks making them, each asking for a flush. Flushing
    /// each at once made a TLS record and a `write` call per request; the flush instead runs once
    /// the event loop has taken every request already queued for it, so a burst of requests
    /// leaves in a few records and system calls.
    func flush(context: ChannelHandlerContext) {
        guard !flushScheduled else { return }
        flushScheduled = true
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (handler, context) = bound.value
            handler.flushScheduled = false
            context.flush()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            guard var stream = streams[frame.streamID] else { return }
            if stream.status == nil, let status = headers.headers.first(name: ":status").flatMap({ Int($0) }) {
                // 1xx answers are informational; the final status comes later.
                if status >= 200 { stream.status = status }
            }
            stream.headers.add(contentsOf: headers.headers)
            streams[frame.streamID] = stream
            if headers.endStream { complete(frame.streamID) }
        case .data(let payload):
            guard var stream = streams[frame.streamID] else { return }
            if case .byteBuffer(var chunk) = payload.data {
                if stream.body == nil { stream.body = chunk } else { stream.body!.writeBuffer(&chunk) }
            }
            streams[frame.streamID] = stream
            if payload.endStream { complete(frame.streamID) }
        case .rstStream(let code):
            fail(frame.streamID, HTTP2FrameConnection.ConnectionError.reset(code))
        case .goAway(let lastStreamID, _, _):
            goingAway = true
            onGoAway()
            for id in streams.keys where id > lastStreamID { fail(id, HTTP2FrameConnection.ConnectionError.goingAway) }
        default:
            break
        }
        closeIfDrained(context: context)
    }

    /// After GOAWAY the pool connects afresh and forgets this connection; once the streams the
    /// server still answers are done, nothing would ever close it, so it closes itself.
    private func closeIfDrained(context: ChannelHandlerContext) {
        guard goingAway, streams.isEmpty, !closing, context.channel.isActive else { return }
        closing = true
        context.close(promise: nil)
    }

    private func startDeadlineSweep(context: ChannelHandlerContext) {
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        deadlineSweep = context.eventLoop.scheduleRepeatedTask(
            initialDelay: Self.deadlineSweepInterval,
            delay: Self.deadlineSweepInterval
        ) { _ in
            let (handler, context) = bound.value
            let now = NIODeadline.now()
            let expired = handler.streams.compactMap { $0.value.deadline <= now ? $0.key : nil }
            guard !expired.isEmpty else { return }
            for id in expired {
                handler.fail(id, HTTP2FrameConnection.ConnectionError.timedOut)
                context.write(
                    handler.wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))),
                    promise: nil
                )
            }
            context.flush()
            handler.closeIfDrained(context: context)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadlineSweep?.cancel()
        deadlineSweep = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadlineSweep?.cancel()
        deadlineSweep = nil
        goingAway = true
        onGoAway()
        for id in Array(streams.keys) { fail(id, HTTP2FrameConnection.ConnectionError.closed) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            fail(streamError.streamID, streamError)
            return
        }
        // A connection-level error: every open stream fails, and the connection closes.
        for id in Array(streams.keys) { fail(id, error) }
        context.close(promise: nil)
    }

    private func complete(_ id: HTTP2StreamID) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        guard let status = stream.status else {
            stream.promise.fail(HTTP2FrameConnection.ConnectionError.noStatus)
            return
        }
        stream.promise.succeed(.init(status: status, headers: stream.headers, body: stream.body ?? ByteBuffer()))
    }

    private func fail(_ id: HTTP2StreamID, _ error: any Error) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        stream.promise.fail(error)
    }
}

/// Whether a connection's server sent GOAWAY, readable from any thread.
final class GoAwayFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
