import Foundation
import HeraldEvents
import HeraldHTTP2
import HeraldTestSupport
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization
import Testing

@testable import HeraldSender
@testable import HeraldSimulator

@Suite("HTTP/2 frame-level connection")
struct HTTP2FrameConnectionTests {
    @Test("requests on one connection get their own answers, concurrently; a dropped request fails alone")
    func concurrentRequests() async throws {
        try await SimulatorFixture.with(faults: try FaultProfile(parsing: "drop=0.2,seed=5")) { fixture in
            let (connection, token) = try await Self.connect(fixture)
            let messages = try (0..<200).map {
                try SimulatorFixture.message(.apns, token: ProviderAnswerTests.apnsToken($0 + 1), id: "f-\($0)")
            }
            let results = await withTaskGroup(of: (Int, Result<HTTP2FrameConnection.Answer, any Error>).self) { group in
                for (index, message) in messages.enumerated() {
                    group.addTask {
                        let result = await Result {
                            try await connection.request(
                                path: message.request.path,
                                headers: [("authorization", "bearer \(token)")]
                                    + message.request.headers.map { ($0.name, $0.value) },
                                body: ByteBuffer(bytes: message.request.body),
                                deadline: .now() + .seconds(10)
                            )
                        }
                        return (index, result)
                    }
                }
                return await group.reduce(into: [Int: Result<HTTP2FrameConnection.Answer, any Error>]()) {
                    $0[$1.0] = $1.1
                }
            }
            var delivered = 0
            for (index, message) in messages.enumerated() {
                let apnsID = message.request.headers.first { $0.name == "apns-id" }!.value
                switch results[index]! {
                case .success(let answer):
                    #expect(answer.status == 200)
                    #expect(answer.headers.first(name: "apns-id") == apnsID)
                    #expect(fixture.simulator.acceptedCount(id: apnsID) == 1)
                    delivered += 1
                case .failure:
                    #expect(fixture.simulator.acceptedCount(id: apnsID) == 0)
                }
            }
            #expect(delivered == fixture.simulator.statistics.accepted)
            #expect(delivered > 100 && delivered < 200)
            #expect(connection.isActive, "a reset stream leaves the connection up")
            await connection.close()
        }
    }

    /// The connection's receive window starts at 65,535 bytes and only WINDOW_UPDATE frames on
    /// stream 0 open it again. Answers with bodies (every APNs error has one) past that much would
    /// stall a client that never sends them: each later request would time out on a live connection.
    @Test(
        "answers with bodies, more than the initial connection window in all, keep coming on one connection",
        arguments: [HTTP2FrameClientHandler.targetConnectionWindow, 16 * 1024]
    )
    func connectionWindowIsReplenished(receiveWindow: Int) async throws {
        try await SimulatorFixture.with { fixture in
            // 16 KiB, under the initial window: kept open by frequent top-ups rather than one at the start.
            let (connection, token) = try await Self.connect(fixture, receiveWindow: receiveWindow)
            let valid = try SimulatorFixture.message(.apns, token: ProviderAnswerTests.apnsToken(1), id: "w")
            let headers =
                [("authorization", "bearer \(token)")] + valid.request.headers.map { ($0.name, $0.value) }
            // A token APNs cannot parse: `400 {"reason":"BadDeviceToken"}`, 27 bytes of body each.
            let request = connection.makeRequest(
                path: "/3/device/not-a-token",
                headers: headers,
                body: ByteBuffer(bytes: valid.request.body)
            )
            var bodyBytes = 0
            for _ in 0..<13 {
                let outcomes = await connection.send(
                    Array(repeating: request, count: 200),
                    deadline: .now() + .seconds(20)
                )
                for outcome in outcomes {
                    let answer = try outcome.result.get()
                    #expect(answer.status == 400)
                    bodyBytes += answer.body.readableBytes
                }
            }
            #expect(bodyBytes == 2_600 * 27)
            #expect(bodyBytes > ConnectionReceiveWindow.initial)
            #expect(connection.isActive)
            await connection.close()
        }
    }

