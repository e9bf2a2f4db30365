import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// `connectionsPerOrigin` frame-level connections per origin, used in turn, each connected on first
/// use and again after it closes or the server sends GOAWAY (the old one closes itself once its
/// last stream is answered): the APNs client's `frames` transport.
///
/// More than one connection spreads the calls over the event loops on both ends: one HTTP/2
/// connection is one event loop's work in the client and in the server, however many streams it
/// carries. Taking a connection is a lock and an array index; only connecting waits.
final class HTTP2FramePool: Sendable {
    struct Origin: Hashable, Sendable {
        var host: String
        var port: Int

        /// `https://host[:port]`, from a URL; nil if it is not an https URL.
        init?(url: String) {
            guard url.hasPrefix("https://") else { return nil }
            let rest = url.dropFirst("https://".count).prefix { $0 != "/" }
            if let colon = rest.lastIndex(of: ":") {
                guard let port = Int(rest[rest.index(after: colon)...]) else { return nil }
                (host, self.port) = (String(rest[..<colon]), port)
            } else {
                (host, port) = (String(rest), 443)
            }
        }
    }

    private struct Slot {
        var connection: HTTP2FrameConnection?
        var connecting: Task<HTTP2FrameConnection, any Error>?
    }

    private struct State {
        var slots: [Origin: [Slot]] = [:]
        var turn = 0
        var closed = false
    }

    private let state = Mutex(State())
    let tls: TLSConfiguration
    let connectionsPerOrigin: Int
    /// How long a connection's TCP connect may take.
    let connectTimeout: TimeAmount
    /// Connection `i` of an origin runs on `eventLoops[i % count]`, so the connections share the
    /// work out rather than landing on whichever loop the group hands out next.
    private let eventLoops: [any EventLoop]

    init(
        tls: TLSConfiguration,
        connectionsPerOrigin: Int = 1,
        connectTimeout: Duration = .seconds(5),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.tls = tls
        self.connectTimeout = .nanoseconds(Int64(connectTimeout.nanoseconds))
        self.connectionsPerOrigin = max(connectionsPerOrigin, 1)
        self.eventLoops = Array(group.makeIterator())
    }

    enum PoolError: Error {
        case closed
    }

    /// A live connection to `origin`, the next one in turn.
    func connection(to origin: Origin) async throws -> HTTP2FrameConnection {
        enum Next {
            case ready(HTTP2FrameConnection)
            case connecting(Task<HTTP2FrameConnection, any Error>)
        }
        let count = connectionsPerOrigin
        let next: Next = try state.withLock { state in
            guard !state.closed else { throw PoolError.closed }
            let index = state.turn % count
            state.turn &+= 1
            var slots = state.slots[origin] ?? Array(repeating: Slot(), count: count)
            if let connection = slots[index].connection, connection.isUsable { return .ready(connection) }
            if let connecting = slots[index].connecting { return .connecting(connecting) }
            let tls = tls
            let connectTimeout = connectTimeout
            let eventLoop = eventLoops[index % eventLoops.count]
            let task = Task {
                let connection: HTTP2FrameConnection
                do {
                    connection = try await HTTP2FrameConnection.connect(
                        host: origin.host,
                        port: origin.port,
                        tls: tls,
                        group: eventLoop,
                        connectTimeout: connectTimeout
                    )
                } catch {
                    self.connected(nil, origin: origin, index: index)
                    throw error
                }
                self.connected(connection, origin: origin, index: index)
                return connection
            }
            slots[index] = Slot(connection: nil, connecting: task)
            state.slots[origin] = slots
            return .connecting(task)
        }
        switch next {
        case .ready(let connection): return connection
        case .connecting(let task): return try await task.value
        }
    }

    private func connected(_ connection: HTTP2FrameConnection?, origin: Origin, index: Int) {
        state.withLock { state in
            // Closed meanwhile: `closeAll` waits for this connection and closes it.
            guard !state.closed else { return }
            state.slots[origin]?[index] = Slot(connection: connection, connecting: nil)
        }
    }

    func closeAll() async {
        let (connections, connecting) = state.withLock { state in
            state.closed = true
            let slots = state.slots.values.joined()
            state.slots = [:]
            return (slots.compactMap(\.connection), slots.compactMap(\.connecting))
        }
        for connection in connections { await connection.close() }
        for task in connecting { await (try? task.value)?.close() }
    }
}
