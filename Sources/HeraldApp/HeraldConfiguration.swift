import Foundation
import HeraldAuth
import HeraldKafka
import HeraldSender
import HeraldStore
import HeraldWorker
import Yams

/// `herald.yaml`: what a Herald process connects to and how it behaves. Every key can be
/// overridden by an environment variable: `worker.batch_size` by `HERALD_WORKER_BATCH_SIZE` (lists
/// are comma-separated). Secrets are read from files named in the configuration, or from their
/// variables, and never appear in an error or a log. README.md's configuration reference lists every key.
public struct HeraldConfiguration: Sendable {
    public var kafka = Kafka()
    public var worker = Worker()
    public var sender = Sender()
    public var providers = Providers()
    public var store = "sqlite:herald.sqlite"
    public var directoryCache = 200_000
    /// `store.max_devices_per_user`: the most devices the directory keeps for one user.
    public var maximumDevicesPerUser = DirectoryLimits.maximumDevicesPerUser
    /// `store.sqlite_mmap_mb`: how much of the SQLite file is read through a memory map.
    public var sqliteMemoryMapMegabytes = SQLiteStore.defaultMemoryMapMegabytes
    /// `store.sqlite_cache_mb`: the most memory SQLite's page cache holds.
    public var sqlitePageCacheMegabytes = SQLiteStore.defaultPageCacheMegabytes
    /// `store.sqlite_sync`: when a SQLite commit reaches the disk.
    public var sqliteSynchronous = SQLiteStore.Synchronous.full
    /// How long one PostgreSQL call may take before the batch is retried and readiness turns false.
    public var storeTimeout: Duration = .seconds(10)
    /// How long the decision and delivery ledgers remember, and how often they are purged.
    public var purge = PurgeSchedule()
    public var catalogDirectory = "catalog"
    /// Where `/metrics` and `/health/*` are served; empty: not served.
    public var httpListen = "127.0.0.1:9464"
    public var logLevel = "info"
    public var logFormat = "json"
    /// The key user ids in logs are hashed with (see ``HeraldWorker/Redact``); never shown.
    public var logUserHashKey: [UInt8]?
    /// `analytics.recipient`: how `herald.decisions` and `herald.deliveries` name users, the log
    /// hash's key included.
    public var analyticsRecipients = AnalyticsRecipients.hashed(UserHash(key: nil))
    /// What was read but not used, for the caller to log once logging is set up: a `HERALD_*`
    /// variable a letter or two from a setting's name (a typo, which would otherwise change
    /// nothing without a word). Never a value.
    public var warnings: [String] = []

    public struct Kafka: Sendable {
        /// `embedded`: an in-process mock cluster (development and tests only).
        public var bootstrapServers = ["embedded"]
        public var clientID = "herald"
        public var securityProtocol = "plaintext"
        public var saslMechanism = ""
        public var saslUsername = ""
        /// Read from `sasl_password_file` or `HERALD_KAFKA_SASL_PASSWORD`.
        public var saslPassword: String?
        /// How long the group waits for a silent worker before giving its partitions to others.
        public var sessionTimeout: Duration = .seconds(45)
        /// TLS (`security_protocol` ssl or sasl_ssl): a PEM file of the certificate authorities
        /// that signed the brokers' certificates, when not the system's.
        public var sslCAFile: String?
        /// TLS client authentication: the client's PEM certificate and private key files.
        public var sslCertificateFile: String?
        public var sslKeyFile: String?
        /// The private key's password, if it is encrypted. Read from `ssl_key_password_file` or
        /// `HERALD_KAFKA_SSL_KEY_PASSWORD`.
        public var sslKeyPassword: String?
        /// Further librdkafka properties for every Kafka client (`client.rack`, `socket.*`,
        /// `sasl.oauthbearer.*`, ...), applied after Herald's own. Those Herald sets from other keys
        /// or relies on for its guarantees are refused (see ``managedProperties``).
        public var properties: [String: String] = [:]

        /// librdkafka properties `kafka.properties` may not set, and why: each is set from another
        /// key, or Herald's delivery guarantees depend on its value.
        public static let managedProperties: [String: String] = [
            "bootstrap.servers": "set kafka.bootstrap_servers",
            "metadata.broker.list": "set kafka.bootstrap_servers",
            "client.id": "set kafka.client_id",
            "security.protocol": "set kafka.security_protocol",
            "sasl.mechanism": "set kafka.sasl_mechanism",
            "sasl.mechanisms": "set kafka.sasl_mechanism",
            "sasl.username": "set kafka.sasl_username",
            "sasl.password": "set kafka.sasl_password_file or HERALD_KAFKA_SASL_PASSWORD",
            "ssl.ca.location": "set kafka.ssl_ca_file",
            "ssl.certificate.location": "set kafka.ssl_certificate_file",
            "ssl.key.location": "set kafka.ssl_key_file",
            "ssl.key.password": "set kafka.ssl_key_password_file or HERALD_KAFKA_SSL_KEY_PASSWORD",
            "session.timeout.ms": "set kafka.session_timeout",
            "group.id": "set worker.group_id or sender.group_id",
            "enable.auto.offset.store":
                "Herald stores an offset only once everything the message produced is acknowledged",
            "enable.auto.commit": "Herald commits the offsets it stores",
            "enable.partition.eof": "Herald's consumer does not handle end-of-partition events",
            "enable.idempotence": "the outbound producer must not reorder or duplicate a partition's records",
            "statistics.interval.ms":
                "Herald reads its consumers' statistics every 5 s for herald_kafka_brokers_up and the 'cannot reach Kafka' warning",
        ]

        /// The librdkafka properties these settings give every client, Herald's own first.
        var librdkafkaProperties: [(String, String)] {
            var result: [(String, String)] = []
            if securityProtocol != "plaintext" { result.append(("security.protocol", securityProtocol)) }
            if !saslMechanism.isEmpty {
                result.append(("sasl.mechanism", saslMechanism))
                result.append(("sasl.username", saslUsername))
            }
            if let saslPassword { result.append(("sasl.password", saslPassword)) }
            if let sslCAFile { result.append(("ssl.ca.location", sslCAFile)) }
            if let sslCertificateFile { result.append(("ssl.certificate.location", sslCertificateFile)) }
            if let sslKeyFile { result.append(("ssl.key.location", sslKeyFile)) }
            if let sslKeyPassword { result.append(("ssl.key.password", sslKeyPassword)) }
            return result + properties.sorted { $0.key < $1.key }
        }
    }

