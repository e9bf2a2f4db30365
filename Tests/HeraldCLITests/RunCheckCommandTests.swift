import Foundation
import Glibc
import HeraldCatalog
import HeraldTestSupport
import Testing

@Suite("herald run --check")
struct RunCheckCommandTests {
    let scratch = ScratchDirectory()

    /// The repository's root, where `catalog/` and `herald.yaml` are.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    @Test("a valid configuration: what the roles would run with, exit 0, and nothing connected to or opened")
    func valid() async throws {
        let herald = try heraldExecutable().path
        let directory = URL(fileURLWithPath: scratch.path)
        let database = directory.appendingPathComponent("never-made.sqlite").path
        let config = directory.appendingPathComponent("herald.yaml").path
        // A listening socket as the broker: a connection attempt would wait in its backlog.
        let broker = try ListeningSocket()
        defer { broker.close() }
        try """
        kafka:
          bootstrap_servers: [127.0.0.1:\(broker.port)]
        store:
          url: sqlite:\(database)
        catalog:
          directory: \(Self.root)/catalog
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let checked = try await run(herald, ["run", "--check", "--role", "all", "--config", config])
        #expect(checked.status == 0, "\(checked.error)")
        #expect(!broker.hasPendingConnection, "the check connected to the broker")
        let catalog = try CatalogLoader.load(directory: "\(Self.root)/catalog").catalog
        let lines = checked.output.split(separator: "\n").map(String.init)
        #expect(lines.first == "configuration valid for worker and sender")
        for expected in [
            "  kafka: 127.0.0.1:\(broker.port) over plaintext (not connected)",
            "  store: sqlite:\(database) (not opened)",
            "  catalog: \(catalog.kinds.count) kinds in \(Self.root)/catalog, locales "
                + catalog.settings.locales.joined(separator: ", "),
            "  providers: Expo",
            "  not configured: APNs, FCM (such calls are dead-lettered as configuration errors)",
            "  sender: group herald-sender, reads herald.outbound and herald.outbound.retry.1…4 (retries after 10s, 1m, "
                + "10m, 1h), dead letters to herald.outbound.dlq",
            "  http: /metrics and /health on 127.0.0.1:9464",
        ] {
            #expect(lines.contains(expected), "\(expected) in\n\(checked.output)")
        }
        #expect(!FileManager.default.fileExists(atPath: database), "the store was opened")
    }

    @Test("what stops start-up stops the check, naming the key or the catalog's file and message: exit 78")
    func invalid() async throws {
        let herald = try heraldExecutable().path
        let directory = URL(fileURLWithPath: scratch.path)
        // A catalog whose English order message has a broken MessageFormat.
        let catalog = directory.appendingPathComponent("catalog")
        try FileManager.default.copyItem(atPath: "\(Self.root)/catalog", toPath: catalog.path)
        let english = catalog.appendingPathComponent("messages/en.json")
        let messages = try String(contentsOf: english, encoding: .utf8)
        try messages.replacingOccurrences(of: "{orderId}", with: "{orderId").write(
            to: english,
            atomically: true,
            encoding: .utf8
        )
        let broken = directory.appendingPathComponent("broken.yaml").path
        try "catalog:\n  directory: \(catalog.path)\n".write(toFile: broken, atomically: true, encoding: .utf8)
        let refused = try await run(herald, ["run", "--check", "--config", broken])
        #expect(refused.status == 78)
        #expect(refused.output.isEmpty, "\(refused.output)")
        #expect(
            refused.error.contains("catalog.directory") && refused.error.contains("messages/en.json"),
            "\(refused.error)"
        )
        // A sender alone does not load the catalog.
        let sender = try await run(herald, ["run", "--check", "--role", "sender", "--config", broken])
        #expect(sender.status == 0, "\(sender.error)")
        // A SQLite file the store could not make or open: start-up would stop with SQLite's own
        // "unable to open database file".
        for (url, message) in [
            ("sqlite:\(directory.path)/missing/herald.sqlite", "store.url: the directory of"),
            ("sqlite:\(directory.path)", "store.url: \(directory.path) is not a file"),
        ] {
            let store = try await run(
                herald,
                ["run", "--check", "--role", "sender"],
                environment: ["HERALD_STORE_URL": url]
            )
            #expect(store.status == 78 && store.error.contains(message), "\(url): \(store.error)")
        }
        // A mistyped key and a bad value, as start-up names them.
        let typo = directory.appendingPathComponent("typo.yaml").path
        try "worker:\n  batch_sise: 10\n".write(toFile: typo, atomically: true, encoding: .utf8)
        let typed = try await run(herald, ["run", "--check", "--config", typo])
        #expect(typed.status == 78 && typed.error.contains("unknown key 'worker.batch_sise'"), "\(typed.error)")
        let listen = try await run(
            herald,
            ["run", "--check", "--config", broken],
            environment: ["HERALD_HTTP_LISTEN": "nowhere"]
        )
        #expect(listen.status == 78 && listen.error.contains("HERALD_HTTP_LISTEN"), "\(listen.error)")
    }
}

/// A TCP socket listening on a free port of 127.0.0.1 that accepts nothing by itself: a client's
/// connection waits in its backlog, where ``hasPendingConnection`` finds it.
final class ListeningSocket {
    let descriptor: Int32
    let port: Int

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw CLIError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && listen(descriptor, 16) == 0
                    && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(descriptor)
            throw CLIError("bind/listen: errno \(errno)")
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether a client has connected and waits to be accepted (checked without waiting).
    var hasPendingConnection: Bool {
        var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&waiting, 1, 0) > 0
    }

    func close() { Glibc.close(descriptor) }
}
