import Foundation
import HeraldCatalog
import HeraldPolicy

extension WorkerApp {
    /// `herald run --check`: everything `run` checks before it connects to anything, for a
    /// deployment pipeline or an init container to run before a rollout. The configuration has
    /// been loaded (every key known and typed, secrets readable, the store URL and Kafka properties
    /// accepted); this loads the catalog for a worker and builds the provider clients for a sender
    /// (credentials and trust roots), then says what a process would run with. Nothing is opened or
    /// connected: the store and the Kafka cluster may be out of reach from where the check runs.
    ///
    /// - Returns: the summary, one line per part, no secret in it.
    /// - Throws: ``ConfigurationError`` naming the key, as `run` would at start-up.
    public static func check(configuration: HeraldConfiguration, roles: Set<HeraldRole>) async throws -> String {
        var lines = [
            "configuration valid for "
                + HeraldRole.allCases.filter(roles.contains).map(\.rawValue).joined(separator: " and ")
        ]
        let bootstrap = configuration.kafka.bootstrapServers
        lines.append(
            bootstrap == ["embedded"]
                ? "  kafka: embedded (a development cluster in the process)"
                : "  kafka: \(bootstrap.joined(separator: ", ")) over \(configuration.kafka.securityProtocol) (not connected)"
        )
        let location = try StoreLocation(configuration.store)
        if case .sqlite(let path) = location { try checkSQLitePath(path) }
        lines.append("  store: \(location) (not opened)")
        if roles.contains(.worker) {
            let catalog = try loadCatalog(configuration)
            let worker = configuration.worker
            lines.append(
                "  catalog: \(catalog.kinds.count) kinds in \(configuration.catalogDirectory), locales "
                    + catalog.settings.locales.joined(separator: ", ")
            )
            let outputs =
                [worker.topics.outbound, worker.topics.eventsDeadLetter] + [worker.topics.decisions].compactMap { $0 }
            lines.append(
                "  worker: group \(worker.groupID), reads \((worker.domainTopics + [worker.topics.directory]).joined(separator: ", ")), "
                    + "writes \(outputs.joined(separator: ", "))"
            )
        }
        if roles.contains(.sender) {
            let providers = configuration.providers
            let clients = try SenderApp.providerClients(providers, clock: WallClock())
            await clients.shutdown()
            var configured: [String] = []
            var missing: [String] = []
            if let key = providers.apns.key {
                configured.append("APNs (key \(key.keyID) of team \(key.teamID))")
            } else {
                missing.append("APNs")
            }
            if let account = providers.fcm.serviceAccount {
                configured.append("FCM (project \(account.projectID))")
            } else {
                missing.append("FCM")
            }
            if providers.expo.enabled { configured.append("Expo") } else { missing.append("Expo") }
            lines.append("  providers: " + (configured.isEmpty ? "none" : configured.joined(separator: ", ")))
            if !missing.isEmpty {
                lines.append(
                    "  not configured: \(missing.joined(separator: ", ")) (such calls are dead-lettered as "
                        + "configuration errors)"
                )
            }
            let sender = configuration.sender
            let retries =
                sender.retryDelays.isEmpty
                ? "no retry topics"
                : "\(sender.retryTopicPrefix).1…\(sender.retryDelays.count) (retries after "
                    + sender.retryDelays.map(HeraldConfiguration.text(of:)).joined(separator: ", ") + ")"
            lines.append(
                "  sender: group \(sender.groupID), reads \(sender.outboundTopic) and \(retries), "
                    + "dead letters to \(sender.deadLetterTopic)"
            )
        }
        lines.append(
            configuration.httpListen.isEmpty
                ? "  http: not served" : "  http: /metrics and /health on \(configuration.httpListen)"
        )
        return lines.joined(separator: "\n")
    }

    /// Whether SQLite could open or make its file at `path`: the directory exists and may be
    /// written (SQLite writes its journal beside the file), and a file already there may be read
    /// and written. What the check can tell without opening the database.
    static func checkSQLitePath(_ path: String) throws {
        guard path != ":memory:", !path.isEmpty else { return }
        let file = URL(fileURLWithPath: path)
        let directory = file.deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ConfigurationError("store.url: the directory of \(path) does not exist")
        }
        guard access(directory, W_OK | X_OK) == 0 else {
            throw ConfigurationError(
                "store.url: this process may not write in \(directory), where \(path) and its journal go"
            )
        }
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard !isDirectory.boolValue, access(path, R_OK | W_OK) == 0 else {
                throw ConfigurationError("store.url: \(path) is not a file this process may read and write")
            }
        }
    }

    /// The catalog a worker renders with, or the ``ConfigurationError`` that stops it from starting.
    static func loadCatalog(_ configuration: HeraldConfiguration) throws -> Catalog {
        do {
            return try CatalogLoader.load(directory: configuration.catalogDirectory).catalog
        } catch {
            throw ConfigurationError(
                "catalog.directory: \(error.description)\ncatalog check failed: fix the catalog first"
            )
        }
    }
}