    public struct Worker: Sendable {
        public var groupID = "herald-worker"
        public var domainTopics = [
            "orders.events", "payments.events", "security.events", "messages.events", "marketing.events",
        ]
        public var topics = WorkerTopics()
        public var unknownEventTypes = UnknownEventTypes.deadLetter
        /// `worker.batch_size`: the most messages in one poll batch. A batch is what the consumer
        /// holds when the worker asks (so a quiet stream makes small batches), and each pays a store
        /// commit and the hand-offs between stages: under a backlog, 2,000 ran 4–6% more events per
        /// second than 1,000 in `herald bench pipeline` for about 20 MB more resident memory, 3,000
        /// about a tenth more than 2,000 for another 15–20 MB (which SQLite's page cache of 16 MiB
        /// instead of 32 gives back), and 4,000 no more than 3,000 past 300 MB (docs/benchmarks.md).
        public var batchSize = Self.defaultBatchSize
        public static let defaultBatchSize = 3000
        /// `worker.max_devices_per_recipient`: the most devices a notification goes to per recipient.
        public var maximumDevicesPerRecipient = EventProcessor.defaultMaximumDevicesPerRecipient
        public var dueWorkInterval: Duration = .seconds(1)
        public var shutdownDeadline: Duration = .seconds(30)
    }

    public struct Sender: Sendable {
        public var groupID = "herald-sender"
        /// Unless set, the worker's outbound and directory topics.
        public var outboundTopic = "herald.outbound"
        public var directoryTopic = "herald.directory"
        public var deadLetterTopic = "herald.outbound.dlq"
        public var decisionsTopic: String?
        /// `sender.deliveries_topic`: where each provider answer goes, if anywhere.
        public var deliveriesTopic: String?
        public var retryTopicPrefix = "herald.outbound.retry"
        public var retryDelays = RetryPolicy.defaultDelays
        public var retryJitter = 0.1
        public var batchSize = 500
        public var receiptDelay: Duration = .seconds(15 * 60)
        public var circuitFailureThreshold = 20
        public var circuitOpenDuration: Duration = .seconds(30)
        public var shutdownDeadline: Duration = .seconds(30)
    }

    /// Provider endpoints and credentials. Credentials come from files (or, for containers, the
    /// variables of the secret keys) and are never shown.
    public struct Providers: Sendable {
        /// A PEM file of extra certificate authorities to trust (the provider simulator's).
        public var trustRootsPEM: String?
        public var apns = APNs()
        public var fcm = FCM()
        public var expo = Expo()

        public struct APNs: Sendable {
            public var key: APNsSigningKey?
            public var productionURL = "https://api.push.apple.com"
            public var sandboxURL = "https://api.sandbox.push.apple.com"
            public var concurrency = 256
            public var requestTimeout: Duration = .seconds(10)
            public var connectTimeout: Duration = .seconds(5)
            /// `providers.apns.transport`: `frames` (the default), frame-level HTTP/2 connections
            /// carrying calls in batches; `async-http-client`, one request of async-http-client per call.
            public var usesFrameConnections = true
            /// `providers.apns.connections`: HTTP/2 connections per APNs host with the `frames`
            /// transport.
            public var frameConnections = 2
        }

        public struct FCM: Sendable {
            public var serviceAccount: ServiceAccount?
            public var baseURL = "https://fcm.googleapis.com"
            public var concurrency = 256
            public var requestTimeout: Duration = .seconds(10)
            public var connectTimeout: Duration = .seconds(5)
        }

        public struct Expo: Sendable {
            public var enabled = true
            public var baseURL = "https://exp.host"
            public var accessToken: String?
            public var concurrency = 8
            public var requestTimeout: Duration = .seconds(15)
            public var connectTimeout: Duration = .seconds(5)
        }
    }

    public init() {}

    /// One key: its path, what it holds, and whether it is a secret.
    struct Key {
        enum Kind {
            case string, integer, list, duration
            /// A duration longer than zero: a zero deadline, timeout or interval makes every call fail
            /// at once, or a loop spin.
            case positiveDuration
            case choice([String])
            /// Names and values (`kafka.properties`): a YAML mapping, or `name=value,name=value`
            /// in the variable.
            case mapping
        }
        var path: String
        var kind: Kind
        var secret = false

        var isMapping: Bool {
            if case .mapping = kind { return true }
            return false
        }

        var environmentName: String {
            "HERALD_" + path.uppercased().replacingOccurrences(of: ".", with: "_")
        }
    }

    /// Every key a configuration file may set, except secrets that only come from the environment:
    /// what the README's configuration reference must list.
    public static var documentedKeys: [String] { keys.filter { !$0.secret }.map(\.path) }

    /// The `HERALD_*` variable of every setting, secrets' included.
    public static var variableNames: Set<String> { Set(keys.map(\.environmentName)) }

