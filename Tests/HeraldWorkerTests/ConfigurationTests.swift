import Foundation
import HeraldApp
import HeraldStore
import HeraldTestSupport
import HeraldWorker
import Testing

@Suite("herald.yaml")
struct ConfigurationTests {
    @Test("the README's configuration reference lists every key Herald reads")
    func referenceIsComplete() throws {
        let readme = try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let missing = HeraldConfiguration.documentedKeys.filter { !readme.contains("| `\($0)` |") }
        #expect(missing.isEmpty, "not in the README's configuration reference: \(missing)")
    }

    let scratch = ScratchDirectory()

    func file(_ text: String) throws -> String {
        try scratch.file(UUID().uuidString + ".yaml", text)
    }

    /// The README's configuration reference: each key's default cell, without its backticks
    /// (empty for none).
    static func documentedDefaults() throws -> [(key: String, value: String)] {
        let readme = try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        return readme.split(separator: "\n").compactMap { line -> (key: String, value: String)? in
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard cells.count >= 4, cells[1].hasPrefix("`"), cells[1].hasSuffix("`") else { return nil }
            let key = String(cells[1].dropFirst().dropLast())
            guard HeraldConfiguration.documentedKeys.contains(key) else { return nil }
            let cell = cells[2]
            let value =
                cell.hasPrefix("`") && cell.hasSuffix("`") && cell.count > 1 ? String(cell.dropFirst().dropLast()) : ""
            return (key, value)
        }
    }

    /// The whole configuration as text: two loads that differ in any setting differ here.
    static func text(_ configuration: HeraldConfiguration) -> String {
        var text = ""
        dump(configuration, to: &text)
        return text
    }

    /// `key: value` as YAML, nested by the key's dots; a list as written, a scalar quoted so that
    /// YAML keeps it a string, as an environment variable would give it.
    static func yaml(_ key: String, _ value: String) -> String {
        let parts = key.split(separator: ".")
        var text = ""
        for (depth, part) in parts.enumerated() {
            text += String(repeating: "  ", count: depth) + part + ":"
            text += depth == parts.count - 1 ? " " : "\n"
        }
        return text + (value.hasPrefix("[") ? value : "'\(value)'") + "\n"
    }

    /// A valid value other than `value`, to show that the key is read.
    static func other(than value: String) -> String {
        let alternatives = [
            "plaintext": "ssl", "dead_letter": "ignore", "frames": "async-http-client", "full": "normal",
            "info": "debug",
            "json": "text", "hashed": "clear", "true": "false", "0.1": "0.2", "127.0.0.1:9464": "127.0.0.1:9465",
            "[embedded]": "[kafka-1:9092]",
        ]
        if let alternative = alternatives[value] { return alternative }
        if value.hasPrefix("["), let comma = value.firstIndex(of: ",") {
            return "[" + value[value.index(after: comma)...].drop { $0 == " " }
        }
        if let number = Int(value) { return String(number + 1) }
        if let unit = value.firstIndex(where: \.isLetter), let number = Int(value[..<unit]) {
            return "\(number + 1)\(value[unit...])"
        }
        return value + "-x"
    }

