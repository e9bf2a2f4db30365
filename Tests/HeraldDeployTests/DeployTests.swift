import Foundation
import HeraldApp
import HeraldKafka
import HeraldPolicy
import HeraldSender
import HeraldStore
import HeraldTestSupport
import HeraldWorker
import Testing
import Yams

/// The repository's root, found from this file.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path
let deploy = "\(repositoryRoot)/Deploy"

/// Every file under `directory` whose name ends in one of `suffixes`.
func files(under directory: String, endingIn suffixes: [String]) -> [String] {
    let enumerator = FileManager.default.enumerator(atPath: directory)
    var found: [String] = []
    while let path = enumerator?.nextObject() as? String {
        if suffixes.contains(where: { path.hasSuffix($0) }) { found.append("\(directory)/\(path)") }
    }
    return found.sorted()
}

/// The YAML documents of a file.
func documents(_ path: String) throws -> [Any] {
    let text = try String(contentsOfFile: path, encoding: .utf8)
    return try Yams.load_all(yaml: text).compactMap { $0 }
}

/// Runs a tool if it is installed; nil if not.
func tool(
    _ name: String,
    _ arguments: [String],
    in directory: String = repositoryRoot,
    input: String? = nil
) throws -> (
    status: Int32, output: String
)? {
    let candidates = ["/usr/bin/\(name)", "/usr/local/bin/\(name)"]
    guard let path = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    let output = Pipe()
    let stdin = Pipe()
    process.standardOutput = output
    process.standardError = output
    process.standardInput = input == nil ? FileHandle.nullDevice : stdin
    try process.run()
    if let input { stdin.writeInBackground(input) }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

@Suite("Deploy/")
struct DeployTests {
    @Test("every YAML and JSON file parses, and every Kubernetes manifest names its kind and itself")
    func everythingParses() throws {
        let yamlFiles = files(under: deploy, endingIn: [".yaml", ".yml"])
        #expect(yamlFiles.count >= 12, "\(yamlFiles)")
        for file in yamlFiles {
            let parsed = try documents(file)
            #expect(!parsed.isEmpty, "\(file) holds no document")
            guard file.contains("/k8s/") && !file.hasSuffix("kustomization.yaml") && !file.hasSuffix("/herald.yaml")
            else { continue }
            for case let manifest as [String: Any] in parsed {
                let metadata = manifest["metadata"] as? [String: Any]
                #expect(manifest["apiVersion"] is String, "\(file): a manifest without apiVersion")
                #expect(manifest["kind"] is String, "\(file): a manifest without kind")
                #expect(metadata?["name"] is String, "\(file): a manifest without metadata.name")
            }
        }
        for file in files(under: deploy, endingIn: [".json"]) {
            let data = try Data(contentsOf: URL(fileURLWithPath: file))
            #expect(throws: Never.self, "\(file) is not JSON") { try JSONSerialization.jsonObject(with: data) }
        }
    }

    @Test("the catalog ConfigMap and both Deployments carry every kind and message file of catalog/")
    func catalogIsComplete() throws {
        let catalogFiles =
            (files(under: "\(repositoryRoot)/catalog/kinds", endingIn: [".yaml"])
            + files(under: "\(repositoryRoot)/catalog/messages", endingIn: [".json"]))
            .map { $0.replacingOccurrences(of: "\(repositoryRoot)/catalog/", with: "") } + ["catalog.yaml"]
        #expect(catalogFiles.count > 5)
        let kustomization = try String(contentsOfFile: "\(deploy)/k8s/base/kustomization.yaml", encoding: .utf8)
        for file in catalogFiles {
            let key = file.replacingOccurrences(of: "/", with: ".")
            #expect(kustomization.contains("- \(key)=../../../catalog/\(file)"), "kustomization.yaml lacks \(file)")
            for deployment in ["worker", "sender"] {
                let manifest = try String(contentsOfFile: "\(deploy)/k8s/base/\(deployment).yaml", encoding: .utf8)
                #expect(
                    manifest.contains("{ key: \(key), path: \(file) }"),
                    "\(deployment).yaml does not mount \(file)"
                )
            }
        }
    }

    /// Topic name → (partitions, configuration) from the Strimzi resources.
    static func strimziTopics() throws -> [String: (partitions: Int, config: [String: String])] {
        var topics: [String: (Int, [String: String])] = [:]
        for case let topic as [String: Any] in try documents("\(deploy)/k8s/base/topics.yaml") {
            guard let name = (topic["metadata"] as? [String: Any])?["name"] as? String,
                let spec = topic["spec"] as? [String: Any], let partitions = spec["partitions"] as? Int
            else { continue }
            let config = (spec["config"] as? [String: Any] ?? [:]).mapValues { "\($0)" }
            topics[name] = (partitions, config.filter { $0.key != "min.insync.replicas" })
        }
        return topics
    }

    @Test("the Kubernetes topic definitions and the compose script agree, and hold every topic Herald uses")
    func topicsAgree() throws {
        let strimzi = try Self.strimziTopics()
        let script = try String(contentsOfFile: "\(deploy)/kafka/create-topics.sh", encoding: .utf8)
        var scripted: [String: (partitions: Int, config: [String: String])] = [:]
        for line in script.split(separator: "\n") where line.hasPrefix("create herald.") {
            let words = line.split(separator: " ").map(String.init)
            let config = Dictionary(
                uniqueKeysWithValues: words.dropFirst(3).map { word in
                    let parts = word.split(separator: "=", maxSplits: 1).map(String.init)
                    return (parts[0], parts.count > 1 ? parts[1] : "")
                }
            )
            scripted[words[1]] = (Int(words[2]) ?? 0, config)
        }
        #expect(Set(strimzi.keys) == Set(scripted.keys))
        for (name, topic) in strimzi {
            #expect(scripted[name]?.partitions == topic.partitions, "\(name): partitions differ")
            #expect(scripted[name]?.config == topic.config, "\(name): settings differ")
        }
        let configuration = HeraldConfiguration()
        var used = [
            configuration.worker.topics.directory, configuration.worker.topics.outbound,
            configuration.worker.topics.eventsDeadLetter, configuration.sender.deadLetterTopic, "herald.decisions",
            "herald.deliveries",
        ]
        used += configuration.sender.retryDelays.indices.map { "\(configuration.sender.retryTopicPrefix).\($0 + 1)" }
        for topic in used { #expect(strimzi[topic] != nil, "\(topic) is not defined") }
        #expect(strimzi["herald.directory"]?.config["cleanup.policy"] == "compact")
    }

    /// Every metric family the worker and the sender export, histograms with their series suffixes.
    static func exportedMetrics() -> Set<String> {
        var counters = WorkerStatistics.Counters()
        counters.eventsByType["order.confirmed"] = 1
        let text = HTTPEndpoints.metrics(
            worker: (counters, [:]),
            sender: HTTPEndpoints.SenderState(
                counters: SenderStatistics.Counters(),
                circuits: [.apns: .closed],
                waitingRetries: 0,
                lag: [:]
            ),
            brokers: [("worker", KafkaBrokerConnections(up: 1, known: 1))],
            offsetResets: [("worker", [TopicPartition("orders.events", 0): 0])],
            directoryCache: DirectoryCacheStatistics(hits: 1, misses: 1, users: 1, capacity: 10)
        )
        var names: Set<String> = ["up"]
        for line in text.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let words = line.split(separator: " ")
            let name = String(words[2])
            names.insert(name)
            if words[3] == "histogram" { for suffix in ["_bucket", "_sum", "_count"] { names.insert(name + suffix) } }
        }
        return names
    }

    /// The metric names an expression uses: identifiers starting with `herald_`, and `up`.
    static func metricNames(in expression: String) -> Set<String> {
        var names = Set(expression.matches(of: /herald_[a-z_]+/).map { String($0.output) })
        if expression.contains("up{") { names.insert("up") }
        return names
    }

    @Test("every metric the alert rules and the dashboard query is one Herald exports")
    func metricsExist() throws {
        let exported = Self.exportedMetrics()
        #expect(exported.contains("herald_consumer_lag") && exported.contains("herald_provider_call_seconds_bucket"))
        var expressions: [String] = []
        for case let root as [String: Any] in try documents("\(deploy)/prometheus/alerts.yaml") {
            for case let group as [String: Any] in root["groups"] as? [Any] ?? [] {
                for case let rule as [String: Any] in group["rules"] as? [Any] ?? [] {
                    if let expression = rule["expr"] as? String { expressions.append(expression) }
                }
            }
        }
        #expect(expressions.count >= 8)
        let dashboard = try JSONSerialization.jsonObject(
            with: Data(contentsOf: URL(fileURLWithPath: "\(deploy)/grafana/herald-dashboard.json"))
        )
        let panels = (dashboard as? [String: Any])?["panels"] as? [[String: Any]] ?? []
        #expect(panels.count >= 10)
        for panel in panels {
            for target in panel["targets"] as? [[String: Any]] ?? [] {
                if let expression = target["expr"] as? String { expressions.append(expression) }
            }
        }
        var used: Set<String> = []
        for expression in expressions {
            let names = Self.metricNames(in: expression)
            #expect(!names.isEmpty, "no metric in \(expression)")
            used.formUnion(names)
            for name in names { #expect(exported.contains(name), "\(name) is not exported, used in: \(expression)") }
        }
        // The issue's alerts: dead letters, lag, provider errors, circuit, no events consumed.
        for name in [
            "herald_dead_letters_total", "herald_consumer_lag", "herald_provider_calls_total", "herald_circuit_open",
            "herald_events_consumed_total", "herald_kafka_brokers_up", "herald_kafka_offset_resets_total",
        ] {
            #expect(used.contains(name), "nothing watches \(name)")
        }
    }

    @Test("promtool: the alert rules are valid and their unit tests pass")
    func promtool() throws {
        let check = try #require(
            try tool("promtool", ["check", "rules", "Deploy/prometheus/alerts.yaml"]),
            "promtool is not installed (make deps installs Debian's prometheus)"
        )
        #expect(check.status == 0, "\(check.output)")
        let tests = try #require(
            try tool("promtool", ["test", "rules", "alerts.test.yaml"], in: "\(deploy)/prometheus")
        )
        #expect(tests.status == 0, "\(tests.output)")
        #expect(tests.output.contains("SUCCESS"))
    }

    @Test(
        "/metrics of a process running both roles passes promtool's check: build info once, each family once, both consumers' lag"
    )
    func exposition() throws {
        var worker = WorkerStatistics.Counters()
        worker.eventsByType["order.confirmed"] = 3
        // A producer's type with the characters the format escapes.
        worker.eventsByType["odd\"type\\with\nnewline"] = 1
        worker.decisionsByReason["sent"] = 2
        worker.outboundByProvider["apns"] = 2
        worker.deadLettersByCode["event.not_json"] = 1
        worker.latencies.observe(0.2)
        var sender = SenderStatistics.Counters()
        sender.callsByOutcome["apns delivered"] = 2
        sender.answersByReason["apns.Unregistered"] = 1
        sender.retriesByStep["1"] = 1
        sender.latencies["apns"] = worker.latencies
        let text = HTTPEndpoints.metrics(
            worker: (worker, [TopicPartition("orders.events", 0): 5]),
            sender: HTTPEndpoints.SenderState(
                counters: sender,
                circuits: [.apns: .closed, .fcm: .open, .expo: .closed],
                waitingRetries: 1,
                lag: [TopicPartition("herald.outbound", 3): 7]
            ),
            brokers: [
                ("worker", KafkaBrokerConnections(up: 3, known: 3)),
                ("sender", KafkaBrokerConnections(up: 0, known: 3)),
            ],
            offsetResets: [
                ("worker", [TopicPartition("orders.events", 1): 0, TopicPartition("orders.events", 0): 2]),
                ("sender", [TopicPartition("herald.outbound", 3): 0]),
            ],
            directoryCache: DirectoryCacheStatistics(hits: 900, misses: 100, users: 100, capacity: 200_000)
        )
        let check = try #require(
            try tool("promtool", ["check", "metrics"], input: text),
            "promtool is not installed (make deps installs Debian's prometheus)"
        )
        #expect(check.status == 0, "\(check.output)\n\(text)")
        let types = text.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.map { $0.split(separator: " ")[2] }
        #expect(Set(types).count == types.count, "a family is declared twice: \(types)")
        let info = text.split(separator: "\n").filter { $0.hasPrefix("herald_build_info{") }
        #expect(info.count == 1)
        #expect(info.first?.hasSuffix(" 1") == true)
        for (name, version) in BuildInfo.components {
            #expect(info.first?.contains("\(name)=\"\(version)\"") == true, "\(name) in \(info)")
        }
        #expect(text.contains(#"herald_consumer_lag{topic="orders.events",partition="0"} 5"#))
        #expect(text.contains(#"herald_directory_cache_lookups_total{result="hit"} 900"#))
        #expect(text.contains("herald_directory_cache_capacity 200000\n"))
        #expect(text.contains(#"herald_consumer_lag{topic="herald.outbound",partition="3"} 7"#))
        #expect(
            text.contains(
                "herald_kafka_brokers_up{consumer=\"worker\"} 3\nherald_kafka_brokers_up{consumer=\"sender\"} 0\n"
            )
        )
        // One family for both consumers, each partition once, in order.
        #expect(
            text.contains(
                #"herald_kafka_offset_resets_total{consumer="worker",topic="orders.events",partition="0"} 2"# + "\n"
                    + #"herald_kafka_offset_resets_total{consumer="worker",topic="orders.events",partition="1"} 0"#
                    + "\n"
                    + #"herald_kafka_offset_resets_total{consumer="sender",topic="herald.outbound",partition="3"} 0"#
            )
        )
        // The sender alone reports its own lag too.
        let alone = HTTPEndpoints.metrics(
            worker: nil,
            sender: HTTPEndpoints.SenderState(
                counters: sender,
                circuits: [:],
                waitingRetries: 0,
                lag: [TopicPartition("herald.outbound", 3): 7]
            )
        )
        #expect(alone.contains(#"herald_consumer_lag{topic="herald.outbound",partition="3"} 7"#))
        #expect(alone.components(separatedBy: "# TYPE herald_consumer_lag").count == 2)
        let aloneCheck = try #require(try tool("promtool", ["check", "metrics"], input: alone))
        #expect(aloneCheck.status == 0, "\(aloneCheck.output)")
    }

    @Test(
        "every HERALD_ variable the compose file and the manifests set is a setting's: a misspelled one would be ignored"
    )
    func variables() throws {
        var named: [String: String] = [:]
        for file in try FileManager.default.subpathsOfDirectory(atPath: deploy)
        where file.hasSuffix(".yaml") || file.hasSuffix(".yml") || file.hasSuffix(".sh") || file.hasSuffix("Dockerfile")
        {
            let text = try String(contentsOfFile: "\(deploy)/\(file)", encoding: .utf8)
            for match in text.matches(of: /HERALD_[A-Z0-9_]+/) { named[String(match.output)] = file }
        }
        #expect(named.count >= 5, "\(named)")
        for (variable, file) in named.sorted(by: { $0.key < $1.key }) {
            #expect(HeraldConfiguration.variableNames.contains(variable), "\(file): \(variable) is no setting's")
        }
    }

    @Test("docker-compose validates the compose file")
    func compose() throws {
        let result = try #require(
            try tool("docker-compose", ["-f", "Deploy/compose/compose.yaml", "config", "-q"]),
            "docker-compose is not installed (make deps installs it)"
        )
        #expect(result.status == 0, "\(result.output)")
    }

    @Test(
        "kustomize renders the production overlay: namespaced, pinned image, probes and graceful termination",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/kubectl"), "kubectl is not installed")
    )
    func kustomize() throws {
        let result = try #require(
            try tool(
                "kubectl",
                ["kustomize", "--load-restrictor", "LoadRestrictionsNone", "Deploy/k8s/overlays/production"]
            )
        )
        #expect(result.status == 0, "\(result.output)")
        let manifests = try Yams.load_all(yaml: result.output).compactMap { $0 as? [String: Any] }
        let kinds = manifests.compactMap { $0["kind"] as? String }
        for kind in ["Deployment", "ConfigMap", "Secret", "ScaledObject", "PodDisruptionBudget", "KafkaTopic"] {
            #expect(kinds.contains(kind), "no \(kind) rendered")
        }
        for manifest in manifests where manifest["kind"] as? String != "Namespace" {
            let metadata = manifest["metadata"] as? [String: Any]
            #expect(metadata?["namespace"] as? String == "herald", "\(metadata?["name"] ?? "?") is not namespaced")
        }
        for case let deployment in manifests where deployment["kind"] as? String == "Deployment" {
            let template = (deployment["spec"] as? [String: Any])?["template"] as? [String: Any]
            let pod = template?["spec"] as? [String: Any]
            let container = (pod?["containers"] as? [[String: Any]])?.first
            #expect((container?["image"] as? String)?.hasSuffix(":0.1.0") == true)
            #expect(container?["livenessProbe"] != nil && container?["readinessProbe"] != nil)
            #expect((pod?["terminationGracePeriodSeconds"] as? Int ?? 0) > 25, "longer than the shutdown deadline")
        }
        try Self.expectFilesMounted(manifests)
    }

    /// Each Deployment mounts every file and directory its role reads from the rendered
    /// configuration: a worker pod that cannot read its Kafka password, or a sender its APNs key,
    /// fails at start-up.
    static func expectFilesMounted(_ manifests: [[String: Any]]) throws {
        let configMap = manifests.first {
            $0["kind"] as? String == "ConfigMap"
                && ((($0["metadata"] as? [String: Any])?["name"] as? String)?.hasPrefix("herald-config") ?? false)
        }
        let text = try #require((configMap?["data"] as? [String: String])?["herald.yaml"])
        let configuration = try #require(try Yams.load(yaml: text) as? [String: [String: Any]])
        func value(_ section: String, _ path: [String]) -> String? {
            var node: Any? = configuration[section]
            for name in path { node = (node as? [String: Any])?[name] }
            return node as? String
        }
        let shared = [
            value("kafka", ["sasl_password_file"]), value("kafka", ["ssl_ca_file"]),
            value("kafka", ["ssl_certificate_file"]), value("kafka", ["ssl_key_file"]),
            value("kafka", ["ssl_key_password_file"]), value("catalog", ["directory"]),
        ]
        let sender = [
            value("providers", ["apns", "key_file"]), value("providers", ["fcm", "service_account_file"]),
            value("providers", ["expo", "access_token_file"]), value("providers", ["trust_roots_file"]),
        ]
        #expect(value("kafka", ["sasl_password_file"]) != nil, "the production overlay authenticates to Kafka")
        for deployment in manifests where deployment["kind"] as? String == "Deployment" {
            let template = (deployment["spec"] as? [String: Any])?["template"] as? [String: Any]
            let container = ((template?["spec"] as? [String: Any])?["containers"] as? [[String: Any]])?.first
            let arguments = container?["args"] as? [String] ?? []
            let role = arguments.firstIndex(of: "--role").map { arguments[$0 + 1] }
            let mounts = (container?["volumeMounts"] as? [[String: Any]] ?? []).compactMap {
                $0["mountPath"] as? String
            }
            let read = (shared + (role == "sender" ? sender : [])).compactMap { $0 }
            for path in read {
                #expect(
                    mounts.contains { path == $0 || path.hasPrefix($0 + "/") },
                    "the \(role ?? "?") reads \(path), on no volume it mounts (\(mounts))"
                )
            }
        }
    }

    @Test("the base configuration starts a worker, which mounts no provider credential")
    func workerNeedsNoProviderCredentials() throws {
        let configuration = try HeraldConfiguration.load(
            paths: ["\(deploy)/k8s/base/herald.yaml"],
            environment: [:],
            roles: [.worker]
        )
        #expect(configuration.providers.apns.key == nil)
    }

    @Test("the Kubernetes configuration files are valid Herald configuration: every key known, every value typed")
    func configurationLoads() throws {
        for file in ["k8s/base/herald.yaml", "k8s/overlays/production/herald.yaml"] {
            do {
                let configuration = try HeraldConfiguration.load(paths: ["\(deploy)/\(file)"], environment: [:])
                #expect(configuration.worker.topics.decisions == "herald.decisions", "\(file)")
                #expect(configuration.sender.deliveriesTopic == "herald.deliveries", "\(file)")
            } catch {
                // The provider keys and the Kafka credentials are mounted Secrets, absent here;
                // anything else (an unknown key, a wrong type) is a defect in the file.
                #expect(error.description.contains("/var/run/secrets/herald"), "\(file): \(error)")
            }
        }
    }
}