    static let keys: [Key] = [
        Key(path: "kafka.bootstrap_servers", kind: .list),
        Key(path: "kafka.client_id", kind: .string),
        Key(path: "kafka.security_protocol", kind: .choice(["plaintext", "ssl", "sasl_plaintext", "sasl_ssl"])),
        Key(path: "kafka.sasl_mechanism", kind: .choice(["", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])),
        Key(path: "kafka.sasl_username", kind: .string),
        Key(path: "kafka.sasl_password_file", kind: .string),
        Key(path: "kafka.sasl_password", kind: .string, secret: true),
        Key(path: "kafka.session_timeout", kind: .positiveDuration),
        Key(path: "kafka.ssl_ca_file", kind: .string),
        Key(path: "kafka.ssl_certificate_file", kind: .string),
        Key(path: "kafka.ssl_key_file", kind: .string),
        Key(path: "kafka.ssl_key_password_file", kind: .string),
        Key(path: "kafka.ssl_key_password", kind: .string, secret: true),
        Key(path: "kafka.properties", kind: .mapping),
        Key(path: "worker.group_id", kind: .string),
        Key(path: "worker.topics", kind: .list),
        Key(path: "worker.directory_topic", kind: .string),
        Key(path: "worker.outbound_topic", kind: .string),
        Key(path: "worker.dead_letter_topic", kind: .string),
        Key(path: "worker.decisions_topic", kind: .string),
        Key(path: "worker.unknown_event_types", kind: .choice(UnknownEventTypes.allCases.map(\.rawValue))),
        Key(path: "worker.batch_size", kind: .integer),
        Key(path: "worker.max_devices_per_recipient", kind: .integer),
        Key(path: "worker.due_work_interval", kind: .positiveDuration),
        Key(path: "worker.shutdown_deadline", kind: .positiveDuration),
        Key(path: "sender.group_id", kind: .string),
        Key(path: "sender.outbound_topic", kind: .string),
        Key(path: "sender.directory_topic", kind: .string),
        Key(path: "sender.dead_letter_topic", kind: .string),
        Key(path: "sender.decisions_topic", kind: .string),
        Key(path: "sender.deliveries_topic", kind: .string),
        Key(path: "sender.retry_topic_prefix", kind: .string),
        Key(path: "sender.retry_delays", kind: .list),
        Key(path: "sender.retry_jitter", kind: .string),
        Key(path: "sender.batch_size", kind: .integer),
        Key(path: "sender.receipt_delay", kind: .duration),
        Key(path: "sender.circuit_failure_threshold", kind: .integer),
        Key(path: "sender.circuit_open_duration", kind: .duration),
        Key(path: "sender.shutdown_deadline", kind: .positiveDuration),
        Key(path: "providers.trust_roots_file", kind: .string),
        Key(path: "providers.apns.key_file", kind: .string),
        Key(path: "providers.apns.key", kind: .string, secret: true),
        Key(path: "providers.apns.key_id", kind: .string),
        Key(path: "providers.apns.team_id", kind: .string),
        Key(path: "providers.apns.production_url", kind: .string),
        Key(path: "providers.apns.sandbox_url", kind: .string),
        Key(path: "providers.apns.concurrency", kind: .integer),
        Key(path: "providers.apns.request_timeout", kind: .positiveDuration),
        Key(path: "providers.apns.connect_timeout", kind: .positiveDuration),
        Key(path: "providers.apns.transport", kind: .choice(["async-http-client", "frames"])),
        Key(path: "providers.apns.connections", kind: .integer),
        Key(path: "providers.fcm.service_account_file", kind: .string),
        Key(path: "providers.fcm.service_account", kind: .string, secret: true),
        Key(path: "providers.fcm.base_url", kind: .string),
        Key(path: "providers.fcm.concurrency", kind: .integer),
        Key(path: "providers.fcm.request_timeout", kind: .positiveDuration),
        Key(path: "providers.fcm.connect_timeout", kind: .positiveDuration),
        Key(path: "providers.expo.enabled", kind: .choice(["true", "false"])),
        Key(path: "providers.expo.base_url", kind: .string),
        Key(path: "providers.expo.access_token_file", kind: .string),
        Key(path: "providers.expo.access_token", kind: .string, secret: true),
        Key(path: "providers.expo.concurrency", kind: .integer),
        Key(path: "providers.expo.request_timeout", kind: .positiveDuration),
        Key(path: "providers.expo.connect_timeout", kind: .positiveDuration),
        Key(path: "store.url", kind: .string, secret: true),
        Key(path: "store.directory_cache", kind: .integer),
        Key(path: "store.max_devices_per_user", kind: .integer),
        Key(path: "store.sqlite_mmap_mb", kind: .integer),
        Key(path: "store.sqlite_cache_mb", kind: .integer),
        Key(path: "store.sqlite_sync", kind: .choice(SQLiteStore.Synchronous.allCases.map(\.rawValue))),
        Key(path: "store.timeout", kind: .positiveDuration),
        Key(path: "store.retention", kind: .positiveDuration),
        Key(path: "store.purge_interval", kind: .duration),
        Key(path: "catalog.directory", kind: .string),
        Key(path: "http.listen", kind: .string),
        Key(path: "log.level", kind: .choice(["trace", "debug", "info", "notice", "warning", "error", "critical"])),
        Key(path: "log.format", kind: .choice(["json", "text"])),
        Key(path: "log.user_hash_key_file", kind: .string),
        Key(path: "log.user_hash_key", kind: .string, secret: true),
        Key(path: "analytics.recipient", kind: .choice(["hashed", "clear"])),
    ]

    /// Reads `path` (if given), applies `HERALD_*` overrides from `environment`, and validates.
    ///
    /// - Throws: ``ConfigurationError`` naming the file and key; a secret's value is never shown.
    public static func load(
        path: String?,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        roles: Set<HeraldRole> = Set(HeraldRole.allCases)
    ) throws(ConfigurationError) -> HeraldConfiguration {
        try load(paths: path.map { [$0] } ?? [], environment: environment, roles: roles)
    }

