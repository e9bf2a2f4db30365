import Foundation
import HeraldTestSupport
import Testing

/// The `herald` executable, built beside this test bundle.
func heraldExecutable() throws -> URL {
    let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for candidate in [directory, directory.deletingLastPathComponent()] {
        let url = candidate.appendingPathComponent("herald")
        if FileManager.default.isExecutableFile(atPath: url.path) { return url }
    }
    throw CLIError("the herald executable was not built next to the tests (run `swift build --build-tests`)")
}

struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs a command to completion, with `input` on its standard input if given, and returns its exit
/// status, standard output and standard error. Waits off the cooperative pool (``offPool(_:)``): a
/// `herald bench` command runs for a minute. A command still running after `deadline` is killed
/// (status 9), so that a test of one that may hang fails instead of holding the suite for ever.
func run(
    _ executable: String,
    _ arguments: [String],
    input: String? = nil,
    environment: [String: String] = [:],
    deadline: Duration? = nil
) async throws -> (status: Int32, output: String, error: String) {
    try await offPool {
        try runWaiting(executable, arguments, input: input, environment: environment, deadline: deadline)
    }
}

private func runWaiting(
    _ executable: String,
    _ arguments: [String],
    input: String?,
    environment: [String: String],
    deadline: Duration?
) throws -> (status: Int32, output: String, error: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    let stdin = Pipe()
    let output = Pipe()
    let error = Pipe()
    process.standardInput = input == nil ? FileHandle.nullDevice : stdin
    process.standardOutput = output
    process.standardError = error
    try process.run()
    if let deadline {
        let pid = process.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(deadline / .milliseconds(1)))) {
            if process.isRunning { kill(pid, SIGKILL) }
        }
    }
    if let input { stdin.writeInBackground(input) }
    // Read standard error on another thread so that neither pipe can fill up and block the process.
    let errorData = SharedData()
    let reader = Thread { errorData.value = error.fileHandleForReading.readDataToEndOfFile() }
    reader.start()
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    while errorData.value == nil { Thread.sleep(forTimeInterval: 0.01) }
    return (
        process.terminationStatus, String(decoding: outputData, as: UTF8.self),
        String(decoding: errorData.value ?? Data(), as: UTF8.self)
    )
}

/// Data handed from a reader thread to the test.
final class SharedData: @unchecked Sendable {
    // @unchecked: written once by the reader thread, read by the test only after it is set; the
    // lock makes the hand-over visible.
    private let lock = NSLock()
    private var stored: Data?
    var value: Data? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

@Suite("herald broker", .timeLimit(.minutes(1)))
struct BrokerCommandTests {
    @Test("prints its bootstrap servers first, serves external clients (kcat), and exits 0 on SIGTERM")
    func brokerServesKcat() async throws {
        let broker = Process()
        broker.executableURL = try heraldExecutable()
        broker.arguments = ["broker", "--brokers", "2", "--topic", "orders.events:6", "--topic", "herald.outbound:3"]
        let output = Pipe()
        broker.standardOutput = output
        broker.standardError = FileHandle.nullDevice
        try broker.run()
        defer { if broker.isRunning { broker.terminate() } }

        // The first line on standard output is the bootstrap string.
        var firstLine = Data()
        while !firstLine.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            firstLine.append(chunk)
        }
        let bootstrap = String(decoding: firstLine, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
        #expect(bootstrap.split(separator: ",").count == 2)
        #expect(bootstrap.hasPrefix("127.0.0.1:"))

        let kcat = try await run("/usr/bin/kcat", ["-L", "-J", "-b", bootstrap, "-m", "10"])
        #expect(kcat.status == 0)
        let metadata = try JSONSerialization.jsonObject(with: Data(kcat.output.utf8)) as? [String: Any]
        let topics = (metadata?["topics"] as? [[String: Any]]) ?? []
        let partitions = Dictionary(
            uniqueKeysWithValues: topics.compactMap { topic -> (String, Int)? in
                guard let name = topic["topic"] as? String, let list = topic["partitions"] as? [Any] else { return nil }
                return (name, list.count)
            }
        )
        #expect(partitions["orders.events"] == 6)
        #expect(partitions["herald.outbound"] == 3)
        #expect((metadata?["brokers"] as? [Any])?.count == 2)

        broker.terminate()  // SIGTERM
        broker.waitUntilExit()
        #expect(broker.terminationReason == .exit)
        #expect(broker.terminationStatus == 0)
    }

    @Test("with --stop-at-end-of-input it stops when the other end of its standard input closes")
    func stopsAtEndOfInput() async throws {
        let broker = Process()
        broker.executableURL = try heraldExecutable()
        broker.arguments = ["broker", "--stop-at-end-of-input", "--topic", "orders.events:1"]
        let input = Pipe()
        let output = Pipe()
        broker.standardInput = input
        broker.standardOutput = output
        broker.standardError = FileHandle.nullDevice
        try broker.run()
        defer { if broker.isRunning { broker.terminate() } }
        // Serving: the bootstrap line is out.
        #expect(!output.fileHandleForReading.availableData.isEmpty)
        #expect(broker.isRunning)
        // What the kernel does for a parent that is killed outright: its end of the pipe closes.
        try input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(20)
        while broker.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!broker.isRunning, "the broker outlived the end of its input")
        broker.waitUntilExit()
        #expect(broker.terminationReason == .exit)
        #expect(broker.terminationStatus == 0)
    }

    @Test("a bad --topic fails before starting, naming the option")
    func badTopic() async throws {
        let result = try await run(try heraldExecutable().path, ["broker", "--topic", "orders:zero"])
        #expect(result.status != 0)
        #expect(result.error.contains("--topic 'orders:zero'"))
        #expect(result.output.isEmpty, "no bootstrap line: nothing started")
    }
}