    @Test(
        "the README's defaults are the ones Herald runs with: each, set as written, changes nothing; set otherwise, it does"
    )
    func documentedDefaults() throws {
        let defaults = try Self.documentedDefaults()
        #expect(defaults.count == HeraldConfiguration.documentedKeys.count, "a row for every key")
        let written = Dictionary(defaults.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
        let unset = Self.text(try HeraldConfiguration.load(path: try file(""), environment: [:]))
        var checked = 0
        for (key, documented) in defaults where !documented.isEmpty {
            // A default that names another key (`sender.outbound_topic`: `worker.outbound_topic`)
            // is that key's value.
            let value = written[documented] ?? documented
            guard !value.isEmpty else { continue }
            let same = try HeraldConfiguration.load(path: try file(Self.yaml(key, value)), environment: [:])
            // Compared first: the expectation would print both dumps whole.
            let unchanged = Self.text(same) == unset
            #expect(unchanged, "\(key): the README's default `\(documented)` is not the one it runs with")
            let changed = try HeraldConfiguration.load(
                path: try file(Self.yaml(key, Self.other(than: value))),
                environment: [:]
            )
            let read = Self.text(changed) != unset
            #expect(read, "\(key): set to another value, nothing changed")
            checked += 1
        }
        #expect(checked >= 50, "only \(checked) defaults checked")
    }

    @Test("a file's values are read, and HERALD_* variables override them")
    func fileAndEnvironment() throws {
        let path = try file(
            """
            kafka:
              bootstrap_servers: [kafka-1:9092, kafka-2:9092]
            worker:
              topics: [orders.events]
              batch_size: 250
              unknown_event_types: ignore
              due_work_interval: 500ms
            store:
              url: sqlite:/var/lib/herald/state.sqlite
              retention: 3d
              sqlite_mmap_mb: 256
              sqlite_cache_mb: 48
              sqlite_sync: normal
            """
        )
        let configuration = try HeraldConfiguration.load(
            path: path,
            environment: [
                "HERALD_WORKER_BATCH_SIZE": "400", "HERALD_WORKER_TOPICS": "a.events, b.events",
                "HERALD_STORE_PURGE_INTERVAL": "0s",
            ]
        )
        #expect(configuration.kafka.bootstrapServers == ["kafka-1:9092", "kafka-2:9092"])
        #expect(configuration.worker.batchSize == 400)
        #expect(configuration.worker.domainTopics == ["a.events", "b.events"])
        #expect(configuration.worker.unknownEventTypes == .ignore)
        #expect(configuration.worker.dueWorkInterval == .milliseconds(500))
        #expect(configuration.store == "sqlite:/var/lib/herald/state.sqlite")
        #expect(configuration.purge == PurgeSchedule(retention: .seconds(3 * 86_400), interval: .zero))
        #expect(configuration.sqliteMemoryMapMegabytes == 256)
        #expect(HeraldConfiguration().sqliteMemoryMapMegabytes == 0, "no memory map unless configured")
        #expect(configuration.sqlitePageCacheMegabytes == 48)
        #expect(HeraldConfiguration().sqlitePageCacheMegabytes == 16)
        #expect(configuration.sqliteSynchronous == .normal)
        #expect(HeraldConfiguration().sqliteSynchronous == .full, "commits reach the disk unless configured otherwise")
        #expect(configuration.worker.topics.outbound == "herald.outbound", "unset keys keep their defaults")
    }

    @Test(
        "errors name the file or variable and the key",
        arguments: [
            ("worker:\n  batch_size: many\n", [:], "worker.batch_size: expected a non-negative integer, got 'many'"),
            ("worker:\n  batchsize: 10\n", [:], "unknown key 'worker.batchsize'"),
            (
                "worker:\n  unknown_event_types: explode\n", [:],
                "worker.unknown_event_types: expected one of dead_letter, ignore"
            ),
            ("", ["HERALD_WORKER_DUE_WORK_INTERVAL": "soon"], "HERALD_WORKER_DUE_WORK_INTERVAL: expected a duration"),
            ("worker: [1, 2\n", [:], "not valid YAML"),
            ("worker: [1, 2]\n", [:], "worker: expected a mapping of keys (worker.group_id, worker.topics,"),
            ("worker:\n  batch_size:\n    a: 1\n", [:], "worker.batch_size: expected one value, not a mapping"),
            ("http:\n  listen: everywhere\n", [:], "http.listen: expected host:port, got 'everywhere'"),
            ("", ["HERALD_STORE_URL": "postgres://herald@db:port/herald"], "HERALD_STORE_URL: "),
            ("store:\n  timeout: 0s\n", [:], "store.timeout: must be longer than 0s"),
            (
                "worker:\n  max_devices_per_recipient: 0\n", [:],
                "worker.max_devices_per_recipient: must be from 1 to 100000"
            ),
            ("", ["HERALD_STORE_SQLITE_SYNC": "off"], "HERALD_STORE_SQLITE_SYNC: expected one of full, normal"),
            ("store:\n  sqlite_cache_mb: 0\n", [:], "store.sqlite_cache_mb: must be from 1 to 65536"),
            ("", ["HERALD_STORE_SQLITE_CACHE_MB": "65537"], "HERALD_STORE_SQLITE_CACHE_MB: must be from 1 to 65536"),
            ("store:\n  retention: 0d\n", [:], "store.retention: must be longer than 0s"),
            ("", ["HERALD_STORE_RETENTION": "a week"], "HERALD_STORE_RETENTION: expected a duration"),
            // Too large for 64 bits of milliseconds: these trapped at start-up instead of naming the key.
            (
                "", ["HERALD_WORKER_SHUTDOWN_DEADLINE": "999999999999999999d"],
                "HERALD_WORKER_SHUTDOWN_DEADLINE: expected a duration"
            ),
            ("store:\n  retention: 9223372036854775807s\n", [:], "store.retention: expected a duration"),
            ("worker:\n  batch_size: 0\n", [:], "worker.batch_size: must be from 1 to 100000"),
            (
                "", ["HERALD_WORKER_BATCH_SIZE": "1000000000000000000"],
                "HERALD_WORKER_BATCH_SIZE: must be from 1 to 100000"
            ),
            ("sender:\n  batch_size: 100001\n", [:], "sender.batch_size: must be from 1 to 100000"),
            (
                "", ["HERALD_STORE_SQLITE_MMAP_MB": "-1"],
                "HERALD_STORE_SQLITE_MMAP_MB: expected a non-negative integer, got '-1'"
            ),
            ("providers:\n  apns:\n    connections: 0\n", [:], "providers.apns.connections: must be from 1 to 256"),
            (
                "", ["HERALD_PROVIDERS_APNS_CONNECTIONS": "1000000000000000000"],
                "HERALD_PROVIDERS_APNS_CONNECTIONS: must be from 1 to 256"
            ),
            ("providers:\n  fcm:\n    concurrency: 10001\n", [:], "providers.fcm.concurrency: must be from 1 to 10000"),
            (
                "kafka:\n  properties:\n    fetch.min.bytes: lots\n", [:],
                "kafka.properties: 'fetch.min.bytes': Invalid value for configuration property \"fetch.min.bytes\""
            ),
            (
                "kafka:\n  properties:\n    fetch.minimum.bytes: 1\n", [:],
                "kafka.properties: 'fetch.minimum.bytes': No such configuration property"
            ),
            (
                "kafka:\n  properties:\n    enable.auto.offset.store: true\n", [:],
                "kafka.properties: 'enable.auto.offset.store' is not set here: Herald stores an offset only once"
            ),
            (
                // Turned off (or slowed) here, the consumers' statistics would stop, and with them
                // the gauge, and the watch would warn that Kafka is unreachable every minute.
                "kafka:\n  properties:\n    statistics.interval.ms: 0\n", [:],
                "kafka.properties: 'statistics.interval.ms' is not set here: Herald reads its consumers' statistics"
            ),
            (
                "kafka:\n  properties:\n    bootstrap.servers: kafka:9092\n", [:],
                "'bootstrap.servers' is not set here: set kafka.bootstrap_servers"
            ),
            ("kafka:\n  properties: fast\n", [:], "kafka.properties: expected a mapping of librdkafka properties"),
            (
                "kafka:\n  properties:\n    client.rack: [a, b]\n", [:],
                "kafka.properties.client.rack: expected one value"
            ),
            (
                "", ["HERALD_KAFKA_PROPERTIES": "client.rack=a,linger"],
                "HERALD_KAFKA_PROPERTIES: entry 2 is not name=value"
            ),
            (
                "", ["HERALD_KAFKA_PROPERTIES": "fetch.min.bytes=-5"],
                "HERALD_KAFKA_PROPERTIES: 'fetch.min.bytes': Configuration property \"fetch.min.bytes\" value -5 is outside"
            ),
            ("kafka:\n  ssl_ca_file: /no/such/ca.pem\n", [:], "kafka.ssl_ca_file: cannot read /no/such/ca.pem"),
            // A zero deadline, timeout or interval fails every call at once, or spins a loop.
            ("worker:\n  due_work_interval: 0s\n", [:], "worker.due_work_interval: must be longer than 0s"),
            ("", ["HERALD_SENDER_SHUTDOWN_DEADLINE": "0"], "HERALD_SENDER_SHUTDOWN_DEADLINE: must be longer than 0s"),
            ("providers:\n  fcm:\n    request_timeout: 0ms\n", [:], "providers.fcm.request_timeout: must be longer"),
            ("providers:\n  expo:\n    connect_timeout: 0s\n", [:], "providers.expo.connect_timeout: must be longer"),
            ("kafka:\n  session_timeout: 0s\n", [:], "kafka.session_timeout: must be longer than 0s"),
            // SASL settings without a sasl_* protocol would go unused; a sasl_* protocol needs them all.
            (
                "kafka:\n  sasl_mechanism: PLAIN\n", ["HERALD_KAFKA_SASL_PASSWORD": "hunter2"],
                "kafka.sasl_mechanism: needs kafka.security_protocol sasl_plaintext or sasl_ssl, not plaintext"
            ),
            (
                "", ["HERALD_KAFKA_SASL_PASSWORD": "hunter2"],
                "HERALD_KAFKA_SASL_PASSWORD: needs kafka.security_protocol sasl_plaintext or sasl_ssl"
            ),
            (
                "kafka:\n  security_protocol: sasl_ssl\n  sasl_mechanism: PLAIN\n",
                ["HERALD_KAFKA_SASL_PASSWORD": "hunter2"], "kafka.security_protocol: sasl_ssl needs kafka.sasl_username"
            ),
            (
                "kafka:\n  security_protocol: sasl_plaintext\n  sasl_mechanism: PLAIN\n  sasl_username: herald\n", [:],
                "kafka.security_protocol: sasl_plaintext needs kafka.sasl_password_file (or HERALD_KAFKA_SASL_PASSWORD)"
            ),
        ] as [(String, [String: String], String)]
    )
    func errorsNameTheKey(_ text: String, _ environment: [String: String], _ expected: String) throws {
        let path = try file(text)
        do {
            _ = try HeraldConfiguration.load(path: path, environment: environment)
            Issue.record("accepted: \(text)")
        } catch {
            #expect("\(error)".contains(expected), "\(error)")
        }
    }

    @Test("kafka.properties reach every Kafka client, after Herald's own, and the variable replaces the file's")
    func kafkaProperties() throws {
        let path = try file(
            """
            kafka:
              bootstrap_servers: [kafka-1:9092]
              security_protocol: sasl_ssl
              sasl_mechanism: SCRAM-SHA-256
              sasl_username: herald
              properties:
                client.rack: eu-north-1a
                socket.keepalive.enable: true
                fetch.min.bytes: 1024
            """
        )
        let environment = ["HERALD_KAFKA_SASL_PASSWORD": "pw"]
        let configuration = try HeraldConfiguration.load(path: path, environment: environment)
        #expect(
            configuration.kafka.properties
                == ["client.rack": "eu-north-1a", "socket.keepalive.enable": "true", "fetch.min.bytes": "1024"]
        )
        let options = WorkerApp.clientOptions(configuration.kafka, bootstrapServers: ["kafka-1:9092"])
        #expect(options.properties["client.rack"] == "eu-north-1a")
        #expect(options.properties["fetch.min.bytes"] == "1024")
        #expect(options.properties["security.protocol"] == "sasl_ssl", "the typed keys still apply")
        #expect(options.properties["sasl.password"] == "pw")

        let overridden = try HeraldConfiguration.load(
            path: path,
            environment: environment.merging(["HERALD_KAFKA_PROPERTIES": "client.rack=eu-north-1b, linger.ms = 20"]) {
                $1
            }
        )
        #expect(overridden.kafka.properties == ["client.rack": "eu-north-1b", "linger.ms": "20"])

        // librdkafka's list values (`debug`) hold commas: escaped, they stay in the value.
        let listed = try HeraldConfiguration.load(
            path: path,
            environment: environment.merging([
                "HERALD_KAFKA_PROPERTIES": #"debug=cgrp\,fetch, client.rack=rack\\1,,ssl.cipher.suites=a\b"#
            ]) { $1 }
        )
        #expect(
            listed.kafka.properties
                == ["debug": "cgrp,fetch", "client.rack": #"rack\1"#, "ssl.cipher.suites": #"a\b"#]
        )
        #expect(HeraldConfiguration().kafka.properties.isEmpty)
    }

