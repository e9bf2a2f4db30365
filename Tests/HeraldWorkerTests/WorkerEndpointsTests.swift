import Foundation
import HeraldApp
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldStore
import HeraldTestSupport
import HeraldWorker
import Logging
import Testing

/// GET `url` with curl, waiting off the cooperative pool; returns the status code and body.
func httpGet(_ url: String) async throws -> (status: Int, body: String) {
    try await offPool { try httpGetWaiting(url) }
}

private func httpGetWaiting(_ url: String) throws -> (status: Int, body: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    process.arguments = ["-s", "-w", "\n%{http_code}", url]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
}

@Suite("Worker /metrics and /health", .serialized)
struct WorkerEndpointsTests {
    @Test(
        "ready once partitions are assigned; /metrics counts events, decisions, outbound, dead letters, lag and purged ledger entries"
    )
    func endpoints() async throws {
        let pipeline = try Pipeline()
        let store = try SQLiteStore(path: ":memory:")
        // Decided longer ago than the ledger's retention (7 days): purged when the worker starts.
        let stale = (0..<3).map { index in
            DecisionRequest(
                key: DecisionKey(
                    eventID: "stale-\(index)",
                    kind: "order.confirmed",
                    recipient: "u-stale",
                    eventTime: nil
                ),
                plan: Policy.defaults.plan(
                    Policy.Input(
                        kind: "order.confirmed",
                        category: "transactional",
                        recipient: "u-stale",
                        deviceCount: 1,
                        preferences: Preferences()
                    ),
                    now: Timestamp(rfc3339: "2026-11-13T08:00:00Z")!
                ),
                decidedAt: Timestamp(rfc3339: "2026-11-13T08:00:00Z")!,
                payload: "{}"
            )
        }
        _ = try await store.decide(stale)
        let worker = try pipeline.worker(store: store, clock: TestClock("2026-11-21T08:00:00Z"))
        let endpoints = try HTTPEndpoints(
            listen: "127.0.0.1:0",
            worker: worker,
            sender: nil,
            directoryCache: { store.directoryCacheStatistics },
            logger: Logger(label: "test")
        )
        try await withRunningServices([endpoints]) {
            let base = "http://127.0.0.1:\(await endpoints.port())"
            #expect(try await httpGet(base + "/health/live").status == 200)
            #expect(try await httpGet(base + "/health/ready").status == 503, "no partitions before the worker runs")
            #expect(try await httpGet(base + "/nothing").status == 404)
            try await withRunningServices([worker]) {
                try await eventually("the worker is ready") { try await httpGet(base + "/health/ready").status == 200 }
                try await registerExampleUsers(pipeline, store)
                // Waited for through the worker's own count (published once the store has applied
                // the changes), not a look-up: the cache then holds only what the changes put there.
                try await eventually("the directory is loaded") {
                    try await httpGet(base + "/metrics").body.contains("herald_directory_changes_total 9")
                }
                try await pipeline.produce(
                    orderEvents(0..<30) + [KafkaProducerRecord(topic: "orders.events", value: KafkaBytes("not json"))]
                )
                let expected = [
                    #"herald_events_consumed_total{type="order.confirmed"} 30"#,
                    #"herald_decisions_total{reason="sent"} 30"#, #"herald_outbound_total{provider="apns"} 10"#,
                    #"herald_outbound_total{provider="fcm"} 10"#, #"herald_outbound_total{provider="expo"} 10"#,
                    #"herald_dead_letters_total{code="event.not_json"} 1"#, #"herald_directory_changes_total 9"#,
                    "herald_decisions_purged_total 3",
                    "# TYPE herald_event_processing_seconds histogram",
                    #"herald_consumer_lag{topic="orders.events",partition="0"}"#,
                    // Every assigned partition has its counter from the start, at 0 until a reset.
                    #"herald_kafka_offset_resets_total{consumer="worker",topic="orders.events",partition="0"} 0"#,
                    #"herald_build_info{version=""# + DeadLetter.heraldVersion + "\"",
                ]
                // Events are counted when decided, decisions and outbound when built (a moment later, on
                // another core): wait for all of them.
                var metrics = ""
                do {
                    try await eventually("the metrics show every event, decision and outbound message") {
                        metrics = try await httpGet(base + "/metrics").body
                        return expected.allSatisfy { metrics.contains($0) }
                    }
                } catch {
                    for line in expected { #expect(metrics.contains(line), "\(line) in\n\(metrics)") }
                    throw error
                }
                // Every consumed message (9 directory changes, 31 events) is timed once its records are acknowledged.
                try await eventually("every message timed") {
                    try await httpGet(base + "/metrics").body.contains("herald_event_processing_seconds_count 40")
                }
                // Each example user cached when the worker applied their directory change, so each of
                // the 30 events found its recipient there: not one look-up read SQLite.
                let cache = try await httpGet(base + "/metrics").body.split(separator: "\n")
                func count(_ prefix: String) -> Int? {
                    cache.first { $0.hasPrefix(prefix + " ") }.flatMap { Int($0.split(separator: " ").last ?? "") }
                }
                #expect(count(#"herald_directory_cache_lookups_total{result="miss"}"#) == 0)
                #expect(count(#"herald_directory_cache_lookups_total{result="hit"}"#) ?? 0 >= 30)
                #expect(count("herald_directory_cache_users") == 3)
                #expect(count("herald_directory_cache_capacity") == SQLiteStore.defaultDirectoryCacheCapacity)
                // The purged entries are forgotten: deciding them again is not a redelivery.
                #expect(try await store.decide([stale[0]]).map(\.redelivered) == [false])
            }
        }
    }

    @Test("an address already taken stops the endpoints with an error naming http.listen, not a socket call")
    func addressTaken() async throws {
        let first = try HTTPEndpoints(listen: "127.0.0.1:0", worker: nil, sender: nil, logger: Logger(label: "test"))
        try await withRunningServices([first]) {
            let port = await first.port()
            let second = try HTTPEndpoints(
                listen: "127.0.0.1:\(port)",
                worker: nil,
                sender: nil,
                logger: Logger(label: "test")
            )
            do {
                try await second.run()
                Issue.record("a second server listened on \(port)")
            } catch let error as ConfigurationError {
                #expect(
                    "\(error)"
                        == "configuration: http.listen: cannot listen on 127.0.0.1:\(port): Address already in use"
                )
            }
        }
    }