    static func tls(_ fixture: SimulatorFixture) throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMBytes(Array(fixture.authorityPEM.utf8)))]
        return tls
    }

    /// A connection to the fixture's simulator, trusting its certificate, and a provider token it accepts.
    static func connect(
        _ fixture: SimulatorFixture,
        receiveWindow: Int = HTTP2FrameClientHandler.targetConnectionWindow
    ) async throws -> (HTTP2FrameConnection, token: String) {
        let port = Int(fixture.baseURL.split(separator: ":").last!)!
        let connection = try await HTTP2FrameConnection.connect(
            host: "127.0.0.1",
            port: port,
            tls: tls(fixture),
            receiveWindow: receiveWindow
        )
        return (connection, try fixture.apnsKey.token(issuedAt: fixture.senderClock.now()))
    }

    @Test("a request past its deadline fails as timed out and is reset; the connection carries on")
    func deadline() async throws {
        let faults = try FaultProfile(parsing: "latency=1500ms..1500ms")
        try await SimulatorFixture.with(faults: faults) { fixture in
            let (connection, token) = try await Self.connect(fixture)
            func send(_ index: Int, within limit: TimeAmount) async throws -> HTTP2FrameConnection.Answer {
                let message = try SimulatorFixture.message(
                    .apns,
                    token: ProviderAnswerTests.apnsToken(index),
                    id: "d-\(index)"
                )
                return try await connection.request(
                    path: message.request.path,
                    headers: [("authorization", "bearer \(token)")]
                        + message.request.headers.map { ($0.name, $0.value) },
                    body: ByteBuffer(bytes: message.request.body),
                    deadline: .now() + limit
                )
            }
            let started = NIODeadline.now()
            await #expect(throws: HTTP2FrameConnection.ConnectionError.timedOut) {
                _ = try await send(1, within: .milliseconds(200))
            }
            // Not before the deadline: the answer would have taken 1.5 s.
            #expect(NIODeadline.now() - started >= .milliseconds(200))
            #expect(connection.isActive, "a timed-out stream leaves the connection up")
            let answer = try await send(2, within: .seconds(30))
            #expect(answer.status == 200)
            await connection.close()
        }
    }

    @Test(
        "a pool uses its connections in turn, each on its own event loop, replaces a closed one and refuses after closing"
    )
    func pool() async throws {
        try await SimulatorFixture.with { fixture in
            let origin = try #require(HTTP2FramePool.Origin(url: fixture.baseURL))
            #expect(origin.host == "127.0.0.1")
            #expect(HTTP2FramePool.Origin(url: "http://127.0.0.1:80") == nil)
            #expect(HTTP2FramePool.Origin(url: "https://api.push.apple.com")?.port == 443)
            let pool = HTTP2FramePool(tls: try Self.tls(fixture), connectionsPerOrigin: 2)
            let first = try await pool.connection(to: origin)
            let second = try await pool.connection(to: origin)
            #expect(first !== second)
            if Array(MultiThreadedEventLoopGroup.singleton.makeIterator()).count > 1 {
                #expect(first.channel.eventLoop !== second.channel.eventLoop)
            }
            #expect(try await pool.connection(to: origin) === first)
            #expect(try await pool.connection(to: origin) === second)

            await first.close()
            let replacement = try await pool.connection(to: origin)
            #expect(replacement !== first && replacement !== second)
            #expect(replacement.isUsable)
            #expect(try await pool.connection(to: origin) === second)

            await pool.closeAll()
            #expect(!second.isActive && !replacement.isActive)
            await #expect(throws: HTTP2FramePool.PoolError.self) { _ = try await pool.connection(to: origin) }
        }
    }
}