    @Test(
        "a misspelled key is named with the key it most likely meant; a misspelled HERALD_ variable is warned of, not its value"
    )
    func misspellings() throws {
        for (text, suggestion) in [
            (
                "worker:\n  batch_sise: 10\n",
                "unknown key 'worker.batch_sise' (did you mean 'worker.batch_size'?); known here:"
            ),
            ("store:\n  urll: x\n", "unknown key 'store.urll' (did you mean 'store.url'?)"),
            ("worker:\n  colour: blue\n", "unknown key 'worker.colour'; known here:"),
        ] {
            do {
                _ = try HeraldConfiguration.load(path: try file(text), environment: [:])
                Issue.record("\(text): accepted")
            } catch {
                #expect("\(error)".contains(suggestion), "\(error)")
            }
        }
        let configuration = try HeraldConfiguration.load(
            path: nil,
            environment: [
                "HERALD_WORKER_BATCH_SISE": "10", "HERALD_STORE_URLL": "postgres://herald:hunter2@db/herald",
                // Not settings, and not near one: the scripts' and tests' own variables.
                "HERALD_STORE": "postgres://x@y/z", "HERALD_TEST_PHASE_LIMIT": "3", "HERALD_UPDATE_GOLDENS": "1",
                // A setting: read, not warned of.
                "HERALD_WORKER_BATCH_SIZE": "20",
            ]
        )
        #expect(configuration.worker.batchSize == 20)
        #expect(
            configuration.warnings == [
                "HERALD_STORE_URLL is not a setting Herald reads: did you mean HERALD_STORE_URL? It is ignored",
                "HERALD_WORKER_BATCH_SISE is not a setting Herald reads: did you mean HERALD_WORKER_BATCH_SIZE? It is ignored",
            ]
        )
        #expect(!configuration.warnings.joined().contains("hunter2"))
    }

    @Test("a duration is written back in the largest unit that divides it, and reads back as itself")
    func durationText() {
        let cases = [
            ("10s", "10s"), ("60s", "1m"), ("600", "10m"), ("3600s", "1h"), ("1500ms", "1500ms"), ("2d", "2d"),
            ("0s", "0ms"),
        ]
        for (written, expected) in cases {
            let duration = HeraldConfiguration.duration(written)
            #expect(duration.map(HeraldConfiguration.text(of:)) == expected, "\(written)")
            #expect(HeraldConfiguration.duration(expected) == duration, "\(expected) reads back")
        }
    }

    @Test("provider credentials are read only by a process that runs the sender")
    func credentialsOnlyForTheSender() throws {
        let path = try file(
            """
            providers:
              apns:
                key_file: /var/run/secrets/herald/apns-key.p8
                key_id: ABCDE12345
                team_id: TEAM123456
                concurrency: 4
            """
        )
        let worker = try HeraldConfiguration.load(path: path, environment: [:], roles: [.worker])
        #expect(worker.providers.apns.key == nil)
        #expect(worker.providers.apns.concurrency == 4, "the other provider keys are still read")
        for roles: Set<HeraldRole> in [[.sender], [.worker, .sender]] {
            do {
                _ = try HeraldConfiguration.load(path: path, environment: [:], roles: roles)
                Issue.record("\(roles): read no APNs key")
            } catch {
                #expect("\(error)".contains("providers.apns.key_file: cannot read"), "\(error)")
            }
        }
        // A worker still refuses a wrongly typed credential key.
        #expect(throws: ConfigurationError.self) {
            try HeraldConfiguration.load(
                path: try file("providers:\n  apns:\n    key_file: [a, b]\n"),
                environment: [:],
                roles: [.worker]
            )
        }
    }

    @Test("the kafka.ssl_* keys need a TLS protocol, and a certificate needs its key")
    func kafkaTLSKeys() throws {
        let pem = try file("not checked before the protocol is")
        let cases: [(String, String)] = [
            ("kafka:\n  ssl_ca_file: \(pem)\n", "kafka.ssl_ca_file: needs kafka.security_protocol ssl or sasl_ssl"),
            (
                "kafka:\n  security_protocol: ssl\n  ssl_certificate_file: \(pem)\n",
                "kafka.ssl_certificate_file: a client certificate needs both files; kafka.ssl_key_file is not set"
            ),
            (
                "kafka:\n  security_protocol: ssl\n  ssl_key_password_file: \(pem)\n",
                "kafka.ssl_key_password_file: there is no kafka.ssl_key_file"
            ),
        ]
        for (text, expected) in cases {
            do {
                _ = try HeraldConfiguration.load(path: try file(text), environment: [:])
                Issue.record("accepted: \(text)")
            } catch {
                #expect("\(error)".contains(expected), "\(error)")
            }
        }
    }

    @Test("secrets are read from files or variables and never appear in errors")
    func secrets() throws {
        let secret = "s3cr3t-password-value"
        let passwordFile = try file(secret + "\n")
        let configuration = try HeraldConfiguration.load(
            path: try file(
                """
                kafka:
                  security_protocol: sasl_ssl
                  sasl_mechanism: SCRAM-SHA-512
                  sasl_username: herald
                  sasl_password_file: \(passwordFile)
                """
            ),
            environment: [:]
        )
        #expect(configuration.kafka.saslPassword == secret)

        // A bad store URL's error does not repeat the URL (it holds a password).
        let url = "postgres://herald:\(secret)@db:notaport/herald"
        do {
            _ = try HeraldConfiguration.load(path: nil, environment: ["HERALD_STORE_URL": url])
            Issue.record("accepted a port that is not a number")
        } catch {
            #expect("\(error)".contains("HERALD_STORE_URL"))
            #expect(!"\(error)".contains(secret))
        }
        // Nor does a YAML syntax error quote the document.
        do {
            _ = try HeraldConfiguration.load(path: try file("kafka:\n  sasl_password: \"\(secret)\n"), environment: [:])
            Issue.record("accepted unterminated YAML")
        } catch {
            #expect(!"\(error)".contains(secret), "\(error)")
        }
        // A SASL protocol without a password is refused before connecting.
        #expect(throws: ConfigurationError.self) {
            try HeraldConfiguration.load(path: nil, environment: ["HERALD_KAFKA_SECURITY_PROTOCOL": "sasl_ssl"])
        }
    }

    @Test(
        "the key user ids in logs are hashed with comes from a file or a variable; a short one is refused, naming the key, never showing it"
    )
    func userHashKey() throws {
        let key = "0123456789abcdef-log-key"
        let keyFile = try file(key)
        let fromFile = try HeraldConfiguration.load(
            path: try file("log:\n  user_hash_key_file: \(keyFile)\n"),
            environment: [:]
        )
        #expect(fromFile.logUserHashKey == Array(key.utf8))
        let fromVariable = try HeraldConfiguration.load(path: nil, environment: ["HERALD_LOG_USER_HASH_KEY": key])
        #expect(fromVariable.logUserHashKey == Array(key.utf8))
        #expect(try HeraldConfiguration.load(path: nil, environment: [:]).logUserHashKey == nil)
        for (environment, named) in [
            (["HERALD_LOG_USER_HASH_KEY": "short-secret"], "HERALD_LOG_USER_HASH_KEY"),
            (["HERALD_LOG_USER_HASH_KEY_FILE": try file("short-secret")], "HERALD_LOG_USER_HASH_KEY_FILE"),
            (["HERALD_LOG_USER_HASH_KEY_FILE": "/nonexistent/key"], "HERALD_LOG_USER_HASH_KEY_FILE"),
        ] {
            do {
                _ = try HeraldConfiguration.load(path: nil, environment: environment)
                Issue.record("accepted \(environment)")
            } catch {
                #expect("\(error)".contains(named), "\(error)")
                #expect(!"\(error)".contains("short-secret"), "\(error)")
            }
        }
    }

    @Test(
        "store.max_devices_per_user: 1000 by default, from 1 to 1000000, and never below worker.max_devices_per_recipient"
    )
    func directoryDeviceLimit() throws {
        #expect(try HeraldConfiguration.load(path: nil, environment: [:]).maximumDevicesPerUser == 1000)
        let raised = try HeraldConfiguration.load(
            path: try file("store:\n  max_devices_per_user: 5000\nworker:\n  max_devices_per_recipient: 5000\n"),
            environment: [:]
        )
        #expect(raised.maximumDevicesPerUser == 5000)
        for (environment, message) in [
            (["HERALD_STORE_MAX_DEVICES_PER_USER": "0"], "must be from 1 to 1000000"),
            (["HERALD_STORE_MAX_DEVICES_PER_USER": "50"], "is below worker.max_devices_per_recipient (100)"),
            (
                ["HERALD_WORKER_MAX_DEVICES_PER_RECIPIENT": "2000"],
                "1000 is below worker.max_devices_per_recipient (2000)"
            ),
        ] {
            do {
                _ = try HeraldConfiguration.load(path: nil, environment: environment)
                Issue.record("accepted \(environment)")
            } catch {
                #expect("\(error)".contains("store.max_devices_per_user") || "\(error)".contains("HERALD_STORE_MAX"))
                #expect("\(error)".contains(message), "\(error)")
            }
        }
    }

    @Test(
        "analytics records hash recipients with the log key unless analytics.recipient says clear, for the worker and the sender alike"
    )
    func analyticsRecipients() throws {
        let key = "0123456789abcdef-log-key"
        let names = { (configuration: HeraldConfiguration) in
            [configuration.worker.topics.analyticsRecipients, configuration.analyticsRecipients].map {
                $0.name("u-1024")
            }
        }
        // HMAC-SHA256("0123456789abcdef-log-key", "u-1024"), as RedactTests checks it.
        let keyed = try HeraldConfiguration.load(path: nil, environment: ["HERALD_LOG_USER_HASH_KEY": key])
        #expect(names(keyed) == ["u:6E4E8E425918", "u:6E4E8E425918"])
        let unkeyed = try HeraldConfiguration.load(path: nil, environment: [:])
        #expect(names(unkeyed) == Array(repeating: UserHash(key: nil)("u-1024"), count: 2))
        #expect(names(unkeyed)[0] != "u-1024")
        let clear = try HeraldConfiguration.load(
            path: try file("analytics:\n  recipient: clear\n"),
            environment: ["HERALD_LOG_USER_HASH_KEY": key]
        )
        #expect(names(clear) == ["u-1024", "u-1024"])
        do {
            _ = try HeraldConfiguration.load(path: nil, environment: ["HERALD_ANALYTICS_RECIPIENT": "plain"])
            Issue.record("accepted analytics.recipient: plain")
        } catch {
            #expect("\(error)".contains("HERALD_ANALYTICS_RECIPIENT"), "\(error)")
        }
        let deliveries = try HeraldConfiguration.load(
            path: try file("sender:\n  deliveries_topic: herald.deliveries\n"),
            environment: [:]
        )
        #expect(deliveries.sender.deliveriesTopic == "herald.deliveries")
        #expect(unkeyed.sender.deliveriesTopic == nil)
    }
}