    @Test("a connection that sends nothing, or half a request, is closed after the idle timeout")
    func idleConnections() async throws {
        let endpoints = try HTTPEndpoints(
            listen: "127.0.0.1:0",
            worker: nil,
            sender: nil,
            logger: Logger(label: "test"),
            idleTimeout: .milliseconds(300)
        )
        try await withRunningServices([endpoints]) {
            let port = await endpoints.port()
            for sent in ["", "GET /metrics HTTP/1.1\r\nHost: herald\r\n"] {
                // Far longer than the timeout: the suite shares the machine's two cores with others.
                let started = ContinuousClock.now
                let end = try await silentConnection(port: port, sending: sent, waiting: 30)
                #expect(end == .closed, "'\(sent)': \(end) after \(ContinuousClock.now - started)")
            }
            #expect(try await httpGet("http://127.0.0.1:\(port)/health/live").status == 200)
        }
    }

    @Test(
        "a silent connection is closed for the client even while a child process holds a copy of the server's descriptor"
    )
    func inheritedDescriptor() async throws {
        let endpoints = try HTTPEndpoints(
            listen: "127.0.0.1:0",
            worker: nil,
            sender: nil,
            logger: Logger(label: "test"),
            idleTimeout: .seconds(1)
        )
        try await withRunningServices([endpoints]) {
            let port = await endpoints.port()
            let started = ContinuousClock.now
            let end = try await onThread {
                let socket = try connectedSocket(port: port)
                defer { close(socket) }
                let request = "GET /health/live HTTP/1.1\r\nHost: herald\r\n\r\n"
                _ = request.withCString { send(socket, $0, strlen($0), 0) }
                guard try receive(socket, until: "live\n", seconds: 30) else { return SilentConnectionEnd.open }
                // Answered: the server has accepted the connection. A child gets a copy of the
                // server's descriptor of it, and no other descriptor of this process (other tests'
                // connections run beside this one).
                guard let server = socketDescriptor(localPort: port, peerPort: try localPort(of: socket)) else {
                    throw TestFailure("the server's descriptor of the connection is not in /proc/self/fd")
                }
                let child = try spawn(["/bin/sleep", "60"], passing: server)
                defer {
                    kill(child, SIGKILL)
                    var status: Int32 = 0
                    while waitpid(child, &status, 0) == -1 && errno == EINTR {}
                }
                return try awaitHangUp(socket, seconds: 30)
            }
            #expect(end == .closed, "\(end) after \(ContinuousClock.now - started)")
        }
    }
}