extension HTTP2FrameConnectionTests {
    @Test(
        "after GOAWAY the stream the server still answers completes, a new one is refused, and the drained connection closes itself"
    )
    func goAwayDrains() async throws {
        let certificates = try SimulatorTLS.generate()
        let context = try NIOSSLContext(configuration: certificates.serverConfiguration())
        let server = GoAwayServer.State()
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .server))
                    try channel.pipeline.syncOperations.addHandler(GoAwayServer(state: server))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [
            .certificates(try NIOSSLCertificate.fromPEMBytes(Array(certificates.authorityPEM.utf8)))
        ]
        let connection = try await HTTP2FrameConnection.connect(
            host: "127.0.0.1",
            port: listener.localAddress!.port!,
            tls: tls
        )
        func request(_ path: String) async throws -> HTTP2FrameConnection.Answer {
            try await connection.request(
                path: path,
                headers: [("authorization", "bearer provider-token"), ("apns-id", UUID().uuidString)],
                unindexed: ["apns-id"],
                body: ByteBuffer(string: "{}"),
                deadline: .now() + .seconds(30)
            )
        }
        // The server answers GOAWAY to the first request at once, and the request itself when released.
        let first = Task { try await request("/first") }
        #expect(await eventually { !connection.isUsable })
        #expect(connection.isActive, "open while the first stream is unanswered")
        await #expect(throws: HTTP2FrameConnection.ConnectionError.goingAway) { _ = try await request("/second") }
        #expect(await eventually { server.holdsAnswer })
        server.release()
        #expect(try await first.value.status == 200)
        #expect(await eventually { !connection.isActive }, "closed once its last stream was answered")
        #expect(await eventually { server.closedByClient })
        #expect(server.requests == 1)
        // Values new on every request stay out of HPACK's dynamic table; the rest may be indexed.
        let indexing = server.indexing
        #expect(indexing[":path"] == .nonIndexable && indexing["apns-id"] == .nonIndexable)
        #expect(indexing["authorization"] == .indexable)
        try await listener.close()
    }
}

/// An HTTP/2 server that sends GOAWAY on its first request, answers that request when the test
/// releases it, and never closes a connection itself.
final class GoAwayServer: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    final class State: Sendable {
        private let value = Mutex(
            (
                requests: 0, closedByClient: false, indexing: [String: HPACKIndexing](),
                answer: (@Sendable () -> Void)?.none
            )
        )
        /// How the first request's headers came, by name.
        var indexing: [String: HPACKIndexing] { value.withLock { $0.indexing } }
        func received(_ headers: HPACKHeaders) {
            value.withLock { state in
                for (name, _, indexing) in headers where state.indexing[name] == nil { state.indexing[name] = indexing }
            }
        }
        var requests: Int { value.withLock { $0.requests } }
        var closedByClient: Bool { value.withLock { $0.closedByClient } }
        func request() { value.withLock { $0.requests += 1 } }
        func closed() { value.withLock { $0.closedByClient = true } }
        /// Keeps the first request's answer until the test releases it, so the client is seen
        /// between GOAWAY and the answer however slowly the test's tasks are scheduled.
        func hold(_ answer: @escaping @Sendable () -> Void) { value.withLock { $0.answer = answer } }
        var holdsAnswer: Bool { value.withLock { $0.answer != nil } }
        func release() {
            value.withLock { state in
                defer { state.answer = nil }
                return state.answer
            }?()
        }
    }

    let state: State
    init(state: State) { self.state = state }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if case .headers(let headers) = frame.payload { state.received(headers.headers) }
        guard case .data(let payload) = frame.payload, payload.endStream else { return }
        state.request()
        let id = frame.streamID
        context.writeAndFlush(
            wrapOutboundOut(
                HTTP2Frame(
                    streamID: .rootStream,
                    payload: .goAway(lastStreamID: id, errorCode: .noError, opaqueData: nil)
                )
            ),
            promise: nil
        )
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        state.hold {
            eventLoop.execute {
                let (handler, context) = bound.value
                let headers = HPACKHeaders([(":status", "200")])
                context.writeAndFlush(
                    handler.wrapOutboundOut(
                        HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers, endStream: true)))
                    ),
                    promise: nil
                )
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        state.closed()
        context.fireChannelInactive()
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