@Suite("User ids in logs", .serialized)
struct RedactTests {
    @Test(
        "hashed with the configured key (HMAC-SHA256), or without one: u: and 12 hex digits, the same for the same id"
    )
    func keyedHash() {
        defer { Redact.setKey(nil) }
        let unkeyed = Redact.user("u-1024")
        Redact.setKey(Array("0123456789abcdef-log-key".utf8))
        let keyed = Redact.user("u-1024")
        Redact.setKey(Array("another-key-of-16-bytes".utf8))
        let otherKey = Redact.user("u-1024")
        for hash in [unkeyed, keyed, otherKey] {
            #expect(hash.hasPrefix("u:") && hash.count == 14, "\(hash)")
            // Upper case, as the unkeyed hash (a notification id's digits) has always been.
            #expect(hash.dropFirst(2).allSatisfy { $0.isHexDigit && !$0.isLowercase }, "\(hash)")
        }
        #expect(Set([unkeyed, keyed, otherKey]).count == 3)
        #expect(Redact.user("u-1024") == otherKey && Redact.user("u-1025") != otherKey)
        // HMAC-SHA256("0123456789abcdef-log-key", "u-1024"), its first 6 bytes (Python's hmac module).
        Redact.setKey(Array("0123456789abcdef-log-key".utf8))
        #expect(Redact.user("u-1024") == "u:6E4E8E425918")
    }
}
