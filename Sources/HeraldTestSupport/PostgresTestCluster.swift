import Foundation
import HeraldKafka
import HeraldStore
import Logging
import Synchronization

/// A throwaway PostgreSQL cluster from the system's `postgresql` package (Debian:
/// `/usr/lib/postgresql/N/bin`), started once per test process on 127.0.0.1 at a free port and
/// stopped when the process exits. Each test gets a database of its own.
///
/// `initdb` refuses to run as root, so as root the cluster belongs to the `postgres` user the
/// package creates, and its tools run through `runuser`.
///
/// Every call that runs a tool (`initdb`, `pg_ctl`, `createdb`) waits for it off the cooperative pool (``offPool(_:)``): tests
/// waiting for the shared cluster's first start (seconds of `initdb` on a loaded machine) held the
/// cooperative pool's threads.
public final class PostgresTestCluster: Sendable {
    public let port: Int
    public let username = "herald"
    let directory: String
    let binaries: String
    let asUser: String?
    /// Whether the server takes TLS connections only (``makeOwn(tls:)``).
    let tls: Bool

    private static let started = Mutex<Result<PostgresTestCluster, PostgresTestClusterError>?>(nil)
    private static let databases = Atomic<Int>(0)

    /// The process's cluster, started on first use.
    public static func shared() async throws -> PostgresTestCluster {
        try await offPool { () throws(PostgresTestClusterError) in try sharedWaiting() }
    }

    /// ``shared()``, waiting on the calling thread while another starts the cluster.
    private static func sharedWaiting() throws(PostgresTestClusterError) -> PostgresTestCluster {
        try started.withLock { state throws(PostgresTestClusterError) in
            if let state { return try state.get() }
            let result = Result { () throws(PostgresTestClusterError) in try PostgresTestCluster() }
            state = result
            if case .success = result {
                atexit {
                    if case .success(let cluster)? = PostgresTestCluster.started.withLock({ $0 }) { cluster.destroy() }
                }
            }
            return try result.get()
        }
    }