extension HTTP2FrameConnectionTests {
    @Test("a burst of requests leaves the handler with one flush, once the event loop has taken them all")
    func burstIsFlushedOnce() throws {
        let flushes = FlushCounter()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(flushes)
        try channel.pipeline.syncOperations.addHandler(HTTP2FrameClientHandler())
        var headers = HPACKHeaders()
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":path", value: "/3/device/abc")
        for _ in 0..<5 {
            let batch = HTTP2FrameClientHandler.Batch(
                requests: [.init(headers: headers, body: ByteBuffer(string: "{}"))],
                deadline: .now() + .seconds(10),
                promise: channel.eventLoop.makePromise()
            )
            channel.pipeline.syncOperations.writeAndFlush(NIOAny(batch), promise: nil)
        }
        // Each request is written at once (headers and body), the flush waits for the loop.
        #expect(flushes.writes == 10)
        #expect(flushes.flushes == 0)
        channel.embeddedEventLoop.run()
        #expect(flushes.flushes == 1)
        // Each request on its own stream, in order: its headers, then its body ending the stream.
        var frames: [String] = []
        while let frame = try channel.readOutbound(as: HTTP2Frame.self) {
            switch frame.payload {
            case .headers(let headers): frames.append("\(frame.streamID) headers end=\(headers.endStream)")
            case .data(let data): frames.append("\(frame.streamID) data end=\(data.endStream)")
            default: frames.append("\(frame.streamID) other")
            }
        }
        #expect(
            frames
                == [1, 3, 5, 7, 9].flatMap {
                    ["HTTP2StreamID(\($0)) headers end=false", "HTTP2StreamID(\($0)) data end=true"]
                }
        )
        _ = try? channel.finish(acceptAlreadyClosed: true)
    }
}

extension HTTP2FrameConnectionTests {
    /// A batch of `count` small requests, and the promise its outcomes come to.
    static func batch(_ count: Int, on channel: EmbeddedChannel) -> HTTP2FrameClientHandler.Batch {
        var headers = HPACKHeaders()
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":path", value: "/3/device/abc")
        return HTTP2FrameClientHandler.Batch(
            requests: Array(repeating: .init(headers: headers, body: ByteBuffer(string: "{}")), count: count),
            deadline: .now() + .seconds(10),
            promise: channel.eventLoop.makePromise()
        )
    }

    /// The stream ids of the HEADERS frames the handler wrote.
    static func openedStreams(_ channel: EmbeddedChannel) throws -> [Int] {
        var ids: [Int] = []
        while let frame = try channel.readOutbound(as: HTTP2Frame.self) {
            if case .headers = frame.payload { ids.append(Int(Int32(frame.streamID))) }
        }
        return ids
    }

    @Test(
        "near the last stream id a connection retires: the pool is told, and a batch that would not fit is refused whole"
    )
    func streamIDsRunOut() throws {
        let retired = GoAwayFlag()
        let last = HTTP2FrameClientHandler.lastStreamID
        let channel = EmbeddedChannel()
        // Four ids left: 2^31 - 7, -5, -3 and -1 (the last).
        try channel.pipeline.syncOperations.addHandler(
            HTTP2FrameClientHandler(firstStreamID: last - 6, retiringStreamID: last) { retired.set() }
        )
        let first = Self.batch(2, on: channel)
        channel.pipeline.syncOperations.writeAndFlush(NIOAny(first), promise: nil)
        channel.embeddedEventLoop.run()
        #expect(try Self.openedStreams(channel) == [last - 6, last - 4])
        #expect(!retired.isSet)

        // Three more would need an id past the last: none is opened, each fails as refused by a
        // closing connection (retried), and the pool is told to connect afresh. No trap.
        let second = Self.batch(3, on: channel)
        channel.pipeline.syncOperations.writeAndFlush(NIOAny(second), promise: nil)
        channel.embeddedEventLoop.run()
        #expect(try Self.openedStreams(channel).isEmpty)
        #expect(retired.isSet)
        let refused = try second.promise.futureResult.wait()
        #expect(refused.count == 3)
        for outcome in refused {
            #expect(throws: HTTP2FrameConnection.ConnectionError.goingAway) { try outcome.result.get() }
        }
        _ = try? channel.finish(acceptAlreadyClosed: true)
    }

    @Test("a connection past its retiring stream id takes no new batch, and closes once its streams are answered")
    func retiresPastThreshold() throws {
        let retired = GoAwayFlag()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            HTTP2FrameClientHandler(firstStreamID: 101, retiringStreamID: 103) { retired.set() }
        )
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        let first = Self.batch(2, on: channel)
        channel.pipeline.syncOperations.writeAndFlush(NIOAny(first), promise: nil)
        channel.embeddedEventLoop.run()
        #expect(try Self.openedStreams(channel) == [101, 103])
        #expect(retired.isSet)
        #expect(channel.isActive)

        let second = Self.batch(1, on: channel)
        channel.pipeline.syncOperations.writeAndFlush(NIOAny(second), promise: nil)
        channel.embeddedEventLoop.run()
        #expect(try Self.openedStreams(channel).isEmpty)
        #expect(throws: HTTP2FrameConnection.ConnectionError.goingAway) {
            try second.promise.futureResult.wait()[0].result.get()
        }

        // The first batch's answers come in; then the connection closes itself.
        for id in [101, 103] {
            var headers = HPACKHeaders()
            headers.add(name: ":status", value: "200")
            try channel.writeInbound(
                HTTP2Frame(streamID: HTTP2StreamID(id), payload: .headers(.init(headers: headers, endStream: true)))
            )
        }
        let answered = try first.promise.futureResult.wait()
        #expect(answered.map { (try? $0.result.get())?.status } == [200, 200])
        channel.embeddedEventLoop.run()
        #expect(!channel.isActive)
        _ = try? channel.finish(acceptAlreadyClosed: true)
    }
}