    /// Reads `paths` in order (a key in a later file replaces the same key in an earlier one),
    /// applies `HERALD_*` overrides from `environment`, and validates.
    ///
    /// - Parameter roles: the roles the process runs. The provider credentials (APNs key, FCM
    ///   service account, Expo token) and the trust roots file are read and checked only with the
    ///   sender: one configuration file serves both roles, and a worker needs, and is given, no
    ///   provider secret.
    public static func load(
        paths: [String],
        environment: [String: String] = ProcessInfo.processInfo.environment,
        roles: Set<HeraldRole> = Set(HeraldRole.allCases)
    ) throws(ConfigurationError) -> HeraldConfiguration {
        var values: [String: Value] = [:]
        var origins: [String: String] = [:]
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError("\(path): cannot read the configuration file")
            }
            let text = String(decoding: data, as: UTF8.self)
            let document: Any?
            do {
                document = try Yams.load(yaml: text)
            } catch {
                throw ConfigurationError("\(path): not valid YAML: \(Self.yamlProblem(error))")
            }
            if let document {
                guard let root = document as? [String: Any] else {
                    throw ConfigurationError("\(path): the configuration must be a mapping of sections")
                }
                var fileValues: [String: Value] = [:]
                try flatten(root, prefix: "", file: path, into: &fileValues)
                for (key, value) in fileValues {
                    values[key] = value
                    origins[key] = path
                }
            }
        }
        for key in keys {
            if let value = environment[key.environmentName] { values[key.path] = .environment(value) }
        }
        var configuration = try HeraldConfiguration(
            values: values,
            origins: origins,
            readsCredentials: roles.contains(.sender)
        )
        configuration.warnings = misspelledVariables(in: environment)
        return configuration
    }

    /// `HERALD_*` variables that name no setting but are a letter or two from one's: most likely
    /// that setting, misspelled. Other `HERALD_*` variables (the test scripts' own) pass unremarked.
    static func misspelledVariables(in environment: [String: String]) -> [String] {
        let names = variableNames
        return environment.keys.filter { $0.hasPrefix("HERALD_") && !names.contains($0) }.sorted().compactMap {
            variable in
            closest(to: variable, among: names).map {
                "\(variable) is not a setting Herald reads: did you mean \($0)? It is ignored"
            }
        }
    }

    /// The one of `candidates` within two edits of `name` (letters added, removed or changed), the
    /// nearest first; nil if none is that near.
    static func closest(to name: String, among candidates: some Sequence<String>) -> String? {
        candidates.map { (candidate: $0, distance: editDistance(name, $0)) }.filter { $0.distance <= 2 }
            .min { ($0.distance, $0.candidate) < ($1.distance, $1.candidate) }?.candidate
    }

    /// Levenshtein distance between the bytes of two short names.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8)
        let b = Array(b.utf8)
        var previous = Array(0...b.count)
        var current = previous
        for i in 1...max(a.count, 1) where !a.isEmpty {
            current[0] = i
            for j in 1...max(b.count, 1) where !b.isEmpty {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }

    /// A value as found: from YAML (a scalar or a list of scalars) or from an environment variable.
    enum Value {
        case scalar(String)
        case list([String])
        case mapping([String: String])
        case environment(String)
    }

    static func flatten(
        _ mapping: [String: Any],
        prefix: String,
        file: String,
        into values: inout [String: Value]
    ) throws(ConfigurationError) {
        for (name, value) in mapping {
            let path = prefix.isEmpty ? name : "\(prefix).\(name)"
            let section = keys.map(\.path).filter { $0.hasPrefix(path + ".") }
            if let nested = value as? [String: Any] {
                if keys.contains(where: { $0.path == path && $0.isMapping }) {
                    values[path] = .mapping(try scalars(nested, at: "\(file): \(path)"))
                } else if section.isEmpty && keys.contains(where: { $0.path == path }) {
                    throw ConfigurationError("\(file): \(path): expected one value, not a mapping")
                } else {
                    try flatten(nested, prefix: path, file: file, into: &values)
                }
                continue
            }
            // A section written as a value: name the section, not every key Herald has.
            if !section.isEmpty {
                throw ConfigurationError(
                    "\(file): \(path): expected a mapping of keys (\(section.joined(separator: ", "))), not one value"
                )
            }
            guard keys.contains(where: { $0.path == path }) else {
                let known = keys.map(\.path).filter { $0.hasPrefix(prefix.isEmpty ? "" : prefix + ".") }
                let suggestion = closest(to: path, among: keys.map(\.path)).map { " (did you mean '\($0)'?)" } ?? ""
                throw ConfigurationError(
                    "\(file): unknown key '\(path)'" + suggestion
                        + (known.isEmpty ? "" : "; known here: " + known.joined(separator: ", "))
                )
            }
            if let list = value as? [Any] {
                values[path] = .list(list.map { "\($0)" })
            } else if value is NSNull {
                values[path] = .scalar("")
            } else {
                values[path] = .scalar("\(value)")
            }
        }
    }

    /// A mapping key's entries (at `place`: the file and the key), each a scalar.
    static func scalars(_ mapping: [String: Any], at place: String) throws(ConfigurationError) -> [String: String] {
        var result: [String: String] = [:]
        for (name, value) in mapping {
            guard !(value is [Any]), !(value is [String: Any]) else {
                throw ConfigurationError("\(place).\(name): expected one value")
            }
            result[name] = value is NSNull ? "" : "\(value)"
        }
        return result
    }

    /// `name=value,name=value` from a variable, spaces around names and values ignored. A comma
    /// inside a value is written `\,` (librdkafka's `debug=cgrp\,fetch`) and a backslash `\\`;
    /// any other backslash is kept as it is. An entry without `=` is named by its
    /// position, not shown: it may be a secret that lost its name.
    static func entries(_ text: String, variable: String) throws(ConfigurationError) -> [String: String] {
        var result: [String: String] = [:]
        for (position, entry) in splitEntries(text).enumerated() {
            let trimmed = entry.trimmingCharacters(in: .whitespaces)
            guard let equals = trimmed.firstIndex(of: "="), equals != trimmed.startIndex else {
                throw ConfigurationError("\(variable): entry \(position + 1) is not name=value")
            }
            // `name = value` reads as `name=value`: librdkafka's names and values never start or end
            // with a space.
            let name = trimmed[..<equals].trimmingCharacters(in: .whitespaces)
            result[name] = trimmed[trimmed.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        }
        return result
    }

    /// `text` split at its commas that are not escaped, the escapes undone; empty entries dropped.
    private static func splitEntries(_ text: String) -> [String] {
        var entries: [String] = []
        var current = ""
        var characters = text.makeIterator()
        while let character = characters.next() {
            switch character {
            case ",":
                entries.append(current)
                current = ""
            case "\\":
                switch characters.next() {
                case ","?: current.append(",")
                case "\\"?: current.append("\\")
                case let other?: current += "\\\(other)"
                case nil: current.append("\\")
                }
            default: current.append(character)
            }
        }
        entries.append(current)
        return entries.filter { !$0.allSatisfy(\.isWhitespace) }
    }

    init(values: [String: Value], origins: [String: String], readsCredentials: Bool) throws(ConfigurationError) {
        func source(_ key: Key) -> String {
            if case .environment? = values[key.path] { return key.environmentName }
            return (origins[key.path].map { "\($0): " } ?? "") + key.path
        }
        func text(_ key: Key) throws(ConfigurationError) -> String? {
            switch values[key.path] {
            case nil: return nil
            case .scalar(let value)?, .environment(let value)?: return value
            case .list?: throw ConfigurationError("\(source(key)): expected one value, not a list")
            case .mapping?: throw ConfigurationError("\(source(key)): expected one value, not a mapping")
            }
        }
        func list(_ key: Key) -> [String]? {
            switch values[key.path] {
            case nil: return nil
            case .list(let items)?: return items
            case .scalar(let value)?, .environment(let value)?:
                return value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                    !$0.isEmpty
                }
            case .mapping?: return nil
            }
        }
        for key in Self.keys where !key.isMapping {
            let found: String?
            if case .list = key.kind { found = list(key)?.joined(separator: ",") } else { found = try text(key) }
            guard let value = found else { continue }
            switch key.kind {
            case .integer:
                guard let number = Int(value), number >= 0 else {
                    throw ConfigurationError("\(source(key)): expected a non-negative integer, got '\(value)'")
                }
            case .duration, .positiveDuration:
                guard let duration = Self.duration(value) else {
                    throw ConfigurationError(
                        "\(source(key)): expected a duration such as 500ms, 5s or 2m, got '\(value)'"
                    )
                }
                if case .positiveDuration = key.kind, duration <= .zero {
                    throw ConfigurationError("\(source(key)): must be longer than 0s")
                }
            case .choice(let choices):
                guard choices.contains(value) else {
                    let shown = key.secret ? "" : ", got '\(value)'"
                    throw ConfigurationError(
                        "\(source(key)): expected one of \(choices.filter { !$0.isEmpty }.joined(separator: ", "))\(shown)"
                    )
                }
            case .string, .list, .mapping: break
            }
        }
        func key(_ path: String) -> Key { Self.keys.first { $0.path == path }! }
        func string(_ path: String) throws(ConfigurationError) -> String? { try text(key(path)) }
        func integer(_ path: String) throws(ConfigurationError) -> Int? { try string(path).flatMap { Int($0) } }
        func duration(_ path: String) throws(ConfigurationError) -> Duration? {
            try string(path).flatMap(Self.duration)
        }

        if let servers = list(key("kafka.bootstrap_servers")) { kafka.bootstrapServers = servers }
        if kafka.bootstrapServers.isEmpty {
            throw ConfigurationError(
                "\(source(key("kafka.bootstrap_servers"))): name at least one broker, or 'embedded'"
            )
        }
        kafka.clientID = try string("kafka.client_id") ?? kafka.clientID
        kafka.securityProtocol = try string("kafka.security_protocol") ?? kafka.securityProtocol
        kafka.saslMechanism = try string("kafka.sasl_mechanism") ?? kafka.saslMechanism
        kafka.saslUsername = try string("kafka.sasl_username") ?? kafka.saslUsername
        var passwordKey = "kafka.sasl_password_file"
        if let password = try string("kafka.sasl_password") {
            passwordKey = "kafka.sasl_password"
            kafka.saslPassword = password
        } else if let file = try string("kafka.sasl_password_file"), !file.isEmpty {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ConfigurationError("\(source(key("kafka.sasl_password_file"))): cannot read \(file)")
            }
            kafka.saslPassword = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .newlines)
        }
        let sasl = [
            ("kafka.sasl_mechanism", !kafka.saslMechanism.isEmpty),
            ("kafka.sasl_username", !kafka.saslUsername.isEmpty),
            (passwordKey, kafka.saslPassword != nil),
        ]
        if kafka.securityProtocol.hasPrefix("sasl") {
            if let missing = sasl.first(where: { !$0.1 })?.0 {
                throw ConfigurationError(
                    "\(source(key("kafka.security_protocol"))): \(kafka.securityProtocol) needs \(missing)"
                        + (missing == passwordKey ? " (or HERALD_KAFKA_SASL_PASSWORD)" : "")
                )
            }
        } else if let set = sasl.first(where: \.1)?.0 {
            // librdkafka reads SASL settings only with a sasl_* protocol: these credentials would go
            // unused, and a cluster that wants them refuses the connection with a less clear error.
            throw ConfigurationError(
                "\(source(key(set))): needs kafka.security_protocol sasl_plaintext or sasl_ssl, not \(kafka.securityProtocol)"
            )
        }

        kafka.sessionTimeout = try duration("kafka.session_timeout") ?? kafka.sessionTimeout
        try readKafkaTLS(string: string, source: { source(key($0)) })
        try readKafkaProperties(values[key("kafka.properties").path], source: source(key("kafka.properties")))
        worker.groupID = try string("worker.group_id") ?? worker.groupID
        if let topics = list(key("worker.topics")) { worker.domainTopics = topics }
        worker.topics.directory = try string("worker.directory_topic") ?? worker.topics.directory
        worker.topics.outbound = try string("worker.outbound_topic") ?? worker.topics.outbound
        worker.topics.eventsDeadLetter = try string("worker.dead_letter_topic") ?? worker.topics.eventsDeadLetter
        if let decisions = try string("worker.decisions_topic") {
            worker.topics.decisions = decisions.isEmpty ? nil : decisions
        }
        if let handling = try string("worker.unknown_event_types") {
            worker.unknownEventTypes = UnknownEventTypes(rawValue: handling)!
        }
        worker.batchSize = try integer("worker.batch_size") ?? worker.batchSize
        if !Self.batchSizes.contains(worker.batchSize) {
            throw ConfigurationError(
                "\(source(key("worker.batch_size"))): must be from 1 to \(Self.batchSizes.upperBound)"
            )
        }
        worker.maximumDevicesPerRecipient =
            try integer("worker.max_devices_per_recipient") ?? worker.maximumDevicesPerRecipient
        if !(1...100_000).contains(worker.maximumDevicesPerRecipient) {
            throw ConfigurationError("\(source(key("worker.max_devices_per_recipient"))): must be from 1 to 100000")
        }
        worker.dueWorkInterval = try duration("worker.due_work_interval") ?? worker.dueWorkInterval
        worker.shutdownDeadline = try duration("worker.shutdown_deadline") ?? worker.shutdownDeadline
        for (path, topic) in [
            ("worker.directory_topic", worker.topics.directory), ("worker.outbound_topic", worker.topics.outbound),
            ("worker.dead_letter_topic", worker.topics.eventsDeadLetter),
        ] where topic.isEmpty {
            throw ConfigurationError("\(source(key(path))): must name a topic")
        }
        if worker.domainTopics.isEmpty {
            throw ConfigurationError("\(source(key("worker.topics"))): name at least one topic")
        }

        try readSender(
            string: string,
            integer: integer,
            duration: duration,
            list: { list(key($0)) },
            source: { source(key($0)) }
        )
        try readProviders(
            string: string,
            integer: integer,
            duration: duration,
            source: { source(key($0)) },
            readsCredentials: readsCredentials
        )

        store = try string("store.url") ?? store
        do {
            _ = try StoreLocation(store)
        } catch {
            // The message says what is wrong without the URL, which may hold a password.
            throw ConfigurationError("\(source(key("store.url"))): \(error.message)")
        }
        directoryCache = try integer("store.directory_cache") ?? directoryCache
        maximumDevicesPerUser = try integer("store.max_devices_per_user") ?? maximumDevicesPerUser
        if !(1...1_000_000).contains(maximumDevicesPerUser) {
            throw ConfigurationError("\(source(key("store.max_devices_per_user"))): must be from 1 to 1000000")
        }
        // Devices the directory drops could never be notified: the worker's own limit must decide.
        if maximumDevicesPerUser < worker.maximumDevicesPerRecipient {
            throw ConfigurationError(
                "\(source(key("store.max_devices_per_user"))): \(maximumDevicesPerUser) is below "
                    + "worker.max_devices_per_recipient (\(worker.maximumDevicesPerRecipient)): the directory would "
                    + "drop devices a notification should go to"
            )
        }
        sqliteMemoryMapMegabytes = try integer("store.sqlite_mmap_mb") ?? sqliteMemoryMapMegabytes
        sqlitePageCacheMegabytes = try integer("store.sqlite_cache_mb") ?? sqlitePageCacheMegabytes
        if !(1...SQLiteStore.maximumPageCacheMegabytes).contains(sqlitePageCacheMegabytes) {
            throw ConfigurationError(
                "\(source(key("store.sqlite_cache_mb"))): must be from 1 to \(SQLiteStore.maximumPageCacheMegabytes)"
            )
        }
        sqliteSynchronous = try string("store.sqlite_sync").flatMap(SQLiteStore.Synchronous.init) ?? sqliteSynchronous
        // Neither may be zero (checked with the keys): a zero timeout would fail every PostgreSQL
        // call at once, so the worker would never be ready; a zero retention would forget every
        // decision as soon as it is made, so redeliveries would count twice.
        storeTimeout = try duration("store.timeout") ?? storeTimeout
        purge.retention = try duration("store.retention") ?? purge.retention
        purge.interval = try duration("store.purge_interval") ?? purge.interval
        catalogDirectory = try string("catalog.directory") ?? catalogDirectory
        httpListen = try string("http.listen") ?? httpListen
        if !httpListen.isEmpty {
            let port = httpListen.split(separator: ":").last.flatMap { Int($0) }
            guard httpListen.contains(":"), let port, (0...65535).contains(port) else {
                throw ConfigurationError("\(source(key("http.listen"))): expected host:port, got '\(httpListen)'")
            }
        }
        logLevel = try string("log.level") ?? logLevel
        logFormat = try string("log.format") ?? logFormat
        logUserHashKey = try Self.secret(
            inline: "log.user_hash_key",
            file: "log.user_hash_key_file",
            string: string,
            source: { source(key($0)) }
        )
        // A short key would make the hash guessable again: 16 bytes, as for an HMAC key of this use.
        if let hashKey = logUserHashKey, hashKey.count < 16 {
            let origin = (try string("log.user_hash_key")) == nil ? "log.user_hash_key_file" : "log.user_hash_key"
            throw ConfigurationError("\(source(key(origin))): the key must be at least 16 bytes")
        }
        // Decisions and deliveries are analytics: their recipients are hashed as the logs hash user
        // ids, with the same key, unless a deployment whose analytics may hold ids says `clear`.
        analyticsRecipients =
            try string("analytics.recipient") == "clear" ? .clear : .hashed(UserHash(key: logUserHashKey))
        worker.topics.analyticsRecipients = analyticsRecipients
    }

    /// The `kafka.ssl_*` keys: files that must be readable, used only with a TLS protocol, and
    /// checked by librdkafka itself (it reads them when a client starts) so that a wrong file is
    /// reported here, naming its key, rather than by the first client.
    private mutating func readKafkaTLS(
        string: (String) throws(ConfigurationError) -> String?,
        source: (String) -> String
    ) throws(ConfigurationError) {
        func file(_ path: String) throws(ConfigurationError) -> String? {
            guard let file = try string(path), !file.isEmpty else { return nil }
            guard FileManager.default.isReadableFile(atPath: file) else {
                throw ConfigurationError("\(source(path)): cannot read \(file)")
            }
            return file
        }
        kafka.sslCAFile = try file("kafka.ssl_ca_file")
        kafka.sslCertificateFile = try file("kafka.ssl_certificate_file")
        kafka.sslKeyFile = try file("kafka.ssl_key_file")
        var passwordKey = "kafka.ssl_key_password"
        if let password = try string("kafka.ssl_key_password") {
            kafka.sslKeyPassword = password
        } else if let passwordFile = try file("kafka.ssl_key_password_file") {
            passwordKey = "kafka.ssl_key_password_file"
            guard let data = FileManager.default.contents(atPath: passwordFile) else {
                throw ConfigurationError("\(source("kafka.ssl_key_password_file")): cannot read \(passwordFile)")
            }
            kafka.sslKeyPassword = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .newlines)
        }
        let set = [
            ("kafka.ssl_ca_file", kafka.sslCAFile != nil),
            ("kafka.ssl_certificate_file", kafka.sslCertificateFile != nil),
            ("kafka.ssl_key_file", kafka.sslKeyFile != nil), (passwordKey, kafka.sslKeyPassword != nil),
        ].filter(\.1).map(\.0)
        guard let first = set.first else { return }
        guard kafka.securityProtocol.hasSuffix("ssl") else {
            throw ConfigurationError(
                "\(source(first)): needs kafka.security_protocol ssl or sasl_ssl, not \(kafka.securityProtocol)"
            )
        }
        if (kafka.sslCertificateFile == nil) != (kafka.sslKeyFile == nil) {
            let missing = kafka.sslKeyFile == nil ? "kafka.ssl_key_file" : "kafka.ssl_certificate_file"
            throw ConfigurationError("\(source(first)): a client certificate needs both files; \(missing) is not set")
        }
        if kafka.sslKeyPassword != nil && kafka.sslKeyFile == nil {
            throw ConfigurationError("\(source(passwordKey)): there is no kafka.ssl_key_file")
        }
        // The certificate authorities alone first, so that a failure names the right key.
        var properties = [("security.protocol", "ssl")]
        if let ca = kafka.sslCAFile {
            properties.append(("ssl.ca.location", ca))
            do {
                try KafkaClientOptions.checkTLS(properties)
            } catch {
                throw ConfigurationError("\(source("kafka.ssl_ca_file")): \(error.message)")
            }
        }
        guard let certificate = kafka.sslCertificateFile, let key = kafka.sslKeyFile else { return }
        properties += [("ssl.certificate.location", certificate), ("ssl.key.location", key)]
        if let password = kafka.sslKeyPassword { properties.append(("ssl.key.password", password)) }
        do {
            try KafkaClientOptions.checkTLS(properties)
        } catch {
            // librdkafka's reason names the file, never the password.
            throw ConfigurationError(
                "\(source("kafka.ssl_certificate_file")) and kafka.ssl_key_file: \(error.message)"
            )
        }
    }

    /// `kafka.properties`: each one checked by librdkafka, none that Herald sets itself.
    private mutating func readKafkaProperties(_ value: Value?, source: String) throws(ConfigurationError) {
        let properties: [String: String]
        switch value {
        case nil: return
        case .mapping(let mapping)?: properties = mapping
        case .environment(let text)?: properties = try Self.entries(text, variable: source)
        case .scalar?, .list?:
            throw ConfigurationError("\(source): expected a mapping of librdkafka properties to values")
        }
        try Self.checkKafkaProperties(properties, source: source)
        kafka.properties = properties
    }

    /// Refuses a property Herald sets itself, or one librdkafka refuses, naming `source` and the
    /// property (never its value: it may be a secret).
    public static func checkKafkaProperties(
        _ properties: [String: String],
        source: String
    ) throws(ConfigurationError) {
        for (name, value) in properties.sorted(by: { $0.key < $1.key }) {
            if let reason = Kafka.managedProperties[name] {
                throw ConfigurationError("\(source): '\(name)' is not set here: \(reason)")
            }
            if let problem = KafkaClientOptions.problem(setting: name, to: value) {
                throw ConfigurationError("\(source): '\(name)': \(problem)")
            }
        }
    }

    private mutating func readSender(
        string: (String) throws(ConfigurationError) -> String?,
        integer: (String) throws(ConfigurationError) -> Int?,
        duration: (String) throws(ConfigurationError) -> Duration?,
        list: (String) -> [String]?,
        source: (String) -> String
    ) throws(ConfigurationError) {
        sender.groupID = try string("sender.group_id") ?? sender.groupID
        sender.outboundTopic = try string("sender.outbound_topic") ?? worker.topics.outbound
        sender.directoryTopic = try string("sender.directory_topic") ?? worker.topics.directory
        sender.deadLetterTopic = try string("sender.dead_letter_topic") ?? sender.deadLetterTopic
        if let decisions = try string("sender.decisions_topic") {
            sender.decisionsTopic = decisions.isEmpty ? nil : decisions
        } else {
            sender.decisionsTopic = worker.topics.decisions
        }
        if let deliveries = try string("sender.deliveries_topic") {
            sender.deliveriesTopic = deliveries.isEmpty ? nil : deliveries
        }
        sender.retryTopicPrefix = try string("sender.retry_topic_prefix") ?? sender.retryTopicPrefix
        if let delays = list("sender.retry_delays") {
            var parsed: [Duration] = []
            for delay in delays {
                guard let value = Self.duration(delay) else {
                    throw ConfigurationError(
                        "\(source("sender.retry_delays")): expected durations such as 10s, 1m, 10m, 1h; got '\(delay)'"
                    )
                }
                parsed.append(value)
            }
            sender.retryDelays = parsed
        }
        if let jitter = try string("sender.retry_jitter") {
            guard let value = Double(jitter), (0...1).contains(value) else {
                throw ConfigurationError(
                    "\(source("sender.retry_jitter")): expected a fraction from 0 to 1, got '\(jitter)'"
                )
            }
            sender.retryJitter = value
        }
        sender.batchSize = try integer("sender.batch_size") ?? sender.batchSize
        if !Self.batchSizes.contains(sender.batchSize) {
            throw ConfigurationError("\(source("sender.batch_size")): must be from 1 to \(Self.batchSizes.upperBound)")
        }
        sender.receiptDelay = try duration("sender.receipt_delay") ?? sender.receiptDelay
        sender.circuitFailureThreshold =
            try integer("sender.circuit_failure_threshold") ?? sender.circuitFailureThreshold
        sender.circuitOpenDuration = try duration("sender.circuit_open_duration") ?? sender.circuitOpenDuration
        sender.shutdownDeadline = try duration("sender.shutdown_deadline") ?? sender.shutdownDeadline
        for (path, topic) in [
            ("sender.outbound_topic", sender.outboundTopic), ("sender.directory_topic", sender.directoryTopic),
            ("sender.dead_letter_topic", sender.deadLetterTopic),
            ("sender.retry_topic_prefix", sender.retryTopicPrefix),
        ] where topic.isEmpty {
            throw ConfigurationError("\(source(path)): must name a topic")
        }
    }

    /// What only the sender reads: the provider credentials and the trust roots file. A worker-only
    /// process leaves them unread, so that a worker's pod needs neither the secrets nor the file
    /// mounted (a configuration shared by both roles names them).
    static let senderOnlyKeys: Set<String> = [
        "providers.apns.key", "providers.apns.key_file", "providers.fcm.service_account",
        "providers.fcm.service_account_file", "providers.expo.access_token", "providers.expo.access_token_file",
        "providers.trust_roots_file",
    ]

    /// Reads a secret: the value of `inline` (set by its environment variable), or the contents of
    /// the file `file` names. Errors name the key, never the contents.
    private static func secret(
        inline: String,
        file: String,
        string: (String) throws(ConfigurationError) -> String?,
        source: (String) -> String
    ) throws(ConfigurationError) -> [UInt8]? {
        if let value = try string(inline), !value.isEmpty { return Array(value.utf8) }
        guard let path = try string(file), !path.isEmpty else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("\(source(file)): cannot read \(path)")
        }
        return Array(data)
    }

    private mutating func readProviders(
        string read: (String) throws(ConfigurationError) -> String?,
        integer: (String) throws(ConfigurationError) -> Int?,
        duration: (String) throws(ConfigurationError) -> Duration?,
        source: (String) -> String,
        readsCredentials: Bool
    ) throws(ConfigurationError) {
        // Without the sender, its credentials and files are left unread: only their keys are
        // checked (known, of the right type), like every other key.
        func string(_ path: String) throws(ConfigurationError) -> String? {
            guard readsCredentials || !Self.senderOnlyKeys.contains(path) else { return nil }
            return try read(path)
        }
        if let path = try string("providers.trust_roots_file"), !path.isEmpty {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError("\(source("providers.trust_roots_file")): cannot read \(path)")
            }
            let pem = String(decoding: data, as: UTF8.self)
            // Checked as TLS would read it when the first provider connection opens.
            do {
                _ = try ProviderTransport.trustRootCount(pem: pem)
            } catch {
                throw ConfigurationError(
                    "\(source("providers.trust_roots_file")): \(path) holds no PEM certificate that can be read"
                )
            }
            providers.trustRootsPEM = pem
        }
        if let pem = try Self.secret(
            inline: "providers.apns.key",
            file: "providers.apns.key_file",
            string: string,
            source: source
        ) {
            let origin =
                (try string("providers.apns.key")).map { _ in "providers.apns.key" } ?? "providers.apns.key_file"
            guard let keyID = try string("providers.apns.key_id"), !keyID.isEmpty else {
                throw ConfigurationError(
                    "\(source("providers.apns.key_id")): an APNs key needs its key id (10 characters, from the developer account)"
                )
            }
            guard let teamID = try string("providers.apns.team_id"), !teamID.isEmpty else {
                throw ConfigurationError("\(source("providers.apns.team_id")): an APNs key needs its team id")
            }
            do {
                providers.apns.key = try APNsSigningKey(
                    pem: String(decoding: pem, as: UTF8.self),
                    keyID: keyID,
                    teamID: teamID
                )
            } catch {
                throw ConfigurationError("\(source(origin)): not a PEM-encoded P-256 private key (an APNs .p8 file)")
            }
        }
        providers.apns.productionURL = try string("providers.apns.production_url") ?? providers.apns.productionURL
        providers.apns.sandboxURL = try string("providers.apns.sandbox_url") ?? providers.apns.sandboxURL
        providers.apns.concurrency = try integer("providers.apns.concurrency") ?? providers.apns.concurrency
        providers.apns.requestTimeout = try duration("providers.apns.request_timeout") ?? providers.apns.requestTimeout
        providers.apns.connectTimeout = try duration("providers.apns.connect_timeout") ?? providers.apns.connectTimeout
        providers.apns.usesFrameConnections =
            try string("providers.apns.transport").map { $0 == "frames" } ?? providers.apns.usesFrameConnections
        providers.apns.frameConnections = try integer("providers.apns.connections") ?? providers.apns.frameConnections
        if let json = try Self.secret(
            inline: "providers.fcm.service_account",
            file: "providers.fcm.service_account_file",
            string: string,
            source: source
        ) {
            let origin =
                (try string("providers.fcm.service_account")).map { _ in "providers.fcm.service_account" }
                ?? "providers.fcm.service_account_file"
            do {
                providers.fcm.serviceAccount = try ServiceAccount(json: json)
            } catch {
                throw ConfigurationError("\(source(origin)): \(error.description)")
            }
        }
        providers.fcm.baseURL = try string("providers.fcm.base_url") ?? providers.fcm.baseURL
        providers.fcm.concurrency = try integer("providers.fcm.concurrency") ?? providers.fcm.concurrency
        providers.fcm.requestTimeout = try duration("providers.fcm.request_timeout") ?? providers.fcm.requestTimeout
        providers.fcm.connectTimeout = try duration("providers.fcm.connect_timeout") ?? providers.fcm.connectTimeout
        providers.expo.enabled = try string("providers.expo.enabled").map { $0 == "true" } ?? providers.expo.enabled
        providers.expo.baseURL = try string("providers.expo.base_url") ?? providers.expo.baseURL
        if let token = try Self.secret(
            inline: "providers.expo.access_token",
            file: "providers.expo.access_token_file",
            string: string,
            source: source
        ) {
            providers.expo.accessToken = String(decoding: token, as: UTF8.self).trimmingCharacters(
                in: .whitespacesAndNewlines
            )
        }
        providers.expo.concurrency = try integer("providers.expo.concurrency") ?? providers.expo.concurrency
        providers.expo.requestTimeout = try duration("providers.expo.request_timeout") ?? providers.expo.requestTimeout
        providers.expo.connectTimeout = try duration("providers.expo.connect_timeout") ?? providers.expo.connectTimeout
        // Bounded: the APNs pool makes a slot per connection up front, and a count beyond any use
        // (10^18) trapped when the first call was made.
        for (path, value, limit) in [
            ("providers.apns.concurrency", providers.apns.concurrency, Self.maximumConcurrency),
            ("providers.apns.connections", providers.apns.frameConnections, Self.maximumConnections),
            ("providers.fcm.concurrency", providers.fcm.concurrency, Self.maximumConcurrency),
            ("providers.expo.concurrency", providers.expo.concurrency, Self.maximumConcurrency),
        ] where !(1...limit).contains(value) {
            throw ConfigurationError("\(source(path)): must be from 1 to \(limit)")
        }
    }

    /// The most requests in flight per provider credential, and HTTP/2 connections per APNs host.
    public static let maximumConcurrency = 10_000
    public static let maximumConnections = 256

    /// What `worker.batch_size` and `sender.batch_size` may be. A consumer allocates room for a
    /// batch up front and buffers ten; a batch size beyond any use (10^18) trapped at start-up.
    public static let batchSizes = 1...100_000

    /// The units a duration is written in, and their milliseconds.
    static let durationUnits: [(suffix: String, milliseconds: Int64)] = [
        ("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000),
    ]

    /// `duration` as the configuration would write it, in the largest unit that divides it:
    /// `10s`, `10m`, `1h`, `1500ms`.
    public static func text(of duration: Duration) -> String {
        let milliseconds = duration.milliseconds
        let unit = durationUnits.last { milliseconds % $0.milliseconds == 0 && milliseconds > 0 } ?? durationUnits[0]
        return "\(milliseconds / unit.milliseconds)\(unit.suffix)"
    }

    /// `500ms`, `5s`, `2m`, `1h`, `7d`, or a plain number of seconds; `nil` for anything else,
    /// including a number too large for 64 bits of milliseconds (which trapped at start-up).
    public static func duration(_ text: String) -> Duration? {
        for (suffix, milliseconds) in durationUnits where text.hasSuffix(suffix) {
            guard let number = Int64(text.dropLast(suffix.count)), number >= 0 else { return nil }
            let (total, overflow) = number.multipliedReportingOverflow(by: milliseconds)
            return overflow ? nil : .milliseconds(total)
        }
        return Int64(text).flatMap { $0 >= 0 && $0 <= Int64.max / 1000 ? .seconds($0) : nil }
    }

    /// Yams' message without the document's text (it may hold a secret).
    static func yamlProblem(_ error: any Error) -> String {
        if let yaml = error as? YamlError, case .scanner(_, let problem, let mark, _) = yaml {
            return "\(problem) at line \(mark.line)"
        }
        if let yaml = error as? YamlError, case .parser(_, let problem, let mark, _) = yaml {
            return "\(problem) at line \(mark.line)"
        }
        return "syntax error"
    }
}

/// A configuration problem, naming the file or variable and key.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, naming the key (or option) it is about.
    public var message: String
    public var description: String { "configuration: " + message }

    init(_ message: String) { self.message = message }
}