    /// - Parameter tls: a certificate (for `localhost` or 127.0.0.1) and key: the server then takes
    ///   TLS connections from 127.0.0.1 only, refusing plain ones.
    private init(tls certificates: TestCertificates? = nil) throws(PostgresTestClusterError) {
        tls = certificates != nil
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        guard let version = versions.compactMap(Int.init).max() else {
            throw PostgresTestClusterError(
                "PostgreSQL is not installed (/usr/lib/postgresql/N/bin): `make test` installs Debian's postgresql"
            )
        }
        binaries = "/usr/lib/postgresql/\(version)/bin"
        asUser = getuid() == 0 ? "postgres" : nil
        directory = NSTemporaryDirectory() + "herald-pg-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        guard let port = LoopbackPort.unused() else {
            throw PostgresTestClusterError("cannot find a free port on 127.0.0.1")
        }
        self.port = port
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw PostgresTestClusterError("cannot create \(directory): \(error)")
        }
        if let asUser { try run("/bin/chown", [asUser, directory], asUser: nil) }
        try run(
            "\(binaries)/initdb",
            ["-D", "\(directory)/data", "-U", username, "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"]
        )
        if let certificates {
            // The server reads its key only if no one else can, and as its own user.
            try write(certificates.certificatePEM, to: "\(directory)/server.crt")
            try write(certificates.keyPEM, to: "\(directory)/server.key")
            try write(
                "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 reject\n",
                to: "\(directory)/data/pg_hba.conf"
            )
        }
        try startWaiting()
    }

    private func write(_ text: String, to path: String) throws(PostgresTestClusterError) {
        do {
            try text.write(toFile: path, atomically: false, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        } catch {
            throw PostgresTestClusterError("cannot write \(path): \(error)")
        }
        if let asUser { try run("/bin/chown", [asUser, path], asUser: nil) }
    }

    /// A cluster of the caller's own, for tests that stop and start its server; ``destroy()``
    /// removes it.
    public static func makeOwn() async throws -> PostgresTestCluster {
        try await offPool { () throws(PostgresTestClusterError) in try PostgresTestCluster() }
    }

    /// A cluster of the caller's own that takes TLS connections only, with `certificates`' server
    /// certificate and key; ``destroy()`` removes it.
    public static func makeOwn(tls certificates: TestCertificates) async throws -> PostgresTestCluster {
        try await offPool { () throws(PostgresTestClusterError) in try PostgresTestCluster(tls: certificates) }
    }

    /// Starts the server (again), on the same port with the same data.
    public func start() async throws {
        try await offPool { () throws(PostgresTestClusterError) in try self.startWaiting() }
    }

    private func startWaiting() throws(PostgresTestClusterError) {
        // Durability does not matter for a throwaway cluster; speed does.
        var options = [
            "-c listen_addresses=127.0.0.1", "-p \(port)", "-k \(directory)", "-c fsync=off",
            "-c synchronous_commit=off", "-c full_page_writes=off", "-c max_connections=200",
        ]
        if tls {
            options += [
                "-c ssl=on", "-c ssl_cert_file=\(directory)/server.crt", "-c ssl_key_file=\(directory)/server.key",
            ]
        }
        try run(
            "\(binaries)/pg_ctl",
            [
                "-D", "\(directory)/data", "-l", "\(directory)/server.log", "-w", "-t", "60", "-o",
                options.joined(separator: " "), "start",
            ]
        )
    }

    /// Stops the server as a crash would (immediate shutdown: connections are cut, nothing is
    /// flushed); the data stays for ``start()``.
    public func halt() async throws {
        try await offPool { () throws(PostgresTestClusterError) in try self.haltWaiting() }
    }

    private func haltWaiting() throws(PostgresTestClusterError) {
        try run("\(binaries)/pg_ctl", ["-D", "\(directory)/data", "-m", "immediate", "-w", "stop"])
    }

    /// Stops the server and removes its directory. It waits for `pg_ctl` where it is called (a
    /// `defer`, at a test's end): an immediate stop takes a moment.
    public func destroy() {
        try? haltWaiting()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Creates an empty database and returns its configuration. Its text sorts in the cluster's
    /// collation (C), or with `icuLocale` in that ICU locale's, as in a database made with a
    /// language's rules (`en-US` puts `phone` before `Phone`; C and Swift put it after); it is
    /// encoded in UTF-8 unless `encoding` says otherwise.
    public func makeDatabase(
        icuLocale: String? = nil,
        encoding: String? = nil
    ) async throws
        -> PostgresStore.Configuration
    {
        let name = "herald_test_\(Self.databases.add(1, ordering: .relaxed).newValue)"
        let collation = icuLocale.map { ["--locale-provider=icu", "--icu-locale=\($0)"] } ?? []
        let encodings = encoding.map { ["--encoding=\($0)"] } ?? []
        // template1 has the cluster's collation and encoding; only template0 takes others.
        let template = collation.isEmpty && encodings.isEmpty ? [] : ["--template=template0"]
        let options = collation + encodings + template
        try await offPool { () throws(PostgresTestClusterError) in
            try self.run(
                "\(self.binaries)/createdb",
                ["-h", "127.0.0.1", "-p", "\(self.port)", "-U", self.username] + options + [name]
            )
        }
        return PostgresStore.Configuration(host: "127.0.0.1", port: port, username: username, database: name)
    }

    private func run(_ tool: String, _ arguments: [String]) throws(PostgresTestClusterError) {
        try run(tool, arguments, asUser: asUser)
    }

    private func run(_ tool: String, _ arguments: [String], asUser: String?) throws(PostgresTestClusterError) {
        let command = asUser.map { ["/sbin/runuser", "-u", $0, "--", tool] } ?? [tool]
        let outputPath = "\(NSTemporaryDirectory())herald-pg-tool-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).log"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let status = Self.spawnAndWait(command + arguments, output: outputPath)
        guard status == 0 else {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            let log = (try? String(contentsOfFile: "\(directory)/server.log", encoding: .utf8)) ?? ""
            throw PostgresTestClusterError(
                "\((tool as NSString).lastPathComponent) failed (\(status)): \(text)\n\(log.suffix(2000))"
            )
        }
    }

    /// Runs a command with its output in a file and waits for it alone. Not Foundation's `Process`:
    /// it waits for every process that inherited its bookkeeping descriptors, and the server
    /// `pg_ctl start` leaves running is one of them.
    ///
    /// The command gets standard input, output and error, and no other descriptor of the test
    /// process: the server lives on, and a socket it inherited (a connection another test is
    /// watching for its close) would stay open for as long as it runs.
    static func spawnAndWait(_ command: [String], output: String) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        guard addCloseFrom(&actions, 3) == 0 else { return -1 }
        var arguments: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { for argument in arguments { free(argument) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, command[0], &actions, nil, &arguments, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS, which Swift does not import.
        return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}

/// The test cluster could not be set up.
public struct PostgresTestClusterError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body` with a migrated ``PostgresStore`` on a fresh database of the test cluster.
public func withPostgresStore<R: Sendable>(
    maximumConnections: Int = 8,
    maximumDevicesPerUser: Int = DirectoryLimits.maximumDevicesPerUser,
    icuLocale: String? = nil,
    encoding: String? = nil,
    _ body: (PostgresStore) async throws -> R
) async throws -> R {
    var configuration = try await PostgresTestCluster.shared().makeDatabase(icuLocale: icuLocale, encoding: encoding)
    configuration.maximumConnections = maximumConnections
    configuration.maximumDevicesPerUser = maximumDevicesPerUser
    var logger = Logger(label: "herald.test.postgres")
    logger.logLevel = .warning
    let store = PostgresStore(configuration: configuration, logger: logger)
    return try await withRunningServices([store]) {
        try await store.migrate()
        return try await body(store)
    }
}