/// Counts the writes and flushes that pass it towards the network.
final class FlushCounter: ChannelOutboundHandler {
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private(set) var writes = 0
    private(set) var flushes = 0

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        writes += 1
        context.write(data, promise: promise)
    }

    func flush(context: ChannelHandlerContext) {
        flushes += 1
        context.flush()
    }
}

extension HTTP2FrameConnectionTests {
    @Test(
        "a connection closed under a batch fails every unanswered request of it; a batch on a closed connection fails at once"
    )
    func closedUnderABatch() async throws {
        // Answers take 20 s: the batch is still out when the connection closes, and closing (TLS
        // close_notify both ways) has seconds to finish on a loaded machine before an answer could
        // have come. With 1.5 s answers a CI run under load took 1.44 s to see the failures; the
        // whole sender suite running beside it, 2.8 s.
        try await SimulatorFixture.with(faults: try FaultProfile(parsing: "latency=20000ms..20000ms")) { fixture in
            let (connection, token) = try await Self.connect(fixture)
            let requests = try (0..<5).map { index in
                let message = try SimulatorFixture.message(
                    .apns,
                    token: ProviderAnswerTests.apnsToken(index + 1),
                    id: "c-\(index)"
                )
                return connection.makeRequest(
                    path: message.request.path,
                    headers: [("authorization", "bearer \(token)")]
                        + message.request.headers.map { ($0.name, $0.value) },
                    body: ByteBuffer(bytes: message.request.body)
                )
            }
            let started = ContinuousClock.now
            let sending = Task { await connection.send(requests, deadline: .now() + .seconds(30)) }
            try await Task.sleep(for: .milliseconds(300))
            await connection.close()
            let outcomes = await sending.value
            #expect(outcomes.count == 5)
            // Whichever comes first fails them: the channel going inactive, or the batch's write
            // failing as the connection closes under it.
            for outcome in outcomes {
                guard case .failure(let error) = outcome.result else {
                    Issue.record("answered after the connection closed")
                    continue
                }
                let closed =
                    (error as? HTTP2FrameConnection.ConnectionError) == .closed
                    || (error as? ChannelError) == .ioOnClosedChannel
                #expect(closed, "\(error)")
                #expect(ProviderTransport.describe(error).contains("closed"), "\(ProviderTransport.describe(error))")
            }
            // Failed when the connection closed, not at the 30 s deadline nor after the 20 s answers.
            #expect(ContinuousClock.now - started < .seconds(15))

            let late = await connection.send(Array(requests.prefix(2)), deadline: .now() + .seconds(30))
            #expect(late.count == 2)
            #expect(late.allSatisfy { (try? $0.result.get()) == nil })
        }
    }
}
