import HeraldHTTP2
import NIOCore
import NIOHPACK
import NIOHTTP2

/// Serves the simulator over one HTTP/2 connection frame by frame: a request is the HEADERS and
/// DATA frames of its stream, its answer is written on the same stream.
///
/// swift-nio-http2's multiplexer would make a child channel, a pipeline and an HTTP/1 translation
/// for every stream: about half of what an APNs call cost the simulator. Sender benchmarks share
/// the machine's cores with the simulator, so what it spends is taken from the client measured.
final class SimulatorFrameHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// A request whose frames are still coming.
    private struct Incoming {
        var headers: HPACKHeaders
        var body: ByteBuffer?
    }

    let simulator: ProviderSimulator
    private var incoming: [HTTP2StreamID: Incoming] = [:]
    /// Streams whose answer waits out the simulated latency; one the client resets meanwhile is
    /// not answered.
    private var delayed: Set<HTTP2StreamID> = []
    private var receiveWindow = ConnectionReceiveWindow(target: 1 << 20)
    /// Answers were written during this read and wait for `channelReadComplete`'s flush: a burst of
    /// requests is answered in a few TLS records rather than one per answer.
    private var flushPending = false

    init(simulator: ProviderSimulator) {
        self.simulator = simulator
    }

    /// Added once TLS has negotiated `h2`, to a channel already active: `NIOHTTP2Handler` has just
    /// written the preface, and the receive window can open.
    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { openReceiveWindow(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        openReceiveWindow(context: context)
        context.fireChannelActive()
    }

    private func openReceiveWindow(context: ChannelHandlerContext) {
        if let update = receiveWindow.opening() { context.writeAndFlush(wrapOutboundOut(update), promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let id = frame.streamID
        switch frame.payload {
        case .headers(let payload):
            // A second header block on a stream is its trailers.
            if incoming[id] == nil {
                incoming[id] = Incoming(headers: payload.headers)
            } else {
                incoming[id]!.headers.add(contentsOf: payload.headers)
            }
            if payload.endStream { answer(id, context: context) }
        case .data(let payload):
            if let update = receiveWindow.received(payload) {
                context.write(wrapOutboundOut(update), promise: nil)
                flushPending = true
            }
            if case .byteBuffer(var chunk) = payload.data, incoming[id] != nil {
                if incoming[id]!.body == nil {
                    incoming[id]!.body = chunk
                } else {
                    incoming[id]!.body!.writeBuffer(&chunk)
                }
            }
            if payload.endStream { answer(id, context: context) }
        case .rstStream:
            incoming[id] = nil
            delayed.remove(id)
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if flushPending {
            flushPending = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A stream the client broke is forgotten; `NIOHTTP2Handler` has reset it. Anything else
        // broke the connection (it has sent GOAWAY): close it.
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            incoming[streamError.streamID] = nil
            delayed.remove(streamError.streamID)
            return
        }
        context.close(promise: nil)
    }

    private func answer(_ id: HTTP2StreamID, context: ChannelHandlerContext) {
        guard let request = incoming.removeValue(forKey: id) else { return }
        var method = ""
        var path = ""
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(request.headers.count)
        for (name, value, _) in request.headers {
            switch name {
            case ":method": method = value
            case ":path": path = String(value.prefix { $0 != "?" })
            default: if !name.hasPrefix(":") { headers.append((name, value)) }
            }
        }
        let response = simulator.respond(
            to: SimulatorRequest(
                method: method,
                path: path,
                headers: headers,
                body: request.body.map { Array($0.readableBytesView) } ?? []
            )
        )
        guard response.delayNanoseconds > 0 else {
            write(response, on: id, context: context)
            flushPending = true
            return
        }
        delayed.insert(id)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: .nanoseconds(response.delayNanoseconds)) {
            let (handler, context) = bound.value
            guard handler.delayed.remove(id) != nil else { return }
            handler.write(response, on: id, context: context)
            context.flush()
        }
    }

    private func write(_ response: SimulatorResponse, on id: HTTP2StreamID, context: ChannelHandlerContext) {
        if response.dropsConnection {
            // The stream is reset without an answer: closing the whole connection would also lose
            // answers to requests already accepted, which no sender can tell from requests never
            // received.
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))), promise: nil)
            return
        }
        var headers = HPACKHeaders()
        headers.reserveCapacity(response.headers.count + 2)
        headers.add(name: ":status", value: String(response.status))
        for header in response.headers { headers.add(name: header.name, value: header.value) }
        headers.add(name: "content-length", value: String(response.body.count))
        let hasBody = !response.body.isEmpty
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers, endStream: !hasBody)))),
            promise: nil
        )
        if hasBody {
            let body = context.channel.allocator.buffer(bytes: response.body)
            context.write(
                wrapOutboundOut(
                    HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(body), endStream: true)))
                ),
                promise: nil
            )
        }
    }
}
