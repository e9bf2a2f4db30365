import ArgumentParser
import Foundation
import HeraldApp
import HeraldSimulator
import Logging
import ServiceLifecycle

struct SimulateProvidersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate-providers",
        abstract: "Run APNs-, FCM- and Expo-like servers over HTTP/2 and TLS, for development, tests and load tests.",
        discussion: """
            Generates a certificate authority, an APNs key and a Firebase service account, writes them with a \
            providers.yaml into --credentials, prints the base URL as the first line on standard output, and \
            serves until SIGINT or SIGTERM. Run the sender against it with \
            `herald run --role sender --config herald.yaml --config <credentials>/providers.yaml`. \
            GET /simulator/stats shows what it accepted. Faults: --faults \
            '500=0.1,503=0.02,429=0.05,410=0.001,drop=0.01,retry-after=2,latency=5ms..40ms,seed=7'.
            """
    )

    @Option(help: "Where to listen, host:port (port 0: a free one).")
    var listen = "127.0.0.1:0"

    @Option(
        help:
            "The host name senders reach the simulator by, if not the --listen host (a container's name): added to its certificate and written in providers.yaml."
    )
    var advertise: String?

    @Option(help: "Where to write the credentials and providers.yaml.")
    var credentials = "simulator-credentials"

    @Option(help: "The fault profile (see above); none by default.")
    var faults = ""

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        guard let colon = listen.lastIndex(of: ":"), Int(listen[listen.index(after: colon)...]) != nil else {
            throw ValidationError("--listen: expected host:port, got '\(listen)'")
        }
        do {
            _ = try FaultProfile(parsing: faults)
        } catch {
            throw ValidationError("--faults: \(error.description)")
        }
    }

    func run() async throws {
        let logger = try global.bootstrapLogging(label: "herald.simulator")
        let colon = listen.lastIndex(of: ":")!
        let providers = try SimulatedProviders(
            faults: try FaultProfile(parsing: faults),
            host: String(listen[..<colon]),
            port: Int(listen[listen.index(after: colon)...])!,
            advertisedHost: advertise,
            logger: logger
        )
        let server = providers.server
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [.init(service: server)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                cancellationSignals: [],
                logger: logger
            )
        )
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            // Unbuffered, so a script reading the first line gets it at once.
            FileHandle.standardOutput.write(Data((await server.baseURL() + "\n").utf8))
            let yaml = try await providers.writeCredentials(to: credentials)
            FileHandle.standardError.write(Data("herald: provider settings written to \(yaml)\n".utf8))
            try await tasks.waitForAll()
        }
    }
}