/// How a connection the client keeps silent ended.
enum SilentConnectionEnd: Equatable, CustomStringConvertible {
    /// The server hung up (or reset the connection, as it does when it closes with unread input).
    case closed
    /// Still open when the wait was over.
    case open
    /// The server sent something, or reading failed otherwise (errno).
    case unexpected(received: Int, errno: Int32)

    var description: String {
        switch self {
        case .closed: "closed"
        case .open: "still open"
        case .unexpected(let received, let error): "recv returned \(received), errno \(error)"
        }
    }
}

/// Connects to 127.0.0.1:`port`, writes `text`, and waits up to `seconds` for the server to end
/// the connection.
func silentConnection(port: Int, sending text: String, waiting seconds: Int) async throws -> SilentConnectionEnd {
    try await onThread {
        let socket = try connectedSocket(port: port)
        defer { close(socket) }
        if !text.isEmpty { _ = text.withCString { send(socket, $0, strlen($0), 0) } }
        return try awaitHangUp(socket, seconds: seconds)
    }
}

/// Runs blocking socket calls on a thread of their own, not the tests' shared pool.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// A blocking TCP socket connected to 127.0.0.1:`port`.
func connectedSocket(port: Int) throws -> Int32 {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw POSIXError(.EIO) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else {
        close(socket)
        throw POSIXError(.ECONNREFUSED)
    }
    return socket
}

/// Reads until what was received ends with `suffix`; false if it did not within `seconds`.
func receive(_ socket: Int32, until suffix: String, seconds: Int) throws -> Bool {
    var received: [UInt8] = []
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, 100) > 0 else { continue }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(socket, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
        guard count > 0 else { return false }
        received += buffer[..<count]
        if received.count >= suffix.utf8.count && received.suffix(suffix.utf8.count).elementsEqual(suffix.utf8) {
            return true
        }
    }
    return false
}

/// Waits up to `seconds` for the server to end the connection, sending nothing.
func awaitHangUp(_ socket: Int32, seconds: Int) throws -> SilentConnectionEnd {
    // poll, not a blocking recv with SO_RCVTIMEO: a signal to the test process (a child's exit, from
    // the tests that run processes) ends such a recv early with EINTR, which an earlier version of
    // this check took for a connection still open.
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, 100)
        if ready < 0 && errno != EINTR { return .unexpected(received: -1, errno: errno) }
        guard ready > 0 else { continue }
        var buffer = [UInt8](repeating: 0, count: 256)
        let received = recv(socket, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        if received == 0 || (received < 0 && errno == ECONNRESET) { return .closed }
        if received < 0 && (errno == EINTR || errno == EAGAIN) { continue }
        return .unexpected(received: received, errno: received < 0 ? errno : 0)
    }
    return .open
}

/// The local port `socket` is bound to.
func localPort(of socket: Int32) throws -> Int {
    var address = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let result = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
    }
    guard result == 0 else { throw POSIXError(.EIO) }
    return Int(UInt16(bigEndian: address.sin_port))
}
