import HeraldHTTP2
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
/// `frames` (the default).
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

    /// How long a TCP connection may take to come up: the same as the async-http-client transport.
    static let connectTimeout = TimeAmount.seconds(5)

    /// Connects, negotiates `h2` over TLS and sends the connection preface.
    static func connect(
        host: String,
        port: Int,
        tls: TLSConfiguration,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        connectTimeout: TimeAmount = connectTimeout,
        receiveWindow: Int = HTTP2FrameClientHandler.targetConnectionWindow
    ) async throws -> HTTP2FrameConnection {
        var tls = tls
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let serverHostname = host.first?.isNumber == true ? nil : host
        let goingAway = GoAwayFlag()
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(connectTimeout)
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
                        HTTP2FrameClientHandler(targetConnectionWindow: receiveWindow) { goingAway.set() }
                    )
                }
            }
            .connect(host: host, port: port)
            .get()
        return HTTP2FrameConnection(channel: channel, authority: "\(host):\(port)", goingAway: goingAway)
    }

    /// One request, ready to send: its header block (pseudo-headers included) and body.
    struct Request: Sendable {
        var headers: HPACKHeaders
        var body: ByteBuffer
    }

    /// What became of one request of a batch, and the seconds from its write to its answer.
    struct Outcome: Sendable {
        var result: Result<Answer, any Error>
        var seconds: Double
    }

    /// A `method` request for `path` on this connection.
    ///
    /// The path and the headers named in `unindexed` (values new on every request, such as an id)
    /// stay out of HPACK's dynamic table. Indexed, each would push older entries out of the 4 KiB
    /// table within a few requests, and the headers that never change (a provider token of a few
    /// hundred bytes) would be Huffman-coded and sent in full again instead of as one index byte.
    func makeRequest(
        method: String = "POST",
        path: String,
        headers: [(String, String)],
        unindexed: [String] = [],
        body: ByteBuffer
    ) -> Request {
        makeRequest(method: method, path: path, headerCount: headers.count, body: body) { block in
            for (name, value) in headers {
                block.add(name: name, value: value, indexing: unindexed.contains(name) ? .nonIndexable : .indexable)
            }
        }
    }

    /// A `method` request for `path` whose headers (`headerCount` of them) `addHeaders` adds after
    /// the pseudo-headers, straight into the header block: no list of pairs made for each request.
    func makeRequest(
        method: String = "POST",
        path: String,
        headerCount: Int,
        body: ByteBuffer,
        headers addHeaders: (inout HPACKHeaders) -> Void
    ) -> Request {
        var hpack = HPACKHeaders()
        hpack.reserveCapacity(headerCount + 4)
        hpack.add(name: ":method", value: method)
        hpack.add(name: ":scheme", value: "https")
        hpack.add(name: ":authority", value: authority)
        hpack.add(name: ":path", value: path, indexing: .nonIndexable)
        addHeaders(&hpack)
        return Request(headers: hpack, body: body)
    }

    /// Sends one request and waits for its whole answer, or fails at `deadline`.
    func request(
        method: String = "POST",
        path: String,
        headers: [(String, String)],
        unindexed: [String] = [],
        body: ByteBuffer,
        deadline: NIODeadline
    ) async throws -> Answer {
        let request = makeRequest(method: method, path: path, headers: headers, unindexed: unindexed, body: body)
        return try await send([request], deadline: deadline)[0].result.get()
    }

    /// Sends `requests` together and waits until each has its answer or has failed (at `deadline`
    /// at the latest): one outcome per request, in order.
    ///
    /// The batch crosses to the event loop once and comes back once, however many requests it
    /// holds; sent one by one, each request is a hop to the event loop and a task woken on the
    /// way back, which on a busy machine cost more than writing its frames.
    func send(_ requests: [Request], deadline: NIODeadline) async -> [Outcome] {
        guard !requests.isEmpty else { return [] }
        let promise = channel.eventLoop.makePromise(of: [Outcome].self)
        let batch = HTTP2FrameClientHandler.Batch(requests: requests, deadline: deadline, promise: promise)
        // A batch the handler never saw (the channel already closed) fails here; one it took is
        // completed by the handler, and completing it again changes nothing.
        channel.writeAndFlush(batch).whenFailure { error in
            promise.succeed(Array(repeating: Outcome(result: .failure(error), seconds: 0), count: requests.count))
        }
        do {
            return try await promise.futureResult.get()
        } catch {
            return Array(repeating: Outcome(result: .failure(error), seconds: 0), count: requests.count)
        }
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
    typealias OutboundIn = Batch
    typealias OutboundOut = HTTP2Frame

    /// Requests written together; `promise` gets their outcomes once every one is answered or failed.
    struct Batch: Sendable {
        var requests: [HTTP2FrameConnection.Request]
        var deadline: NIODeadline
        var promise: EventLoopPromise<[HTTP2FrameConnection.Outcome]>
    }

    /// A batch's outcomes as they come in, on the event loop.
    private final class Pending {
        var outcomes: [HTTP2FrameConnection.Outcome]
        var remaining: Int
        let promise: EventLoopPromise<[HTTP2FrameConnection.Outcome]>
        let written: NIODeadline

        init(count: Int, promise: EventLoopPromise<[HTTP2FrameConnection.Outcome]>, written: NIODeadline) {
            outcomes = Array(
                repeating: .init(result: .failure(HTTP2FrameConnection.ConnectionError.closed), seconds: 0),
                count: count
            )
            remaining = count
            self.promise = promise
            self.written = written
        }

        func finish(_ index: Int, _ result: Result<HTTP2FrameConnection.Answer, any Error>) {
            let nanoseconds = (NIODeadline.now() - written).nanoseconds
            outcomes[index] = .init(result: result, seconds: Double(nanoseconds) / 1e9)
            remaining -= 1
            if remaining == 0 { promise.succeed(outcomes) }
        }
    }

    private struct Stream {
        var pending: Pending
        var index: Int
        var deadline: NIODeadline
        var status: Int?
        var headers = HPACKHeaders()
        var body: ByteBuffer?

        mutating func receive(_ block: HPACKHeaders) {
            if status == nil, let status = block.first(name: ":status").flatMap({ Int($0) }) {
                // 1xx answers are informational; the final status comes later.
                if status >= 200 { self.status = status }
            }
            // Most answers are one header block: kept as it came, not copied into another.
            if headers.isEmpty { headers = block } else { headers.add(contentsOf: block) }
        }

        mutating func receive(_ chunk: inout ByteBuffer) {
            if body == nil { body = chunk } else { body!.writeBuffer(&chunk) }
        }
    }

    /// How often streams past their deadline are looked for: one timer for the connection rather
    /// than one per request, which would be scheduled and cancelled on every call.
    static let deadlineSweepInterval = TimeAmount.milliseconds(100)

    /// The connection-level receive window kept open by default: a WINDOW_UPDATE per 512 KiB of
    /// answers' bodies (every APNs error has one).
    static let targetConnectionWindow = 1 << 20

    /// HTTP/2 stream ids are 31 bits, and a client's are odd: the last one it may open.
    static let lastStreamID = Int(Int32.max)
    /// Past this stream id the connection takes no new work from the pool (which then connects
    /// afresh) and closes once its streams are answered; the ids left cover batches already on
    /// their way to it. At 20,000 calls/s one connection gets here in about 15 hours.
    static let retiringStreamID = lastStreamID - 2 * (1 << 20)

    private var streams: [HTTP2StreamID: Stream] = [:]
    // An `Int`, not the wire's `Int32`: it goes past the last id, once, when a connection retires.
    private var nextStreamID: Int
    private let retiringStreamID: Int
    private var goingAway = false
    private var closing = false
    private var deadlineSweep: RepeatedTask?
    /// A flush is scheduled on the event loop and has not run yet.
    private var flushScheduled = false
    /// Answers' bodies count against it, and it is topped up here: there is no multiplexer to do it.
    private var receiveWindow: ConnectionReceiveWindow
    private let onGoAway: @Sendable () -> Void

    /// - Parameters:
    ///   - firstStreamID: the id of the first request (tests start near the end of the ids).
    ///   - retiringStreamID: the id past which the connection retires (see ``retiringStreamID``).
    ///   - targetConnectionWindow: the receive window kept open (see ``targetConnectionWindow``).
    init(
        firstStreamID: Int = 1,
        retiringStreamID: Int = HTTP2FrameClientHandler.retiringStreamID,
        targetConnectionWindow: Int = HTTP2FrameClientHandler.targetConnectionWindow,
        onGoAway: @escaping @Sendable () -> Void = {}
    ) {
        precondition(firstStreamID % 2 == 1, "client stream ids are odd")
        self.nextStreamID = firstStreamID
        self.retiringStreamID = retiringStreamID
        self.receiveWindow = ConnectionReceiveWindow(target: targetConnectionWindow)
        self.onGoAway = onGoAway
    }

    /// Stops taking new batches: the pool replaces the connection, which closes once drained.
    private func retire() {
        guard !goingAway else { return }
        goingAway = true
        onGoAway()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let batch = unwrapOutboundIn(data)
        let pending = Pending(count: batch.requests.count, promise: batch.promise, written: .now())
        // A batch that would need ids past the last one is refused whole (it is retried like any
        // call refused by a closing connection), and the connection retires.
        if nextStreamID + 2 * (batch.requests.count - 1) > Self.lastStreamID { retire() }
        guard !goingAway, !batch.requests.isEmpty else {
            for index in batch.requests.indices {
                pending.finish(index, .failure(HTTP2FrameConnection.ConnectionError.goingAway))
            }
            if batch.requests.isEmpty { batch.promise.succeed([]) }
            promise?.succeed()
            closeIfDrained(context: context)
            return
        }
        if deadlineSweep == nil { startDeadlineSweep(context: context) }
        // Frames are written in order, so the last one's write stands for the batch. If it fails
        // (the connection went down under it), the batch's streams still unanswered fail here:
        // once the channel is inactive nothing else would ever finish them.
        let first = nextStreamID
        let written = context.eventLoop.makePromise(of: Void.self)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        written.futureResult.whenComplete { [last = first + 2 * (batch.requests.count - 1)] result in
            if case .failure(let error) = result {
                let handler = bound.value
                for raw in stride(from: first, through: last, by: 2) { handler.fail(HTTP2StreamID(raw), error) }
            }
            promise?.completeWith(result)
        }
        for (index, request) in batch.requests.enumerated() {
            let last = index == batch.requests.count - 1
            let id = HTTP2StreamID(nextStreamID)
            nextStreamID += 2
            streams[id] = Stream(pending: pending, index: index, deadline: batch.deadline)
            let hasBody = request.body.readableBytes > 0
            context.write(
                wrapOutboundOut(
                    HTTP2Frame(streamID: id, payload: .headers(.init(headers: request.headers, endStream: !hasBody)))
                ),
                promise: last && !hasBody ? written : nil
            )
            if hasBody {
                context.write(
                    wrapOutboundOut(
                        HTTP2Frame(
                            streamID: id,
                            payload: .data(.init(data: .byteBuffer(request.body), endStream: true))
                        )
                    ),
                    promise: last ? written : nil
                )
            }
        }
        if nextStreamID > retiringStreamID { retire() }
    }

    /// Batches arrive one by one from the tasks making them, each asking for a flush. Flushing
    /// each at once made a TLS record and a `write` call per batch; the flush instead runs once
    /// the event loop has taken every batch already queued for it, so a burst leaves in a few
    /// records and system calls.
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

    /// Opens the connection's receive window once the preface is out (`NIOHTTP2Handler`, before
    /// this handler, sends it when the channel becomes active).
    func channelActive(context: ChannelHandlerContext) {
        if let update = receiveWindow.opening() { context.writeAndFlush(wrapOutboundOut(update), promise: nil) }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if case .data(let payload) = frame.payload, let update = receiveWindow.received(payload) {
            context.writeAndFlush(wrapOutboundOut(update), promise: nil)
        }
        // A stream is changed where it is (`streams[id]?.receive`): copying it out and storing it
        // back retained and released each of its parts for every frame of an answer.
        switch frame.payload {
        case .headers(let headers):
            guard streams[frame.streamID]?.receive(headers.headers) != nil else { return }
            if headers.endStream { complete(frame.streamID) }
        case .data(let payload):
            if case .byteBuffer(var chunk) = payload.data {
                guard streams[frame.streamID]?.receive(&chunk) != nil else { return }
            } else {
                guard streams[frame.streamID] != nil else { return }
            }
            if payload.endStream { complete(frame.streamID) }
        case .rstStream(let code):
            fail(frame.streamID, HTTP2FrameConnection.ConnectionError.reset(code))
        case .goAway(let lastStreamID, _, _):
            retire()
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
            stream.pending.finish(stream.index, .failure(HTTP2FrameConnection.ConnectionError.noStatus))
            return
        }
        let answer = HTTP2FrameConnection.Answer(
            status: status,
            headers: stream.headers,
            body: stream.body ?? ByteBuffer()
        )
        stream.pending.finish(stream.index, .success(answer))
    }

    private func fail(_ id: HTTP2StreamID, _ error: any Error) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        stream.pending.finish(stream.index, .failure(error))
    }
}

/// Whether a connection's server sent GOAWAY, readable from any thread.
final class GoAwayFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
