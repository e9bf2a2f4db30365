/// One request as the simulator sees it, whatever the HTTP version.
public struct SimulatorRequest: Sendable {
    public var method: String
    /// The path without the query.
    public var path: String
    /// Header names in lower case, in the order received.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: String, path: String, headers: [(name: String, value: String)], body: [UInt8]) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    func count(of name: String) -> Int { headers.reduce(0) { $0 + ($1.name == name ? 1 : 0) } }
}

/// The simulator's answer: a status, headers and a body, or a dropped connection.
public struct SimulatorResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// Drop the request without an answer: its HTTP/2 stream is reset, an HTTP/1.1 connection closed.
    public var dropsConnection = false
    /// How long to wait before answering.
    public var delayNanoseconds: Int64 = 0

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    static func json(_ status: Int, _ body: [UInt8], headers: [(name: String, value: String)] = []) -> Self {
        SimulatorResponse(status: status, headers: [("content-type", "application/json")] + headers, body: body)
    }

    static let dropped: SimulatorResponse = {
        var response = SimulatorResponse(status: 0)
        response.dropsConnection = true
        return response
    }()
}

/// One notification the simulator accepted (APNs 200, FCM 200, an Expo ticket that will have an
/// `ok` receipt).
public struct SimulatorDelivery: Sendable, Hashable {
    public enum Provider: String, Sendable, Hashable, CaseIterable {
        case apns, fcm, expo
    }

    public var provider: Provider
    /// What identifies the notification to the provider: the `apns-id` header for APNs, the
    /// `herald_notification_id` data value for FCM and Expo (the FCM message name without one).
    public var id: String
    public var token: String
    /// The request body, when the simulator keeps bodies.
    public var body: [UInt8]?
}
