import Foundation
import HeraldKafka

#if canImport(Glibc)
import Glibc
#endif

/// A cluster a benchmark produces to and consumes from.
protocol BenchmarkCluster: Sendable {
    var bootstrapServers: String { get }
    /// Creates the topic; a cluster that cannot create topics later checks that it was created at
    /// start with this many partitions.
    func ensureTopic(_ name: String, partitions: Int) throws
}

extension EmbeddedKafkaCluster: BenchmarkCluster {
    func ensureTopic(_ name: String, partitions: Int) throws {
        try createTopic(name, partitions: partitions)
    }
}

/// The embedded broker in a child process (`herald broker`), so that a benchmark measures the
/// worker's memory apart from the broker's, as a deployment has them: the mock cluster keeps up to
/// about 5 MiB of every partition it holds, which is not the worker's.
///
/// The mock cluster has no Admin API, so every topic is created when the process starts.
final class BrokerProcess: BenchmarkCluster, @unchecked Sendable {
    // @unchecked: `process` is only read after `init`; Foundation's Process is thread-safe for that.
    private let process: Process
    /// The write end of the broker's standard input, never written: when this process ends, however
    /// it ends, the kernel closes it and the broker stops (`--stop-at-end-of-input`).
    private let input: Pipe
    let bootstrapServers: String
    private let topics: [String: Int]

    /// Starts `executable broker` with `topics` and waits for its bootstrap servers line.
    init(executable: String, topics: [TopicSpecification]) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments =
            ["broker", "--stop-at-end-of-input", "--log-level", "warning"]
            + topics.flatMap { ["--topic", "\($0.name):\($0.partitions)"] }
        let output = Pipe()
        process.standardOutput = output
        let input = Pipe()
        process.standardInput = input
        // Ctrl-C or SIGTERM to the benchmark stops the broker too, from the moment it exists.
        ChildProcesses.stopOnSignals()
        try process.run()
        ChildProcesses.register(process.processIdentifier)
        let reader = output.fileHandleForReading
        let line = await DedicatedThread.run(name: "herald.broker") { () -> String? in
            var bytes: [UInt8] = []
            while let byte = try? reader.read(upToCount: 1)?.first {
                if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
                bytes.append(byte)
            }
            return nil
        }
        guard let line, !line.isEmpty else {
            process.terminate()
            process.waitUntilExit()
            throw ConfigurationError(
                "the embedded broker process exited (status \(process.terminationStatus)) before serving"
            )
        }
        self.process = process
        self.input = input
        self.bootstrapServers = line
        self.topics = Dictionary(topics.map { ($0.name, $0.partitions) }, uniquingKeysWith: { first, _ in first })
    }

    /// Checks that the topic was created at start-up with this many partitions.
    func ensureTopic(_ name: String, partitions: Int) throws {
        guard topics[name] == partitions else {
            throw ConfigurationError(
                "the embedded broker process was not started with topic \(name):\(partitions); it cannot create topics later"
            )
        }
    }

    /// The broker process's peak resident memory so far (`VmHWM`), in megabytes.
    var peakResidentMegabytes: Double {
        ReplayBenchmark.status("VmHWM", process: "\(process.processIdentifier)")
    }

    /// SIGTERM, and SIGKILL if it is still running after 10 s; waits for it to exit on a thread of
    /// its own, not the cooperative pool.
    func stop() async {
        let process = process
        await DedicatedThread.run(name: "herald.broker") {
            guard process.isRunning else { return }
            process.terminate()
            let deadline = Date().addingTimeInterval(10)
            while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    /// SIGTERM without waiting: for a run that fails and unwinds through a `defer`.
    func terminate() {
        if process.isRunning { process.terminate() }
    }
}
