import NIOCore
import NIOSSL

/// One frame-level connection per origin, connected on first use and again after it closes or the
/// server sends GOAWAY: the APNs client's experimental `frames` transport.
actor HTTP2FramePool {
    private var connections: [String: HTTP2FrameConnection] = [:]
    private var connecting: [String: Task<HTTP2FrameConnection, any Error>] = [:]
    let tls: TLSConfiguration

    init(tls: TLSConfiguration) {
        self.tls = tls
    }

    /// A live connection to `https://host:port`.
    func connection(host: String, port: Int) async throws -> HTTP2FrameConnection {
        let key = "\(host):\(port)"
        if let connection = connections[key], connection.isUsable { return connection }
        if let pending = connecting[key] { return try await pending.value }
        let tls = tls
        let task = Task { try await HTTP2FrameConnection.connect(host: host, port: port, tls: tls) }
        connecting[key] = task
        defer { connecting[key] = nil }
        let connection = try await task.value
        connections[key] = connection
        return connection
    }

    func closeAll() async {
        for connection in connections.values { await connection.close() }
        connections = [:]
    }
}

extension HTTP2FramePool {
    /// `https://host[:port]` split, for the pool.
    static func origin(_ url: String) -> (host: String, port: Int)? {
        guard url.hasPrefix("https://") else { return nil }
        let rest = url.dropFirst("https://".count).prefix { $0 != "/" }
        if let colon = rest.lastIndex(of: ":"), let port = Int(rest[rest.index(after: colon)...]) {
            return (String(rest[..<colon]), port)
        }
        return (String(rest), 443)
    }
}
